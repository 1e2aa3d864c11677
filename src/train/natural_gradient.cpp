#include "train/natural_gradient.hpp"

#include <cmath>

#include "batching/chunk_fit.hpp"
#include "core/errors.hpp"
#include "models/determinant_balance.hpp"
#include "train/per_sample_gradients.hpp"

namespace nnvmc {

SrProblem make_sr_problem(const torch::Tensor& jacobian, const torch::Tensor& e) {
  return make_sr_problem(std::vector<torch::Tensor>{jacobian}, std::vector<torch::Tensor>{e});
}

SrProblem make_sr_problem(const std::vector<torch::Tensor>& jacobians, const std::vector<torch::Tensor>& e) {
  std::vector<torch::Tensor> os, eps;
  const double m = static_cast<double>(jacobians.size());
  for (size_t i = 0; i < jacobians.size(); ++i) {
    const auto j = jacobians[i].to(torch::kFloat64);
    const auto e64 = e[i].detach().to(torch::kFloat64).to(j.device());
    const double scale = 1.0 / std::sqrt(static_cast<double>(j.size(0)) * m);
    os.push_back((j - j.mean(0, true)) * scale);
    eps.push_back((e64 - e64.mean()) * scale);
  }
  if (os.size() == 1) return {os[0], eps[0]};
  return {torch::cat(os, 0), torch::cat(eps, 0)};
}

torch::Tensor spd_solve(const torch::Tensor& a, const torch::Tensor& b) {
  const auto n = a.size(0);
  const auto eye = torch::eye(n, a.options());
  const double base = std::max(a.diagonal().abs().mean().item<double>(), 1e-300);
  const bool vector = b.dim() == 1;
  const auto rhs = vector ? b.unsqueeze(1) : b;
  double jitter = 0;
  for (int attempt = 0; attempt < 8; ++attempt) {
    const auto [l, info] = torch::linalg_cholesky_ex(jitter > 0 ? a + jitter * eye : a);
    if (info.item<int64_t>() == 0) {
      const auto x = torch::cholesky_solve(rhs, l);
      if (torch::isfinite(x).all().item<bool>()) return vector ? x.squeeze(1) : x;
    }
    jitter = jitter > 0 ? jitter * 100 : base * 1e-12;
  }
  throw NumericalError("spd_solve: Cholesky failed even with diagonal jitter " +
                       std::to_string(jitter / 100));
}

torch::Tensor sr_direction(const SrProblem& p, double damping, const torch::Tensor& v) {
  const auto s = p.o.t().matmul(p.o);
  const auto eye = torch::eye(s.size(0), s.options());
  auto rhs = p.o.t().mv(p.eps);
  if (v.defined()) rhs = rhs + v.to(rhs.options());
  return spd_solve(s + damping * eye, rhs);
}

namespace {
/// Ōᵀ K⁻¹ (rhs − Ōv/λ) + v/λ for the sample-space kernel K = ŌŌᵀ + λ (+ a term along 1, which
/// Ōv, orthogonal to 1 because Ō's columns are centred, does not see).
torch::Tensor sample_space_solve(const SrProblem& p, const torch::Tensor& kernel, torch::Tensor rhs, double damping,
                                 const torch::Tensor& v) {
  if (!v.defined()) return p.o.t().mv(spd_solve(kernel, rhs));
  if (!(damping > 0))
    throw ConfigError("'optim.sr.damping' must be > 0 for the determinant-balance penalty with minsr or spring "
                      "(or set optim.determinant_balance=0)");
  const auto vv = v.to(p.o.options());
  rhs = rhs - p.o.mv(vv) / damping;
  return p.o.t().mv(spd_solve(kernel, rhs)) + vv / damping;
}
}  // namespace

torch::Tensor minsr_direction(const SrProblem& p, double damping, const torch::Tensor& v) {
  const auto t = p.o.matmul(p.o.t());
  const auto eye = torch::eye(t.size(0), t.options());
  return sample_space_solve(p, t + damping * eye, p.eps, damping, v);
}

torch::Tensor spring_direction(const SrProblem& p, double damping, double momentum,
                               const torch::Tensor& previous, const torch::Tensor& v) {
  const auto b = p.o.size(0);
  // The rows of Ō and ε are centred, so the 11ᵀ/B term does not change the solution; it
  // lifts the kernel's zero mode along 1 for a better-conditioned Cholesky.
  const auto t = p.o.matmul(p.o.t()) + damping * torch::eye(b, p.o.options()) +
                 torch::full({b, b}, 1.0 / static_cast<double>(b), p.o.options());
  if (!previous.defined() || momentum == 0) return sample_space_solve(p, t, p.eps, damping, v);
  const auto prev = previous.to(p.o.options());
  const auto rhs = p.eps - momentum * p.o.mv(prev);
  return momentum * prev + sample_space_solve(p, t, rhs, damping, v);
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
    std::vector<torch::Tensor> jacs, energies;
    torch::Tensor penalty;  // w·∇θP averaged over molecules [P], or undefined
    {
      auto scope = timers.scope("gradient");
      for (const auto& b : batches) {
        if (chunk_ == 0) chunk_ = fit_chunk(wf, *b.sys, b.r);
        jacs.push_back(per_sample_log_gradients(wf, *b.sys, b.r, chunk_));
        energies.push_back(clip_local_energies(b.e_loc.detach(), options_.clip_width));
      }
      if (penalty_weight_ > 0) penalty = penalty_gradient(wf, params, batches, energies);
    }
    auto scope = timers.scope("optimizer");
    for (const auto& j : jacs)
      if (!torch::isfinite(j).all().item<bool>()) return false;
    if (penalty.defined() && !torch::isfinite(penalty).all().item<bool>()) return false;
    const auto problem = make_sr_problem(jacs, energies);
    torch::Tensor delta;
    try {
      if (options_.type == "sr") {
        // Same update as minsr; solve in the smaller of the two spaces.
        delta = problem.o.size(1) <= problem.o.size(0) ? sr_direction(problem, options_.sr.damping, penalty)
                                                       : minsr_direction(problem, options_.sr.damping, penalty);
      } else if (options_.type == "minsr") {
        delta = minsr_direction(problem, options_.sr.damping, penalty);
      } else {
        delta = spring_direction(problem, options_.sr.damping, options_.spring.momentum, previous_, penalty);
      }
    } catch (const NumericalError&) {
      return false;
    }
    if (!torch::isfinite(delta).all().item<bool>()) return false;
    double lr = learning_rate(t);
    if (options_.sr.norm_constraint > 0) {
      // |Ōδ|² (Fisher) or |δ|²: the Euclidean norm also bounds the part of SPRING's momentum
      // that lies outside the span of the current samples' gradients, which |Ōδ| cannot see.
      const double size = options_.sr.norm == "euclidean"
                              ? delta.square().sum().item<double>()
                              : problem.o.mv(delta).square().sum().item<double>();
      if (lr * lr * size > options_.sr.norm_constraint) lr = std::sqrt(options_.sr.norm_constraint / size);
    }
    add_to_parameters(params, delta, -lr);
    if (options_.type == "spring") previous_ = delta.detach().clone();
    return true;
  }

