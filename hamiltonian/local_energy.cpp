#include "hamiltonian/local_energy.hpp"

#include <algorithm>

#include "batching/peak_memory.hpp"
#include "core/errors.hpp"
#include "core/log.hpp"
#include "hamiltonian/potential.hpp"

namespace nnvmc {

namespace {
/// Walkers of the second calibration point (the first is one walker).
constexpr std::int64_t kCalibrationWalkers = 8;
}  // namespace

LocalEnergy::LocalEnergy(const System& system, std::unique_ptr<LaplacianMethod> method,
                         torch::TensorOptions options, ChunkPolicy policy)
    : method_(std::move(method)), e_nn_(system.nuclear_repulsion()), policy_(std::move(policy)),
      chunk_(policy_.walkers) {
  auto nt = nuclei_tensors(system, options);
  nuclei_ = nt.positions;
  charges_ = nt.charges;
}

LocalEnergyTerms LocalEnergy::evaluate(WaveFunction& wf, const torch::Tensor& r, std::int64_t chunk) {
  const int64_t b = r.size(0);
  chunk = chunk > 0 ? std::min(chunk, b) : b;
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

void LocalEnergy::calibrate(WaveFunction& wf, const torch::Tensor& r) {
  const std::int64_t b = r.size(0), k = std::min(b, kCalibrationWalkers);
  const auto rng = method_->rng_state();
  const auto peak_of = [&](std::int64_t walkers) {
    batching::PeakMemoryScope scope;
    evaluate(wf, r.slice(0, 0, walkers), walkers);
    return scope.peak_bytes();
  };
  const std::int64_t p1 = peak_of(1), pk = k > 1 ? peak_of(k) : p1;
  if (rng.defined()) method_->set_rng_state(rng);
  auto& c = calibration_;
  c.bytes_per_walker = k > 1 ? std::max<std::int64_t>((pk - p1) / (k - 1), 1) : std::max<std::int64_t>(p1, 1);
  c.fixed_bytes = std::max<std::int64_t>(p1 - c.bytes_per_walker, 0);
  const auto usable = policy_.budget.scaled(policy_.margin);
  if (std::max(p1, c.fixed_bytes + c.bytes_per_walker) > usable.bytes())
    throw BudgetError(policy_.budget_key + " = " + batching::format_bytes(double(policy_.budget.bytes())) +
                      " is too small for one walker: a local-energy evaluation of one walker needs " +
                      batching::format_bytes(double(p1)) + " of working memory (" +
                      batching::format_bytes(double(p1) / policy_.margin) +
                      " with the safety margin); raise the budget");
  c.chunk = usable.max_batch(c.bytes_per_walker, c.fixed_bytes);  // may exceed b; evaluate caps it
  chunk_ = c.chunk;
  log::info(strfmt("local energy: %s per walker + %s fixed (measured) -> up to %lld walkers per chunk for %s = %s",
                   batching::format_bytes(double(c.bytes_per_walker)).c_str(),
                   batching::format_bytes(double(c.fixed_bytes)).c_str(), static_cast<long long>(c.chunk),
                   policy_.budget_key.c_str(), batching::format_bytes(double(policy_.budget.bytes())).c_str()));
}

LocalEnergyTerms LocalEnergy::operator()(WaveFunction& wf, const torch::Tensor& r) {
  if (chunk_ == 0 && policy_.walkers == 0 && !policy_.budget.is_unlimited()) {
    if (r.device().is_cpu()) {
      calibrate(wf, r);
    } else if (!warned_device_) {
      // The peak is measured with the CPU allocator; CUDA runs need hamiltonian.chunk_walkers.
      log::warn("walker chunks are sized from the memory budget on the CPU only; on " + r.device().str() +
                " all walkers are evaluated at once unless hamiltonian.chunk_walkers is set");
      warned_device_ = true;
    }
  }
  return evaluate(wf, r, chunk_);
}

}  // namespace nnvmc
