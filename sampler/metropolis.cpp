#include "sampler/metropolis.hpp"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cmath>

#include "core/errors.hpp"
#include "core/log.hpp"
#include "parallel/tensor_comm.hpp"

namespace nnvmc {

MetropolisSampler::MetropolisSampler(const SamplerOptions& options, const System& system,
                                     torch::TensorOptions tensor, std::uint64_t seed)
    : options_(options),
      system_(system),
      tensor_(tensor),
      gen_(at::make_generator<at::CPUGeneratorImpl>(seed)),
      step_size_(options.step_size),
      comm_(&parallel::world()) {
  if (options.walkers < comm_->size())
    throw ConfigError(strfmt("'sampler.walkers': %d walkers cannot be shared by %d ranks (at least one each)",
                             options.walkers, comm_->size()));
  part_ = parallel::partition(options.walkers, comm_->rank(), comm_->size());
}

std::vector<int> MetropolisSampler::initial_assignment(const System& system) {
  // Electrons per atom: neutral counts, then remove (cation) / add (anion) round-robin.
  const int m = static_cast<int>(system.atoms.size());
  std::vector<int> count(m);
  for (int i = 0; i < m; ++i) count[i] = system.atoms[i].Z;
  for (int c = system.charge, i = 0; c != 0; i = (i + 1) % m) {
    const int a = c > 0 ? m - 1 - i : i;  // remove from the last atoms, add to the first
    if (c > 0 && count[a] == 0) continue;
    count[a] += c > 0 ? -1 : 1;
    c += c > 0 ? -1 : 1;
  }
  // Alternate spins within each atom, preferring the spin with more electrons left.
  std::vector<int> up, down;
  int up_left = system.n_up(), down_left = system.n_down();
  for (int a = 0; a < m; ++a)
    for (int e = 0; e < count[a]; ++e) {
      const bool take_up = up_left > 0 && (up_left >= down_left || down_left == 0);
      (take_up ? up : down).push_back(a);
      (take_up ? up_left : down_left) -= 1;
    }
  up.insert(up.end(), down.begin(), down.end());
  return up;
}

void MetropolisSampler::initialize(const LogAbsFn& logabs) {
  const auto assign = initial_assignment(system_);
  const int64_t n = static_cast<int64_t>(assign.size()), b = options_.walkers;
  auto centres = torch::empty({n, 3}, torch::kFloat64);
  for (int64_t i = 0; i < n; ++i)
    for (int k = 0; k < 3; ++k) centres[i][k] = system_.atoms[assign[i]].position[k];
  auto noise = at::normal(0.0, 1.0, {b, n, 3}, gen_, torch::TensorOptions().dtype(torch::kFloat64));
  r_ = (centres.unsqueeze(0) + mine(noise)).to(tensor_);
  refresh(logabs);
}

void MetropolisSampler::initialize_from(const torch::Tensor& r, const LogAbsFn& logabs) {
  if (r.dim() != 3 || r.size(1) != system_.n_electrons())
    throw InputError("initial positions do not match the molecule's electron count");
  const int64_t b = options_.walkers, have = r.size(0);
  const int64_t reps = (b + have - 1) / have;
  r_ = mine(r.repeat({reps, 1, 1}).slice(0, 0, b)).to(tensor_).contiguous();
  refresh(logabs);
}

void MetropolisSampler::refresh(const LogAbsFn& logabs) {
  torch::NoGradGuard no_grad;
  logabs_ = logabs(r_);
}

double MetropolisSampler::run(const LogAbsFn& logabs, int n) {
  torch::NoGradGuard no_grad;
  if (!r_.defined()) throw Error("sampler used before initialize()");
  const auto cpu64 = torch::TensorOptions().dtype(torch::kFloat64);
  // Accepted moves are counted on the device and read once per call (no host sync per step).
  auto accepted = torch::zeros({}, r_.options().dtype(torch::kFloat64));
  const std::int64_t total = options_.walkers;
  for (int s = 0; s < n; ++s) {
    // Draw on the CPU in float64 so chains do not depend on dtype/device of the model. Every
    // rank draws the random numbers of ALL walkers from the same generator and keeps its own
    // rows, so walker i sees the same numbers whatever the number of ranks.
    const auto noise = mine(at::normal(0.0, 1.0, {total, r_.size(1), 3}, gen_, cpu64)).to(tensor_);
    const auto u = mine(at::empty({total}, cpu64).uniform_(0.0, 1.0, gen_)).to(tensor_);
    const auto proposal = r_ + step_size_ * noise;
    const auto new_logabs = logabs(proposal);
    // Accept with probability min(1, |ψ'|²/|ψ|²). A proposal with a non-finite log|ψ| (a node,
    // where an orbital matrix is singular, or NaN) is rejected; a walker whose own log|ψ| is
    // not finite takes any finite proposal (so no walker is stuck on a node).
    const auto accept = torch::isfinite(new_logabs) &
                        ((torch::log(u) < 2.0 * (new_logabs - logabs_)) | ~torch::isfinite(logabs_));
    r_ = torch::where(accept.view({-1, 1, 1}), proposal, r_);
    logabs_ = torch::where(accept, new_logabs, logabs_);
    accepted += accept.to(torch::kFloat64).sum();
  }
  if (n <= 0) return 0.0;
  double count = accepted.item<double>();  // an integer: the sum over ranks is exact
  comm_->allreduce_sum(&count, 1);
  return count / (static_cast<double>(total) * n);
}

void MetropolisSampler::adapt(double acceptance) {
  // Multiplicative update toward the target, bounded per call (deterministic).
  const double factor = std::exp(std::clamp(acceptance - options_.target_acceptance, -0.3, 0.3));
  step_size_ = std::clamp(step_size_ * factor, 1e-4, 5.0);
}

SamplerState MetropolisSampler::state() const {
  return {r_, logabs_, step_size_, gen_.get_state()};
}

SamplerState MetropolisSampler::global_state() const {
  return {parallel::allgather_rows(*comm_, r_), parallel::allgather_rows(*comm_, logabs_), step_size_,
          gen_.get_state()};
}

torch::Tensor MetropolisSampler::mine(const torch::Tensor& all) const {
  return comm_->size() == 1 ? all : all.slice(0, part_.offset, part_.offset + part_.count);
}

void MetropolisSampler::set_state(const SamplerState& state) {
  const bool global = state.r.dim() == 3 && state.r.size(0) == options_.walkers;
  const bool local = state.r.dim() == 3 && state.r.size(0) == part_.count;
  if (!(global || local) || state.r.size(1) != system_.n_electrons())
    throw CheckpointError("sampler state has positions of shape " +
                          std::to_string(state.r.dim() == 3 ? state.r.size(0) : -1) +
                          " walkers; the config asks for " + std::to_string(options_.walkers));
  r_ = (global ? mine(state.r) : state.r).to(tensor_);
  logabs_ = (global ? mine(state.logabs) : state.logabs).to(tensor_);
  step_size_ = state.step_size;
  gen_.set_state(state.rng_state);
}

}  // namespace nnvmc
