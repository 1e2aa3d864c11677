/// @file kfac.cpp
/// K-FAC on the statistics of one recorded pass (see kfac.hpp for the conventions).
#include "train/kfac.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/errors.hpp"
#include "parallel/communicator.hpp"
#include "parallel/walker_threads.hpp"
#include "train/distributed.hpp"
#include "train/natural_gradient.hpp"
#include "train/per_sample_gradients.hpp"
#include "train/recorded_pass.hpp"

namespace nnvmc {
namespace {

const auto kF64 = torch::kFloat64;

/// A parameter pair used only as a linear map: one Kronecker-factored block.
struct KroneckerBlock {
  int weight = -1;  ///< index of W [out, in]
  int bias = -1;    ///< index of b [out], −1: none
};

/// Sums over the walkers of one step (before normalisation), per block and diagonal parameter.
struct StepSums {
  std::vector<torch::Tensor> a, g, grad;  ///< per block: Σ x̃x̃ᵀ, Σ ggᵀ, Σ_b w_b Σ_s g x̃ᵀ [out, in']
  std::vector<double> positions;          ///< per block: Σ_b S_b (positions × walkers)
  std::vector<torch::Tensor> d, grad_d;   ///< per diagonal parameter: Σ_b O_b², Σ_b w_b O_b
};

/// Every rank's sums added up (one message for the tensors, one for the position counts):
/// afterwards each rank holds the statistics of all walkers. Communication per step: the
/// factors' Σ (in'² + out²) + 2P doubles, independent of the walkers.
void sum_over_ranks(StepSums& sums) {
  std::vector<torch::Tensor> all;
  for (auto* list : {&sums.a, &sums.g, &sums.grad, &sums.d, &sums.grad_d})
    for (auto& t : *list) all.push_back(t);
  sum_over_ranks_(all);
  std::size_t k = 0;
  for (auto* list : {&sums.a, &sums.g, &sums.grad, &sums.d, &sums.grad_d})
    for (auto& t : *list) t = all[k++];
  for (auto& p : sums.positions) p = nnvmc::sum_over_ranks(p);
}

torch::Tensor add_or_set(const torch::Tensor& sum, const torch::Tensor& x) {
  return sum.defined() ? sum + x : x;
}

/// sums += x, list by list (x's entries may be undefined where a part saw no walkers).
void add_sums(StepSums& sums, const StepSums& x) {
  const auto add = [](std::vector<torch::Tensor>& to, const std::vector<torch::Tensor>& from) {
    if (to.size() < from.size()) to.resize(from.size());
    for (std::size_t i = 0; i < from.size(); ++i)
      if (from[i].defined()) to[i] = add_or_set(to[i], from[i]);
  };
  add(sums.a, x.a), add(sums.g, x.g), add(sums.grad, x.grad), add(sums.d, x.d), add(sums.grad_d, x.grad_d);
  if (sums.positions.size() < x.positions.size()) sums.positions.resize(x.positions.size(), 0.0);
  for (std::size_t i = 0; i < x.positions.size(); ++i) sums.positions[i] += x.positions[i];
}

/// Moving average as kfac-jax keeps it: value = Σ_t ρ^(T−t) x_t / Σ_t ρ^(T−t).
torch::Tensor average(const torch::Tensor& old, double old_weight, const torch::Tensor& x, double new_weight) {
  if (!old.defined() || old_weight == 0) return x;
  return (old * (new_weight - 1.0) + x) / new_weight;
}

class KfacOptimizer final : public Optimizer {
 public:
  KfacOptimizer(const OptimOptions& o, WaveFunction& wf, const batching::MemoryBudget& budget)
      : options_(o), budget_(budget) {
    for (const auto& p : wf.named_parameters())
      if (p.value().requires_grad()) names_.push_back(p.key());
  }

