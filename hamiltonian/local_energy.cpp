#include "hamiltonian/local_energy.hpp"

#include "hamiltonian/potential.hpp"

namespace nnvmc {

LocalEnergy::LocalEnergy(const System& system, std::unique_ptr<LaplacianMethod> method,
                         torch::TensorOptions options, int64_t chunk)
    : method_(std::move(method)), e_nn_(system.nuclear_repulsion()), chunk_(chunk) {
  auto nt = nuclei_tensors(system, options);
  nuclei_ = nt.positions;
  charges_ = nt.charges;
}

LocalEnergyTerms LocalEnergy::operator()(WaveFunction& wf, const torch::Tensor& r) {
  const int64_t b = r.size(0), chunk = chunk_ > 0 ? std::min(chunk_, b) : b;
  std::vector<torch::Tensor> kin, pot;
  for (int64_t lo = 0; lo < b; lo += chunk) {
    const auto rc = r.slice(0, lo, std::min(b, lo + chunk));
    const auto t = method_->compute(wf, rc);
    kin.push_back(-0.5 * (t.laplacian + t.grad_sq));
    torch::NoGradGuard no_grad;
    pot.push_back(potential_energy(rc, nuclei_, charges_, e_nn_));
  }
  LocalEnergyTerms out{torch::Tensor(), torch::cat(kin), torch::cat(pot)};
  out.energy = out.kinetic + out.potential;
  return out;
}

}  // namespace nnvmc
