#include "models/wavefunction.hpp"

#include "core/errors.hpp"

namespace nnvmc {

torch::Tensor WaveFunction::orbitals(const torch::Tensor&, const SystemTensors&) {
  throw Error("ansatz '" + type() + "' does not provide orbitals for pretraining");
}

torch::Tensor WaveFunction::determinant_log_weights(const torch::Tensor&, const SystemTensors&) { return {}; }

SignedFwdLap WaveFunction::forward_laplacian(const FwdLap&, const SystemTensors&) {
  throw ConfigError("'hamiltonian.laplacian': method 'forward' does not support ansatz '" + type() +
                    "'; use jvp or reverse");
}

void WaveFunction::set_built_for(const System& system) {
  built_z_.clear();
  for (const auto& a : system.atoms) built_z_.push_back(a.Z);
  built_up_ = system.n_up();
  built_down_ = system.n_down();
}

void WaveFunction::check_system(const SystemTensors& sys) const {
  if (transferable() || built_up_ < 0) return;
  auto list = [](const std::vector<int>& z) {
    std::string s;
    for (int v : z) s += (s.empty() ? "" : ",") + std::to_string(v);
    return "[" + s + "]";
  };
  if (sys.atomic_numbers != built_z_ || sys.n_up != built_up_ || sys.n_down != built_down_)
    throw InputError("ansatz '" + type() + "' was built for nuclear charges " + list(built_z_) + " with " +
                     std::to_string(built_up_) + " up / " + std::to_string(built_down_) +
                     " down electrons; it cannot evaluate a molecule with " + list(sys.atomic_numbers) + ", " +
                     std::to_string(sys.n_up) + " up / " + std::to_string(sys.n_down) +
                     " down (only its geometry may change)");
}

void WaveFunction::load_frozen_state(const std::map<std::string, torch::Tensor>& state) {
  torch::NoGradGuard ng;
  auto buffers = named_buffers(true);
  for (const auto& [name, mine] : frozen_state()) {
    const auto it = state.find(name);
    if (it == state.end()) throw CheckpointError("checkpoint lacks the frozen tensor '" + name + "' of the " + type() + " model");
    if (it->second.sizes() != mine.sizes())
      throw CheckpointError("frozen tensor '" + name + "' has shape " + c10::str(it->second.sizes()) +
                            " in the checkpoint, the model wants " + c10::str(mine.sizes()));
    torch::Tensor* dst = buffers.find(name);
    if (dst == nullptr) throw Error("frozen_state names '" + name + "', which is no buffer of the " + type() + " model");
    dst->copy_(it->second);
  }
}

}  // namespace nnvmc