  bool step(WaveFunction& wf, const std::vector<WalkerBatch>& batches, std::int64_t t,
            StageTimers& timers) override {
    const auto params = trainable_parameters(wf);
    if (params.empty()) return true;
    StepSums sums;
    std::int64_t walkers = 0;
    {
      auto scope = timers.scope("gradient");
      const double molecules = static_cast<double>(batches.size());
      for (const auto& batch : batches) {
        const std::int64_t b = batch.r.size(0);
        // Clipping and centring use all ranks' walkers (every rank the same vector); this rank
        // accumulates its walkers' statistics, which are summed over ranks below.
        std::int64_t offset = 0;
        const auto e = clip_local_energies(all_walkers(batch.e_loc.detach(), &offset), options_.clip_width).to(kF64);
        walkers += e.size(0);
        // g = mean over molecules of E_b[(E_L − Ē)·O_b].
        const auto w = own_rows(e - e.mean(), offset, b) / (static_cast<double>(e.size(0)) * molecules);
        const auto chunk = chunk_(wf, *batch.sys, batch.r, options_.sr.chunk_walkers, budget_, 0);
        // On the CPU, one part of the walkers per thread, each with its own sums (added in part
        // order below) and chunks within the fitted memory (the parts run at once). With several
        // parts, the block structure comes from the first walker before they start.
        const auto split = parallel::split_chunk(parallel::walker_parts(b, batch.r.device().is_cpu()), chunk);
        const std::int64_t parts = split.parts, step = split.chunk;
        if (!structured_ && parts > 1) discover(record_pass(wf, *batch.sys, batch.r.slice(0, 0, 1), params), params);
        std::vector<StepSums> part_sums(static_cast<std::size_t>(parts));
        // The "walkers" handed out are the part indices, one each.
        parallel::for_each_walker_part(parts, parts, [&](std::int64_t p, std::int64_t) {
          const std::int64_t lo = b * p / parts, hi = b * (p + 1) / parts;
          for (std::int64_t s = lo; s < hi; s += step) {
            const std::int64_t end = std::min(hi, s + step);
            const auto pass = record_pass(wf, *batch.sys, batch.r.slice(0, s, end), params);
            if (!structured_) discover(pass, params);  // one part: the first chunk
            accumulate(pass, params, w.slice(0, s, end).to(batch.r.device()), part_sums[static_cast<std::size_t>(p)]);
          }
        });
        for (const auto& ps : part_sums) add_sums(sums, ps);
      }
    }
    auto scope = timers.scope("optimizer");
    if (parallel::world().size() > 1) sum_over_ranks(sums);
    const double n = static_cast<double>(walkers), rho = options_.kfac.cov_ema_decay;
    const double new_weight = rho * ema_weight_ + 1.0;
    const double lambda = options_.kfac.damping;
    std::vector<torch::Tensor> a(blocks_.size()), g(blocks_.size()), d(diagonal_.size());
    std::vector<double> repeats(blocks_.size());
    std::vector<torch::Tensor> delta_blocks(blocks_.size()), delta_diag(diagonal_.size());
    torch::Tensor inner = torch::zeros({}, torch::TensorOptions().dtype(kF64).device(params[0].device()));
    for (size_t i = 0; i < blocks_.size(); ++i) {
      a[i] = average(a_[i], ema_weight_, sums.a[i] / n, new_weight);
      g[i] = average(g_[i], ema_weight_, sums.g[i] * (2.0 / n), new_weight);
      repeats[i] = ema_weight_ == 0 ? sums.positions[i] / n
                                    : (repeats_[i] * (new_weight - 1.0) + sums.positions[i] / n) / new_weight;
      // (F + λ)⁻¹ with F = A ⊗ G / S̄ ≈ S̄·(A + π√(λS̄))⁻¹ ⊗ (G + √(λS̄)/π)⁻¹ (factored damping).
      const double s = repeats[i];
      const auto ta = a[i].diagonal().mean(), tg = g[i].diagonal().mean();
      const auto pi = torch::where((ta > 0) & (tg > 0), torch::sqrt(ta / tg), torch::ones_like(ta));
      const auto root = std::sqrt(lambda * s);
      const auto eye_a = torch::eye(a[i].size(0), a[i].options()), eye_g = torch::eye(g[i].size(0), g[i].options());
      const auto la = std::get<0>(torch::linalg_cholesky_ex(a[i] + eye_a * (pi * root)));
      const auto lg = std::get<0>(torch::linalg_cholesky_ex(g[i] + eye_g * (root / pi)));
      // S̄ · G⁻¹ grad A⁻¹ (both symmetric): solve on the left, then on the right via transposes.
      const auto left = cholesky_solve_unchecked(sums.grad[i], lg);               // [out, in']
      delta_blocks[i] = cholesky_solve_unchecked(left.t(), la).t() * s;           // [out, in']
      inner = inner + (delta_blocks[i] * sums.grad[i]).sum();
    }
    for (size_t j = 0; j < diagonal_.size(); ++j) {
      d[j] = average(d_[j], ema_weight_, sums.d[j] * (2.0 / n), new_weight);
      delta_diag[j] = sums.grad_d[j] / (d[j] + lambda);
      inner = inner + (delta_diag[j] * sums.grad_d[j]).sum();
    }
    // The step's one host read: δᵀg, non-finite exactly when something upstream was.
    const double q = inner.item<double>();
    if (!std::isfinite(q)) return false;
    double lr = learning_rate(t);
    if (options_.kfac.norm_constraint > 0 && lr * lr * q > options_.kfac.norm_constraint)
      lr = std::sqrt(options_.kfac.norm_constraint / q);
    applied_lr_ = lr;
    {
      torch::NoGradGuard no_grad;
      for (size_t i = 0; i < blocks_.size(); ++i) {
        auto& w = const_cast<torch::Tensor&>(params[blocks_[i].weight]);
        const auto in = w.size(1);
        w.add_(delta_blocks[i].slice(1, 0, in).to(w.options()), -lr);
        if (blocks_[i].bias >= 0) {
          auto& bias = const_cast<torch::Tensor&>(params[blocks_[i].bias]);
          bias.add_(delta_blocks[i].select(1, in).to(bias.options()), -lr);
        }
      }
      for (size_t j = 0; j < diagonal_.size(); ++j) {
        auto& p = const_cast<torch::Tensor&>(params[diagonal_[j]]);
        p.add_(delta_diag[j].reshape(p.sizes()).to(p.options()), -lr);
      }
    }
    a_ = std::move(a);
    g_ = std::move(g);
    d_ = std::move(d);
    repeats_ = std::move(repeats);
    ema_weight_ = new_weight;
    return true;
  }