  double learning_rate(std::int64_t t) const override {
    return options_.lr / (1.0 + static_cast<double>(t) / options_.lr_delay);
  }

  TensorMap state() const override {
    TensorMap out;
    if (previous_.defined()) out["spring/previous_update"] = previous_;
    return out;
  }

  void load_state(const TensorMap& state) override {
    const auto it = state.find("spring/previous_update");
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
      const std::int64_t n = b.r.size(0), chunk = std::max<std::int64_t>(1, chunk_);
      if (n < 2) continue;
      const double sigma = energies[m].std().item<double>();
      for (std::int64_t lo = 0; lo < n; lo += chunk) {
        const std::int64_t hi = std::min(n, lo + chunk);
        const auto p = determinant_balance_penalty(wf, b.r.slice(0, lo, hi).detach(), *b.sys, sigma);
        if (!p.defined()) return {};
        const double scale = penalty_weight_ * per_molecule * static_cast<double>(hi - lo) / static_cast<double>(n);
        const auto g = torch::autograd::grad({p * scale}, params, {}, false, false, /*allow_unused=*/true);
        for (size_t k = 0; k < params.size(); ++k)
          if (g[k].defined()) sum[k] = sum[k].defined() ? sum[k] + g[k] : g[k];
      }
    }
    std::vector<torch::Tensor> flat;
    for (size_t k = 0; k < params.size(); ++k)
      flat.push_back(sum[k].defined() ? sum[k].reshape(-1).to(torch::kFloat64)
                                      : torch::zeros({params[k].numel()}, params[k].options().dtype(torch::kFloat64)));
    return torch::cat(flat);
  }

  /// optim.sr.chunk_walkers, reduced if the measured memory per walker says it does not fit.
  std::int64_t fit_chunk(WaveFunction& wf, const SystemTensors& sys, const torch::Tensor& r) const {
    const std::int64_t want = options_.sr.chunk_walkers, b = r.size(0);
    if (budget_.is_unlimited()) return want;
    batching::ChunkFitOptions o;
    o.key = "run.memory_budget";
    o.what = "walker (per-sample gradients)";
    o.probe_items = std::min<std::int64_t>(want, 8);
    o.cuda_device = static_cast<int>(r.get_device());  // −1 on the CPU
    o.reserved_bytes = (b * parameters_ + 3 * b * b) * 8;  // Jacobian, kernel and its factor (float64)
    const auto fit = batching::fit_chunk([&](std::int64_t k) { per_sample_log_gradients(wf, sys, r.slice(0, 0, k), k); },
                                         b, budget_, o);
    return std::max<std::int64_t>(1, std::min(want, fit.chunk));
  }

  OptimOptions options_;
  std::int64_t parameters_;  ///< P
  batching::MemoryBudget budget_;
  double penalty_weight_;    ///< determinant-balance weight (0: off)
  std::int64_t chunk_ = 0;   ///< walkers per Jacobian pass (0: not yet sized)
  torch::Tensor previous_;  ///< SPRING's δ_{t−1} [P] float64 (undefined before the first step)
};

}  // namespace

std::unique_ptr<Optimizer> make_natural_gradient(const OptimOptions& options, WaveFunction& wf,
                                                 const batching::MemoryBudget& budget) {
  return std::make_unique<NaturalGradientOptimizer>(options, wf, budget);
}

}  // namespace nnvmc
