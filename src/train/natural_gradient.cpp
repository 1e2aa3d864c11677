#include "train/natural_gradient.hpp"

#include <algorithm>
#include <cmath>

#include "core/errors.hpp"
#include "models/determinant_balance.hpp"
#include "train/distributed.hpp"
#include "train/per_sample_gradients.hpp"

namespace nnvmc {
namespace {
/// Subtracts from each block [edges[m], edges[m+1]) of x along `dim` its mean over that block.
void centre_blocks_(torch::Tensor& x, const std::vector<std::int64_t>& edges, std::int64_t dim) {
  for (size_t m = 0; m + 1 < edges.size(); ++m) {
    auto block = x.narrow(dim, edges[m], edges[m + 1] - edges[m]);
    block.sub_(block.mean(dim, /*keepdim=*/true));
  }
}
/// Multiplies each block [edges[m], edges[m+1]) of x along `dim` by scales[m].
void scale_blocks_(torch::Tensor& x, const std::vector<std::int64_t>& edges, const std::vector<double>& scales,
                   std::int64_t dim) {
  for (size_t m = 0; m + 1 < edges.size(); ++m) x.narrow(dim, edges[m], edges[m + 1] - edges[m]).mul_(scales[m]);
}
}  // namespace

torch::Tensor SrProblem::centre_and_scale(const torch::Tensor& y) const {
  auto out = y.clone();
  centre_blocks_(out, edges, 0);
  scale_blocks_(out, edges, scales, 0);
  return out;
}

torch::Tensor SrProblem::o_mv(const torch::Tensor& x) const { return centre_and_scale(j.mv(x)); }

torch::Tensor SrProblem::ot_mv(const torch::Tensor& y, torch::Tensor* out) const {
  // Ōᵀy = Jᵀ(C D y): C and D commute (D is constant on each block C centres).
  const auto w = centre_and_scale(y);
  if (out == nullptr) return j.t().mv(w);
  if (!out->defined() || out->size(0) != j.size(1) || out->scalar_type() != j.scalar_type() ||
      out->device() != j.device())
    *out = torch::empty({j.size(1)}, j.options());
  torch::mv_out(*out, j.t(), w);
  return *out;
}

void SrProblem::gram(torch::Tensor& out) const {
  // ŌŌᵀ = D C (J Jᵀ) C D: centre the B × B product on both sides, then scale rows and columns.
  gram_matrix(j, out);
  centre_blocks_(out, edges, 1);
  centre_blocks_(out, edges, 0);
  scale_blocks_(out, edges, scales, 0);
  scale_blocks_(out, edges, scales, 1);
}

torch::Tensor SrProblem::fisher() const {
  torch::Tensor s;
  for (size_t m = 0; m + 1 < edges.size(); ++m) {
    const auto len = edges[m + 1] - edges[m];
    const auto jm = j.narrow(0, edges[m], len);
    const auto mu = jm.mean(0);
    const double w = scales[m] * scales[m];
    auto sm = jm.t().matmul(jm).mul_(w).addr_(mu, mu, /*beta=*/1.0, /*alpha=*/-w * static_cast<double>(len));
    s = s.defined() ? s.add_(sm) : sm;
  }
  return s;
}

torch::Tensor SrProblem::centred() const { return centre_and_scale(j); }

SrProblem make_sr_problem(const torch::Tensor& jacobian, const torch::Tensor& e) {
  return make_sr_problem(std::vector<torch::Tensor>{jacobian}, std::vector<torch::Tensor>{e});
}

SrProblem make_sr_problem(const std::vector<torch::Tensor>& jacobians, const std::vector<torch::Tensor>& e) {
  SrProblem p;
  std::vector<torch::Tensor> js, eps;
  const double m = static_cast<double>(jacobians.size());
  p.edges.push_back(0);
  for (size_t i = 0; i < jacobians.size(); ++i) {
    const auto ji = jacobians[i].to(torch::kFloat64);  // no copy when it is float64 already
    const auto e64 = e[i].detach().to(torch::kFloat64).to(ji.device());
    const double scale = 1.0 / std::sqrt(static_cast<double>(ji.size(0)) * m);
    js.push_back(ji);
    eps.push_back((e64 - e64.mean()) * scale);
    p.edges.push_back(p.edges.back() + ji.size(0));
    p.scales.push_back(scale);
  }
  p.j = js.size() == 1 ? js[0] : torch::cat(js, 0);
  p.eps = eps.size() == 1 ? eps[0] : torch::cat(eps, 0);
  return p;
}

void gram_matrix(const torch::Tensor& o, torch::Tensor& out, int blocks) {
  const std::int64_t b = o.size(0);
  if (!out.defined() || out.size(0) != b || out.size(1) != b || out.scalar_type() != o.scalar_type() ||
      out.device() != o.device())
    out = torch::empty({b, b}, o.options());
  const std::int64_t k = std::max<std::int64_t>(1, std::min<std::int64_t>(blocks, b / 64));
  if (k == 1) {
    torch::mm_out(out, o, o.t());
    return;
  }
  std::vector<std::int64_t> edge{0};
  for (std::int64_t i = 1; i <= k; ++i) edge.push_back(b * i / k);
  for (std::int64_t i = 0; i < k; ++i) {
    const auto oi = o.slice(0, edge[i], edge[i + 1]);
    // Row block i against row blocks 0..i in one GEMM: rows [edge_i, edge_i+1) × cols [0, edge_i+1).
    auto target = out.slice(0, edge[i], edge[i + 1]).slice(1, 0, edge[i + 1]);
    torch::mm_out(target, oi, o.slice(0, 0, edge[i + 1]).t());
  }
  // Mirror the strictly upper blocks from the lower ones.
  for (std::int64_t i = 0; i < k; ++i)
    for (std::int64_t j = i + 1; j < k; ++j)
      out.slice(0, edge[i], edge[i + 1]).slice(1, edge[j], edge[j + 1])
          .copy_(out.slice(0, edge[j], edge[j + 1]).slice(1, edge[i], edge[i + 1]).t());
}

torch::Tensor cholesky_solve_unchecked(const torch::Tensor& b, const torch::Tensor& l) {
  const auto y = torch::linalg_solve_triangular(l, b, /*upper=*/false);
  return torch::linalg_solve_triangular(l.mT(), y, /*upper=*/true);
}

torch::Tensor spd_solve(const torch::Tensor& a, const torch::Tensor& b, SampleSpaceBuffers* buffers) {
  const bool vector = b.dim() == 1;
  const auto rhs = vector ? b.unsqueeze(1) : b;
  const auto finish = [&](const torch::Tensor& x) { return vector ? x.squeeze(1) : x; };
  {
    torch::Tensor l, info;
    if (buffers != nullptr) {
      if (!buffers->factor.defined() || !buffers->factor.sizes().equals(a.sizes()) ||
          buffers->factor.scalar_type() != a.scalar_type())
        buffers->factor = torch::empty_like(a).mT();  // column-major, the layout ATen's out= writes in place
      if (!buffers->info.defined()) buffers->info = torch::empty({}, a.options().dtype(torch::kInt32));
      torch::linalg_cholesky_ex_out(buffers->factor, buffers->info, a);
      l = buffers->factor;
      info = buffers->info;
    } else {
      std::tie(l, info) = torch::linalg_cholesky_ex(a);
    }
    const auto x = cholesky_solve_unchecked(rhs, l);
    // One host read for both the factorisation status and the solution's finiteness.
    if ((info.eq(0) & torch::isfinite(x).all()).item<bool>()) return finish(x);
  }
  const double base = a.diagonal().abs().mean().item<double>();
  if (!std::isfinite(base)) throw NumericalError("spd_solve: the matrix is not finite");
  const auto eye = torch::eye(a.size(0), a.options());
  double jitter = std::max(base, 1e-300) * 1e-12;
  for (int attempt = 1; attempt < 8; ++attempt) {
    const auto [l, info] = torch::linalg_cholesky_ex(a + jitter * eye);
    const auto x = cholesky_solve_unchecked(rhs, l);
    if ((info.eq(0) & torch::isfinite(x).all()).item<bool>()) return finish(x);
    jitter *= 100;
  }
  throw NumericalError("spd_solve: Cholesky failed even with diagonal jitter " + std::to_string(jitter / 100));
}

torch::Tensor sr_direction(const SrProblem& p, double damping, const torch::Tensor& v) {
  const auto s = p.fisher();
  const auto eye = torch::eye(s.size(0), s.options());
  auto rhs = p.ot_mv(p.eps);
  if (v.defined()) rhs = rhs + v.to(rhs.options());
  return spd_solve(s + damping * eye, rhs);
}

namespace {
/// ŌŌᵀ + λ (+ shift) in buffers->kernel when given. @return [B, B]
torch::Tensor sample_kernel(const SrProblem& p, double damping, double shift, SampleSpaceBuffers* buffers) {
  torch::Tensor local;
  auto& t = buffers != nullptr ? buffers->kernel : local;
  p.gram(t);
  t.diagonal().add_(damping);
  if (shift != 0) t.add_(shift);
  return t;
}
/// Ōᵀ K⁻¹ (rhs − Ōv/λ) + v/λ for the sample-space kernel K = ŌŌᵀ + λ (+ a term along 1, which
/// Ōv, orthogonal to 1 because Ō's columns are centred, does not see); Ōᵀ K⁻¹ rhs without v.
torch::Tensor sample_space_solve(const SrProblem& p, const torch::Tensor& kernel, torch::Tensor rhs, double damping,
                                 const torch::Tensor& v, SampleSpaceBuffers* buffers) {
  torch::Tensor* out = buffers != nullptr ? &buffers->update : nullptr;
  if (!v.defined()) return p.ot_mv(spd_solve(kernel, rhs, buffers), out);
  if (!(damping > 0))
    throw ConfigError("'optim.sr.damping' must be > 0 for the determinant-balance penalty with minsr or spring "
                      "(or set optim.determinant_balance=0)");
  const auto vv = v.to(p.j.options());
  rhs = rhs - p.o_mv(vv) / damping;
  return p.ot_mv(spd_solve(kernel, rhs, buffers), out) + vv / damping;
}
}  // namespace

torch::Tensor minsr_direction(const SrProblem& p, double damping, const torch::Tensor& v, SampleSpaceBuffers* buffers) {
  const auto t = sample_kernel(p, damping, 0.0, buffers);
  return sample_space_solve(p, t, p.eps, damping, v, buffers);
}

torch::Tensor spring_direction(const SrProblem& p, double damping, double momentum, const torch::Tensor& previous,
                               const torch::Tensor& v, SampleSpaceBuffers* buffers) {
  const auto b = p.walkers();
  // The rows of Ō and ε are centred, so the 11ᵀ/B term does not change the solution; it
  // lifts the kernel's zero mode along 1 for a better-conditioned Cholesky. (With M molecules,
  // each centred on its own, ŌŌᵀ has M zero modes, one indicator per molecule; the shift lifts
  // their sum only, and the damping keeps the others positive.)
  const auto t = sample_kernel(p, damping, 1.0 / static_cast<double>(b), buffers);
  if (!previous.defined() || momentum == 0) return sample_space_solve(p, t, p.eps, damping, v, buffers);
  const auto prev = previous.to(p.j.options());
  const auto rhs = p.eps - momentum * p.o_mv(prev);
  auto delta = sample_space_solve(p, t, rhs, damping, v, buffers);
  return delta.add_(prev, momentum);
}

namespace {

/// sr, minsr and spring share everything but the direction.
class NaturalGradientOptimizer final : public Optimizer {
 public:
  NaturalGradientOptimizer(const OptimOptions& o, WaveFunction& wf, const batching::MemoryBudget& budget)
      : options_(o),
        parameters_(parameter_count(trainable_parameters(wf))),
        budget_(budget),
        penalty_weight_(determinant_balance_weight(o)) {
    if (o.type != "sr" && o.type != "minsr" && o.type != "spring")
      throw ConfigError("'optim.type': '" + o.type + "' is not a natural-gradient optimizer");
  }