  double learning_rate(std::int64_t t) const override {
    return options_.lr / (1.0 + static_cast<double>(t) / options_.lr_delay);
  }
  double applied_learning_rate(std::int64_t t) const override {
    return std::isnan(applied_lr_) ? learning_rate(t) : applied_lr_;
  }

  TensorMap state() const override {
    if (!structured_ || ema_weight_ == 0) return pending_;
    TensorMap out;
    out["kfac/ema_weight"] = torch::tensor(ema_weight_, kF64);
    for (size_t i = 0; i < blocks_.size(); ++i) {
      const auto& name = names_[blocks_[i].weight];
      out["kfac/A/" + name] = a_[i].clone();
      out["kfac/G/" + name] = g_[i].clone();
      out["kfac/repeats/" + name] = torch::tensor(repeats_[i], kF64);
    }
    for (size_t j = 0; j < diagonal_.size(); ++j) out["kfac/D/" + names_[diagonal_[j]]] = d_[j].clone();
    return out;
  }

  void load_state(const TensorMap& state) override {
    pending_.clear();
    for (const auto& [k, v] : state)
      if (k.rfind("kfac/", 0) == 0) pending_[k] = v.to(kF64).clone();
    if (pending_.empty()) {  // the state before the first step (state() gives none): no statistics
      // (restoring it after a rejected first step kept that step's factors, a user audit)
      for (auto* factors : {&a_, &g_, &d_})
        for (auto& f : *factors) f = torch::Tensor();
      std::fill(repeats_.begin(), repeats_.end(), 0.0);
      ema_weight_ = 0;
      return;
    }
    if (structured_) apply_pending();
  }

 private:
  /// Splits the parameters into Kronecker blocks (W, b used only as linear maps, always
  /// together) and diagonal ones, from the first recorded pass (the structure of a model's
  /// graph does not change between steps).
  void discover(const RecordedPass& pass, const std::vector<torch::Tensor>& params) {
    const size_t n = params.size();
    std::vector<int> as_weight(n, 0), as_bias(n, 0), bias_of(n, -2);
    std::vector<bool> other(n, false);
    for (size_t k = 0; k < n; ++k) other[k] = pass.fallback[k] || pass.dense[k].defined();
    for (const auto& e : pass.linear) {
      if (e.shared) {  // a molecule-level map: one input for all walkers, kept diagonal
        if (e.weight >= 0) other[e.weight] = true;
        if (e.bias >= 0) other[e.bias] = true;
      }
      if (e.weight >= 0) {
        ++as_weight[e.weight];
        if (bias_of[e.weight] == -2) bias_of[e.weight] = e.bias;
        else if (bias_of[e.weight] != e.bias) other[e.weight] = true;  // paired with different biases
      }
      if (e.bias >= 0) {
        ++as_bias[e.bias];
        if (e.weight < 0) other[e.bias] = true;  // a bias whose weight is not a parameter
      }
    }
    std::vector<bool> in_block(n, false);
    for (size_t k = 0; k < n; ++k) {
      if (as_weight[k] == 0 || other[k] || as_bias[k] > 0 || params[k].dim() != 2) continue;
      const int b = bias_of[k];
      if (b >= 0 && (other[b] || as_weight[b] > 0 || as_bias[b] != as_weight[k] || params[b].dim() != 1)) continue;
      blocks_.push_back({static_cast<int>(k), b});
      in_block[k] = true;
      if (b >= 0) in_block[b] = true;
    }
    for (size_t k = 0; k < n; ++k)
      if (!in_block[k]) diagonal_.push_back(static_cast<int>(k));
    a_.resize(blocks_.size());
    g_.resize(blocks_.size());
    repeats_.assign(blocks_.size(), 0.0);
    d_.resize(diagonal_.size());
    device_ = params.empty() ? torch::Device(torch::kCPU) : params[0].device();
    structured_ = true;
    apply_pending();
  }

