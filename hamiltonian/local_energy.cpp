#include "hamiltonian/local_energy.hpp"

#include <algorithm>
#include <optional>
#include <string>

#include "batching/chunk_fit.hpp"
#include "core/errors.hpp"
#include "core/log.hpp"
#include "hamiltonian/potential.hpp"
#include "parallel/walker_threads.hpp"

namespace nnvmc {

namespace {
/// Walkers of the second calibration point (the first is one walker).
constexpr std::int64_t kCalibrationWalkers = 8;
}  // namespace

LocalEnergy::LocalEnergy(const System& system, std::unique_ptr<LaplacianMethod> method,
                         torch::TensorOptions options, ChunkPolicy policy)
    : method_(std::move(method)), sys_(system_tensors(system, options)), e_nn_(system.nuclear_repulsion()),
      policy_(std::move(policy)), chunk_(policy_.walkers) {
  // (a fixed chunk had no line at all: nothing said the setting took effect, a user audit)
  if (policy_.walkers > 0)
    log::info_unless_repeated("local energy chunk", strfmt("local energy: %lld walkers per chunk (hamiltonian.chunk_walkers)",
                                static_cast<long long>(policy_.walkers)));
}

LocalEnergyTerms LocalEnergy::evaluate(WaveFunction& wf, const torch::Tensor& r, std::int64_t chunk, bool timed) {
  const int64_t b = r.size(0);
  // Parts run at once: together they stay within the memory the chunk was fitted to.
  const auto split = parallel::split_chunk(parallel::walker_parts(b, r.device().is_cpu(), method_->thread_safe()),
                                           chunk, calibration_.fixed_bytes, calibration_.bytes_per_item);
  const int64_t parts = split.parts, part_chunk = split.chunk;
  method_->begin_evaluation();
  auto kinetic = torch::empty({b}, r.options().requires_grad(false));
  {
    std::optional<StageTimers::Scope> scope;
    if (timers_ && timed) scope.emplace(*timers_, "local_energy.laplacian");
    parallel::for_each_walker_part(b, parts, [&](int64_t part_lo, int64_t part_hi) {
      const int64_t step = part_chunk > 0 ? part_chunk : part_hi - part_lo;
      for (int64_t lo = part_lo; lo < part_hi; lo += step) {
        const int64_t hi = std::min(part_hi, lo + step);
        const auto t = method_->compute(wf, sys_, r.slice(0, lo, hi), first_walker_ + lo);
        kinetic.slice(0, lo, hi).copy_(-0.5 * (t.laplacian + t.grad_sq));
      }
    });
  }
  // The potential is cheap: one thread, in the same chunks (so within the fitted memory).
  std::optional<StageTimers::Scope> scope;
  if (timers_ && timed) scope.emplace(*timers_, "local_energy.potential");
  torch::NoGradGuard no_grad;
  auto potential = torch::empty({b}, kinetic.options());
  const int64_t step = chunk > 0 ? std::min(chunk, b) : b;
  for (int64_t lo = 0; lo < b; lo += step) {
    const auto rc = r.slice(0, lo, std::min(b, lo + step));
    potential.slice(0, lo, lo + rc.size(0)).copy_(potential_energy(rc, sys_.nuclei, sys_.charges, e_nn_));
  }
  LocalEnergyTerms out{torch::Tensor(), kinetic, potential};
  out.energy = out.kinetic + out.potential;
  return out;
}

void LocalEnergy::calibrate(WaveFunction& wf, const torch::Tensor& r, bool graphed) {
  const auto rng = method_->rng_state();
  batching::ChunkFitOptions o;
  o.margin = policy_.margin;
  o.probe_items = kCalibrationWalkers;
  o.key = policy_.budget_key;
  o.what = "walker (local-energy evaluation)";
  o.cuda_device = static_cast<int>(r.get_device());  // −1 on the CPU: counted by the CPU allocator
  // A graphed evaluation fits its share of the budget; its capture joins the shared graph pool
  // (reusing what earlier captures freed), so what the pool already holds is not subtracted.
  o.subtract_held = !graphed;
  const auto budget = graphed ? policy_.budget.scaled(policy_.graph_share) : policy_.budget;
  // (probes, not evaluations: untimed, so the sub-stages count what their stage counts)
  const auto probe = [&](std::int64_t k) { evaluate(wf, r.slice(0, 0, k), k, /*timed=*/false); };
  const auto fit = batching::fit_chunk(probe, r.size(0), budget, o);
  if (rng.defined()) method_->set_rng_state(rng);
  calibration_ = fit;
  chunk_ = fit.chunk;  // may exceed B; evaluate caps it
  std::string context;
  if (graphed) context += strfmt(", %.0f%% of it for a graphed evaluation", 100 * policy_.graph_share);
  if (fit.held_bytes > 0)
    context += ", less " + batching::format_bytes(double(fit.held_bytes)) + " held by captured CUDA graphs";
  const std::string line =
      strfmt("local energy: %s per walker + %s fixed (measured) -> up to %lld walkers per chunk for %s = %s%s",
             batching::format_bytes(double(fit.bytes_per_item)).c_str(),
             batching::format_bytes(double(fit.fixed_bytes)).c_str(), static_cast<long long>(fit.chunk),
             policy_.budget_key.c_str(), batching::format_bytes(double(policy_.budget.bytes())).c_str(),
             context.c_str());
  log::info_unless_repeated("local energy chunk", line);
}

LocalEnergyTerms LocalEnergy::operator()(WaveFunction& wf, const torch::Tensor& r, const parallel::GraphKey& key) {
  const bool graphed = graph_mode_ != parallel::GraphMode::eager && !key.empty() && method_->capturable() &&
                       !(graph_ && graph_->mode() == parallel::GraphMode::eager);  // not after a failed capture
  // A graph that will hold its working memory: captured on a CUDA device, or emulated.
  const bool holds = graphed && (graph_mode_ == parallel::GraphMode::emulated || r.is_cuda());
  if (chunk_ == 0 && policy_.walkers == 0 && !policy_.budget.is_unlimited()) {
    calibrate(wf, r, holds);
  }
  if (graphed) return evaluate_graphed(wf, r, key);
  return evaluate(wf, r, chunk_);
}

void LocalEnergy::set_graph_mode(parallel::GraphMode mode) {
  graph_mode_ = mode;
  graph_.reset();
}

LocalEnergyTerms LocalEnergy::evaluate_graphed(WaveFunction& wf, const torch::Tensor& r, const parallel::GraphKey& key) {
  if (!graph_) graph_ = std::make_unique<parallel::DeviceGraph>(graph_mode_, r.device(), "the local energy");
  if (!g_r_.defined() || !g_r_.sizes().equals(r.sizes()) || g_r_.scalar_type() != r.scalar_type() ||
      g_r_.device() != r.device()) {
    g_r_ = torch::empty_like(r, r.options().requires_grad(false));
    g_kinetic_ = torch::empty({r.size(0)}, g_r_.options());
    g_potential_ = torch::empty({r.size(0)}, g_r_.options());
  }
  {
    torch::NoGradGuard no_grad;
    g_r_.copy_(r);
  }
  parallel::GraphKey full = key;
  for (const auto& t : {g_r_, g_kinetic_, g_potential_}) full.push_back(t.data_ptr());
  full.push_back(&wf);
  WaveFunction* w = &wf;
  // The parts' timers stay out of the graph (a replay would not run them; a profiler's timer
  // syncs); the caller's "local_energy" stage times the whole evaluation.
  graph_->run(full, [this, w] {
    const auto t = evaluate(*w, g_r_, chunk_, /*timed=*/false);
    torch::NoGradGuard no_grad;
    g_kinetic_.copy_(t.kinetic);
    g_potential_.copy_(t.potential);
  });
  // Copies: the buffers are overwritten by the next evaluation.
  LocalEnergyTerms out{torch::Tensor(), g_kinetic_.clone(), g_potential_.clone()};
  out.energy = out.kinetic + out.potential;
  return out;
}

}  // namespace nnvmc