  bool step(WaveFunction& wf, const std::vector<WalkerBatch>& batches, std::int64_t t,
            StageTimers& timers) override {
    const auto params = trainable_parameters(wf);
    jacobians_.resize(batches.size());
    std::vector<torch::Tensor> energies;
    torch::Tensor penalty;  // w·∇θP averaged over molecules [P], or undefined
    {
      auto scope = timers.scope("gradient");
      const std::int64_t reserved = kept_for_the_step(batches);
      for (size_t i = 0; i < batches.size(); ++i) {
        const auto& b = batches[i];
        const auto chunk = chunk_(wf, *b.sys, b.r, options_.sr.chunk_walkers, budget_, reserved);
        per_sample_log_gradients_into(wf, *b.sys, b.r, chunk, jacobians_[i]);
        // all ranks' walkers (one rank: its own)
        energies.push_back(clip_local_energies(all_walkers(b.e_loc.detach()), options_.clip_width));
      }
      if (penalty_weight_ > 0) penalty = penalty_gradient(wf, params, batches, energies);
    }
    auto scope = timers.scope("optimizer");
    // Ō stays implicit (SrProblem): the Jacobian buffer is read, not centred. A non-finite Jacobian makes the
    // kernel non-finite, which spd_solve reports (NumericalError): no separate check; a
    // non-finite penalty gradient makes δ and so the parameters non-finite, which the trainer's
    // fused check rejects. Across ranks every rank gathers all walkers' Jacobian rows (allgather
    // of B × P float64: see docs/design.md, "Processes"; the energies were gathered above) and
    // then solves the whole problem, so δ is the one a single process computes, on every rank.
    std::vector<torch::Tensor> gathered;
    if (parallel::world().size() > 1)
      for (const auto& j : jacobians_) gathered.push_back(all_walkers(j));
    auto& jacobians = gathered.empty() ? jacobians_ : gathered;
    const auto problem = make_sr_problem(jacobians, energies);
    torch::Tensor delta;
    try {
      if (options_.type == "sr") {
        // Same update as minsr; solve in the smaller of the two spaces.
        delta = problem.parameters() <= problem.walkers()
                    ? sr_direction(problem, options_.sr.damping, penalty)
                    : minsr_direction(problem, options_.sr.damping, penalty, &buffers_);
      } else if (options_.type == "minsr") {
        delta = minsr_direction(problem, options_.sr.damping, penalty, &buffers_);
      } else {
        delta = spring_direction(problem, options_.sr.damping, options_.spring.momentum, previous_, penalty, &buffers_);
      }
    } catch (const NumericalError&) {
      return false;
    }
    // |Ōδ|² (Fisher) or |δ|²: the Euclidean norm also bounds the part of SPRING's momentum
    // that lies outside the span of the current samples' gradients, which |Ōδ| cannot see.
    // The step length min(lr, sqrt(c / size)) stays on the device (no host read); a non-finite
    // δ makes the parameters non-finite, which the trainer's one fused check rejects (it then
    // restores parameters and optimizer state).
    const double lr = learning_rate(t);
    torch::Tensor step_length = torch::full({}, lr, delta.options());
    if (options_.sr.norm_constraint > 0) {
      const auto size = options_.sr.norm == "euclidean" ? delta.square().sum() : problem.o_mv(delta).square().sum();
      step_length = torch::minimum(step_length, torch::sqrt(options_.sr.norm_constraint / size));
    }
    add_to_parameters(params, delta * step_length, -1.0);
    // The step length for result.h5, copied to the host without a sync (pinned on CUDA): the
    // trainer reads it after its fused finiteness check, which waits for the step anyway.
    if (!applied_step_.defined())
      applied_step_ = torch::empty({}, torch::TensorOptions().dtype(torch::kFloat64).pinned_memory(step_length.is_cuda()));
    applied_step_.copy_(step_length, /*non_blocking=*/true);
    if (options_.type == "spring") {
      if (previous_.defined() && previous_.sizes().equals(delta.sizes()) && previous_.device() == delta.device() &&
          !previous_.is_same(delta))  // (after a resume it is a host tensor until here)
        previous_.copy_(delta);
      else
        previous_ = delta.detach().clone();
    }
    return true;
  }