  /// Adds one recorded pass's statistics and gradient. @param w [B_chunk] float64 weights
  void accumulate(const RecordedPass& pass, const std::vector<torch::Tensor>& params, const torch::Tensor& w,
                  StepSums& sums) const {
    sums.a.resize(blocks_.size());
    sums.g.resize(blocks_.size());
    sums.grad.resize(blocks_.size());
    sums.positions.resize(blocks_.size(), 0.0);
    sums.d.resize(diagonal_.size());
    sums.grad_d.resize(diagonal_.size());
    for (size_t i = 0; i < blocks_.size(); ++i) {
      for (const auto& e : pass.linear) {
        if (e.weight != blocks_[i].weight) continue;
        auto x = e.x.to(kF64);  // [B, S, in]
        if (blocks_[i].bias >= 0) x = torch::cat({x, torch::ones({x.size(0), x.size(1), 1}, x.options())}, -1);
        const auto g = e.g.to(kF64);  // [B, S, out]
        const auto x2 = x.reshape({-1, x.size(2)}), g2 = g.reshape({-1, g.size(2)});
        sums.a[i] = add_or_set(sums.a[i], x2.t().mm(x2));
        sums.g[i] = add_or_set(sums.g[i], g2.t().mm(g2));
        sums.grad[i] = add_or_set(sums.grad[i], (g * w.view({-1, 1, 1})).reshape({-1, g.size(2)}).t().mm(x2));
        sums.positions[i] += static_cast<double>(x2.size(0));
      }
    }
    for (size_t j = 0; j < diagonal_.size(); ++j) {
      const auto o = per_sample_gradient(pass, params, diagonal_[j]);  // [B, numel]
      sums.d[j] = add_or_set(sums.d[j], o.square().sum(0));
      sums.grad_d[j] = add_or_set(sums.grad_d[j], o.t().mv(w));
    }
  }

  /// Restores checkpointed factors once the block structure is known.
  void apply_pending() {
    if (pending_.empty()) return;
    const auto get = [&](const std::string& key) {
      const auto it = pending_.find(key);
      if (it == pending_.end()) throw CheckpointError("optimizer state lacks '" + key + "' (K-FAC blocks differ)");
      return it->second.to(device_);  // checkpoints hold host tensors
    };
    const auto weight = get("kfac/ema_weight");
    for (size_t i = 0; i < blocks_.size(); ++i) {
      const auto& name = names_[blocks_[i].weight];
      a_[i] = get("kfac/A/" + name);
      g_[i] = get("kfac/G/" + name);
      repeats_[i] = get("kfac/repeats/" + name).item<double>();
    }
    for (size_t j = 0; j < diagonal_.size(); ++j) d_[j] = get("kfac/D/" + names_[diagonal_[j]]);
    ema_weight_ = weight.item<double>();
    pending_.clear();
  }

  OptimOptions options_;
  batching::MemoryBudget budget_;
  std::vector<std::string> names_;   ///< trainable parameter names, in trainable_parameters() order
  PerSampleChunk chunk_;             ///< walkers per recorded pass
  bool structured_ = false;          ///< blocks_ and diagonal_ known
  std::vector<KroneckerBlock> blocks_;
  std::vector<int> diagonal_;        ///< parameters with a diagonal block
  std::vector<torch::Tensor> a_, g_, d_;  ///< moving averages (float64)
  std::vector<double> repeats_;      ///< moving averages of positions per walker S̄
  double ema_weight_ = 0;            ///< Σ_t ρ^(T−t): 0 before the first step
  double applied_lr_ = std::numeric_limits<double>::quiet_NaN();  ///< the last step's (norm-constrained) rate
  TensorMap pending_;                ///< loaded state not yet matched to blocks
  torch::Device device_{torch::kCPU};  ///< where the parameters (and the factors) live
};

}  // namespace

std::unique_ptr<Optimizer> make_kfac(const OptimOptions& options, WaveFunction& wf,
                                     const batching::MemoryBudget& budget) {
  return std::make_unique<KfacOptimizer>(options, wf, budget);
}

}  // namespace nnvmc
