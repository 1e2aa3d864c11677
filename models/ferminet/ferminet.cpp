#include "models/ferminet/ferminet.hpp"

#include "core/errors.hpp"
#include "models/ferminet/ferminet_body.hpp"

namespace nnvmc {

FermiNetLayerImpl::FermiNetLayerImpl(int in1, int in2, int out1, int out2, int n_spins,
                                     bool has_two)
    : residual1(in1 == out1), residual2(has_two && in2 == out2) {
  one = register_module("one", torch::nn::Linear(in1 + n_spins * in2, out1));
  mean = register_module("mean", torch::nn::Linear(torch::nn::LinearOptions(n_spins * in1, out1).bias(false)));
  if (has_two) two = register_module("two", torch::nn::Linear(in2, out2));
}

std::pair<torch::Tensor, torch::Tensor> FermiNetLayerImpl::forward(
    const torch::Tensor& h1, const torch::Tensor& h2,
    const std::vector<std::array<int64_t, 2>>& spins) {
  return apply<torch::Tensor>(h1, h2, spins);
}

FermiNet::FermiNet(const FermiNetOptions& options, const System& system)
    : options_(options.sized_for(system.n_electrons())),
      n_up_(system.n_up()),
      n_down_(system.n_down()),
      n_atoms_(static_cast<int64_t>(system.atoms.size())) {
  if (options.envelope != "isotropic")
    throw ConfigError("'model.ferminet.envelope': unknown envelope '" + options.envelope + "'");
  if (n_up_ > 0) spins_.push_back({0, n_up_});
  if (n_down_ > 0) spins_.push_back({n_up_, n_up_ + n_down_});
  const int n_spins = static_cast<int>(spins_.size());
  const auto opts = torch::TensorOptions().dtype(torch::kFloat64);
  set_built_for(system);

  int in1 = 4 * static_cast<int>(n_atoms_), in2 = 4;
  const auto& dims = *options_.hidden_dims;
  for (size_t l = 0; l < dims.size(); ++l) {
    const bool last = l + 1 == dims.size();
    layers_.push_back(register_module("layer" + std::to_string(l),
                                      FermiNetLayer(in1, in2, dims[l][0], dims[l][1], n_spins, !last)));
    in1 = dims[l][0];
    in2 = dims[l][1];
  }
  const int64_t n = n_up_ + n_down_, k = *options_.determinants;
  for (int s = 0; s < n_spins; ++s) {
    const std::string tag = std::to_string(s);
    projections_.push_back(register_module("orbital" + tag, torch::nn::Linear(in1, k * n)));
    env_pi_.push_back(register_parameter("envelope_pi" + tag, torch::ones({k * n, n_atoms_}, opts)));
    env_sigma_.push_back(
        register_parameter("envelope_sigma" + tag, torch::ones({k * n, n_atoms_}, opts)));
  }
  this->to(torch::kFloat64);
}

torch::Tensor FermiNet::orbitals(const torch::Tensor& r, const SystemTensors& sys) {
  const int64_t n = r.size(1);
  if (n != n_up_ + n_down_ || sys.n_atoms() != n_atoms_)
    throw InputError("FermiNet built for " + std::to_string(n_up_ + n_down_) + " electrons and " +
                     std::to_string(n_atoms_) + " nuclei got " + std::to_string(n) + " electrons and " +
                     std::to_string(sys.n_atoms()) + " nuclei");
  return orbitals_electron_major<torch::Tensor>(r, sys).permute({0, 2, 1, 3});  // [B, K, N, N]
}

LogPsi FermiNet::forward(const torch::Tensor& r, const SystemTensors& sys) {
  const auto [sign, logabs] = lu_slogdet(orbitals(r, sys));  // [B, K]
  return signed_logsumexp(sign, logabs);
}

SignedFwdLap FermiNet::forward_laplacian(const FwdLap& r, const SystemTensors& sys) {
  return log_psi<FwdLap>(r, sys);
}

}  // namespace nnvmc