  double learning_rate(std::int64_t t) const override {
    return options_.lr / (1.0 + static_cast<double>(t) / options_.lr_delay);
  }
  double applied_learning_rate(std::int64_t t) const override {
    return applied_step_.defined() ? applied_step_.data_ptr<double>()[0] : learning_rate(t);
  }

  // SPRING's momentum is SPRING's state alone: sr and minsr neither use nor keep it (a user audit:
  // spring -> minsr -> spring resumed with the update of ten iterations before, weighted 0.99).
  TensorMap state() const override {
    TensorMap out;
    if (options_.type == "spring" && previous_.defined())
      out["spring/previous_update"] = previous_.clone();  // the buffer is reused
    return out;
  }

  void load_state(const TensorMap& state) override {
    const auto it = options_.type == "spring" ? state.find("spring/previous_update") : state.end();
    previous_ = it == state.end() ? torch::Tensor() : it->second.to(torch::kFloat64).clone();
    if (previous_.defined() && previous_.numel() != parameters_)
      throw CheckpointError("optimizer state 'spring/previous_update' has " +
                            std::to_string(previous_.numel()) + " entries, the model has " +
                            std::to_string(parameters_) + " parameters");
  }

 private:
  /// w · mean over molecules of ∇θP_m (determinant_balance_penalty), float64 [P] in
  /// trainable_parameters order; undefined when the ansatz has no determinant weights. Walkers
  /// go through in chunks of the Jacobian's size (P_m is a mean over walkers).
  torch::Tensor penalty_gradient(WaveFunction& wf, const std::vector<torch::Tensor>& params,
                                 const std::vector<WalkerBatch>& batches, const std::vector<torch::Tensor>& energies) {
    std::vector<torch::Tensor> sum(params.size());
    const double per_molecule = 1.0 / static_cast<double>(batches.size());
    for (size_t m = 0; m < batches.size(); ++m) {
      const auto& b = batches[m];
      // this rank's walkers n of all ranks' total (energies hold all walkers)
      const std::int64_t n = b.r.size(0), total = energies[m].size(0), chunk = std::max<std::int64_t>(1, chunk_.value());
      if (total < 2) continue;
      const auto sigma = energy_std(energies[m]);  // stays on the device
      for (std::int64_t lo = 0; lo < n; lo += chunk) {
        const std::int64_t hi = std::min(n, lo + chunk);
        const auto p = determinant_balance_penalty(wf, b.r.slice(0, lo, hi).detach(), *b.sys, sigma);
        if (!p.defined()) return {};
        const double scale = penalty_weight_ * per_molecule * static_cast<double>(hi - lo) / static_cast<double>(total);
        const auto g = torch::autograd::grad({p * scale}, params, {}, false, false, /*allow_unused=*/true);
        for (size_t k = 0; k < params.size(); ++k)
          if (g[k].defined()) sum[k] = sum[k].defined() ? sum[k] + g[k] : g[k];
      }
    }
    std::vector<torch::Tensor> flat;
    for (size_t k = 0; k < params.size(); ++k)
      flat.push_back(sum[k].defined() ? sum[k].reshape(-1).to(torch::kFloat64)
                                      : torch::zeros({params[k].numel()}, params[k].options().dtype(torch::kFloat64)));
    std::vector<torch::Tensor> out{torch::cat(flat)};
    if (parallel::world().size() > 1) sum_over_ranks_(out);  // each rank held its walkers' share
    return out[0];
  }

  OptimOptions options_;
  std::int64_t parameters_;  ///< P
  batching::MemoryBudget budget_;
  double penalty_weight_;    ///< determinant-balance weight (0: off)
  /// optim.sr.chunk_walkers (0: all), reduced if the measured memory per walker says it does not fit.
  PerSampleChunk chunk_;

  /// Bytes the step keeps outside the per-sample passes (float64): the Jacobians of all the
  /// step's molecules (W × P for this rank's W walkers, and all ranks' gathered again with several
  /// ranks) and the kernel with its factor over all the walkers (3 W_all²; sr: 3 min(W_all, P)²). It was counted for
  /// one molecule's walkers: 32 molecules at once peaked at 4× run.memory_budget, a user audit.
  /// @throws BudgetError naming optim.molecules_per_step and sampler.walkers when that alone
  /// exceeds the budget (it ran on, or failed allocating 1.3 GB with no word of the molecules)
  std::int64_t kept_for_the_step(const std::vector<WalkerBatch>& batches) const {
    std::int64_t local = 0;
    for (const auto& b : batches) local += b.r.size(0);
    // all ranks' walkers (their shares differ: 10 on 3 ranks are 4/3/3), the same on every rank,
    // so every rank takes the same branch below (a review)
    const int ranks = parallel::world().size();
    const auto all = ranks > 1 ? static_cast<std::int64_t>(std::llround(sum_over_ranks(double(local)))) : local;
    // sr solves in the smaller of parameter and walker space (a P×P Fisher matrix when P ≤ W)
    const std::int64_t side = options_.type == "sr" ? std::min<std::int64_t>(all, parameters_) : all;
    const std::int64_t bytes = (local * parameters_ + (ranks > 1 ? all * parameters_ : 0) + 3 * side * side) * 8;
    if (!budget_.is_unlimited() && bytes > budget_.bytes())
      throw BudgetError(strfmt(
          "run.memory_budget = %s is too small for the %s step: it keeps the Jacobian (%lld walkers x %lld parameters) "
          "and a %lld x %lld kernel for the %zu molecule(s) it trains at once, %s; train fewer molecules per step "
          "(optim.molecules_per_step), use fewer sampler.walkers, or raise run.memory_budget",
          batching::format_bytes(double(budget_.bytes())).c_str(), options_.type.c_str(), static_cast<long long>(all),
          static_cast<long long>(parameters_), static_cast<long long>(side), static_cast<long long>(side),
          batches.size(), batching::format_bytes(double(bytes)).c_str()));
    return bytes;
  }
  torch::Tensor previous_;  ///< SPRING's δ_{t−1} [P] float64 (undefined before the first step)
  torch::Tensor applied_step_;  ///< the last step's length min(lr, √(c/|δ|²)), a host scalar (float64)
  std::vector<torch::Tensor> jacobians_;  ///< per molecule [B, P], reused (read, never centred)
  SampleSpaceBuffers buffers_;            ///< kernel, factor and δ, reused
};

}  // namespace

std::unique_ptr<Optimizer> make_natural_gradient(const OptimOptions& options, WaveFunction& wf,
                                                 const batching::MemoryBudget& budget) {
  return std::make_unique<NaturalGradientOptimizer>(options, wf, budget);
}

}  // namespace nnvmc
