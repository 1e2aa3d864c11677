#include "train/optimizer.hpp"

#include <functional>
#include <map>

#include "batching/chunk_fit.hpp"
#include "batching/held_memory.hpp"
#include "core/errors.hpp"
#include "core/log.hpp"
#include "models/determinant_balance.hpp"
#include "train/distributed.hpp"
#include "train/kfac.hpp"
#include "train/natural_gradient.hpp"
#include "train/per_sample_gradients.hpp"

namespace nnvmc {

torch::Tensor clip_local_energies(const torch::Tensor& e, double width) {
  if (width == 0) return e;
  // The median of an even count is the mean of the two middle values (as numpy's, used by
  // FermiNet and DeepQMC); torch::median would take the lower one.
  const auto median = e.quantile(0.5);
  const auto mad = (e - median).abs().mean();
  return torch::clamp(e, median - width * mad, median + width * mad);
}

double determinant_balance_weight(const OptimOptions& o) {
  return o.determinant_balance.value_or(o.type == "adam" ? kDeterminantBalanceDefault : 0.0);
}

bool all_finite(const std::vector<torch::Tensor>& tensors) {
  std::vector<torch::Tensor> flags;
  flags.reserve(tensors.size());
  for (const auto& t : tensors)
    if (t.defined()) flags.push_back(torch::isfinite(t.detach()).all());
  return flags.empty() || torch::stack(flags).all().item<bool>();
}

namespace {

/// Adam with learning rate lr / (1 + t / lr_delay).
class AdamOptimizer final : public Optimizer {
 public:
  AdamOptimizer(const OptimOptions& o, WaveFunction& wf, const batching::MemoryBudget& budget)
      : options_(o),
        budget_(budget),
        penalty_weight_(determinant_balance_weight(o)),
        adam_(wf.parameters(), torch::optim::AdamOptions(o.lr)
                                   .betas({o.beta1, o.beta2})
                                   .eps(o.epsilon)) {
    for (const auto& p : wf.named_parameters()) names_.push_back(p.key());
  }

  bool step(WaveFunction& wf, const std::vector<WalkerBatch>& batches, std::int64_t t,
            StageTimers& timers) override {
    {
      auto scope = timers.scope("gradient");
      adam_.zero_grad();
      const double per_molecule = 1.0 / static_cast<double>(batches.size());
      for (const auto& b : batches) {  // gradients accumulate over molecules
        // Clipping and centring use all ranks' walkers; this rank's walkers contribute their
        // share of the mean, and the gradients are summed over ranks below.
        std::int64_t offset = 0;
        const auto e = clip_local_energies(all_walkers(b.e_loc.detach(), &offset), options_.clip_width);
        const auto centred = own_rows(e - e.mean(), offset, b.e_loc.size(0));
        const bool penalty = penalty_weight_ > 0 && e.numel() > 1;
        const auto sigma = penalty ? energy_std(e) : torch::Tensor();
        // Σ over this rank's walkers / all walkers' count: the share of the mean (no NaN when a
        // rank's walkers were all left out). The walkers go through in chunks that fit the
        // memory budget (the backward pass holds every activation of its walkers); a rank
        // without walkers still makes one (empty) pass, so that its gradients are defined.
        const double total = static_cast<double>(e.size(0));
        const auto r = b.r.detach();
        const std::int64_t n = r.size(0), chunk = chunk_walkers(wf, *b.sys, r, penalty ? sigma : torch::Tensor());
        for (std::int64_t lo = 0; lo == 0 || lo < n; lo += chunk) {
          const std::int64_t hi = std::min(n, lo + chunk);
          const auto x = r.slice(0, lo, hi);
          auto loss = 2.0 * per_molecule * (centred.slice(0, lo, hi) * wf.forward(x, *b.sys).logabs).sum() / total;
          if (penalty && hi > lo) {
            const auto p = determinant_balance_penalty(wf, x, *b.sys, sigma);  // a mean over x's walkers
            if (p.defined()) loss = loss + 2.0 * per_molecule * penalty_weight_ * (static_cast<double>(hi - lo) / total) * p;
          }
          loss.backward();
        }
      }
    }
    auto scope = timers.scope("optimizer");
    std::vector<torch::Tensor> grads;
    for (const auto& p : wf.parameters()) grads.push_back(p.grad());
    if (parallel::world().size() > 1) {
      std::vector<torch::Tensor> defined;
      for (const auto& g : grads)
        if (g.defined()) defined.push_back(g);
      sum_over_ranks_(defined);
    }
    if (!all_finite(grads)) return false;
    for (auto& group : adam_.param_groups())
      static_cast<torch::optim::AdamOptions&>(group.options()).lr(learning_rate(t));
    adam_.step();
    return true;
  }

  double learning_rate(std::int64_t t) const override {
    return options_.lr / (1.0 + static_cast<double>(t) / options_.lr_delay);
  }

  TensorMap state() const override {
    TensorMap out;
    const auto& params = adam_.param_groups().at(0).params();
    for (size_t i = 0; i < params.size(); ++i) {
      const auto it = adam_.state().find(params[i].unsafeGetTensorImpl());
      if (it == adam_.state().end()) continue;
      const auto& s = static_cast<const torch::optim::AdamParamState&>(*it->second);
      out["adam/exp_avg/" + names_[i]] = s.exp_avg();
      out["adam/exp_avg_sq/" + names_[i]] = s.exp_avg_sq();
      out["adam/step/" + names_[i]] = torch::tensor(static_cast<double>(s.step()), torch::kFloat64);
    }
    return out;
  }

  void load_state(const TensorMap& state) override {
    auto& params = adam_.param_groups().at(0).params();
    for (size_t i = 0; i < params.size(); ++i) {
      const auto a = state.find("adam/exp_avg/" + names_[i]);
      if (a == state.end()) {  // parameter never updated: no moments (also after a restore)
        adam_.state().erase(params[i].unsafeGetTensorImpl());
        continue;
      }
      const auto b = state.find("adam/exp_avg_sq/" + names_[i]);
      const auto c = state.find("adam/step/" + names_[i]);
      if (b == state.end() || c == state.end())
        throw CheckpointError("optimizer state of '" + names_[i] + "' is incomplete");
      // (moments of another shape failed in the first step, in libtorch's words)
      for (const auto* entry : {&*a, &*b})
        if (entry->second.sizes() != params[i].sizes())
          throw CheckpointError("optimizer state '" + entry->first + "' has shape " + c10::str(entry->second.sizes()) +
                                ", its parameter " + c10::str(params[i].sizes()) + ": the file is damaged");
      if (c->second.numel() != 1)
        throw CheckpointError("optimizer state '" + c->first + "' is not one number: the file is damaged");
      auto s = std::make_unique<torch::optim::AdamParamState>();
      s->exp_avg(a->second.to(params[i].options()).clone());
      s->exp_avg_sq(b->second.to(params[i].options()).clone());
      s->step(static_cast<int64_t>(c->second.item<double>()));
      adam_.state()[params[i].unsafeGetTensorImpl()] = std::move(s);
    }
  }

 private:
  /// Walkers per forward and backward pass of the gradient of molecule `sys`: all of r's
  /// [B, N, 3] without a budget, else measured (one and a few walkers' pass, with the
  /// determinant-balance penalty when `sigma` is defined) and fitted to the budget; measured
  /// again when the device holds more memory than when it was fitted (captured CUDA graphs).
  std::int64_t chunk_walkers(WaveFunction& wf, const SystemTensors& sys, const torch::Tensor& r,
                             const torch::Tensor& sigma) {
    const std::int64_t n = r.size(0);
    if (budget_.is_unlimited() || n == 0) return std::max<std::int64_t>(n, 1);
    const int device = r.is_cuda() ? static_cast<int>(r.get_device()) : -1;
    const std::int64_t held = batching::held_bytes(device);
    auto& fitted = chunks_[&sys];
    const std::int64_t electrons = r.size(1), atoms = sys.n_atoms();
    if (fitted.walkers == 0 || held > fitted.held || fitted.electrons != electrons || fitted.atoms != atoms) {
      batching::ChunkFitOptions o;
      o.key = "run.memory_budget";
      o.what = "walker (gradient of log|psi|)";
      o.probe_items = std::min<std::int64_t>(n, 8);
      o.cuda_device = device;
      const auto params = wf.parameters();
      const auto fit = batching::fit_chunk(
          [&](std::int64_t k) {
            const auto x = r.slice(0, 0, k);
            auto loss = wf.forward(x, sys).logabs.sum();
            if (sigma.defined())
              if (const auto p = determinant_balance_penalty(wf, x, sys, sigma); p.defined()) loss = loss + p;
            (void)torch::autograd::grad({loss}, params, {}, false, false, /*allow_unused=*/true);
          },
          n, budget_, o);
      fitted.walkers = std::max<std::int64_t>(1, fit.chunk);
      fitted.held = held;
      fitted.electrons = electrons;
      fitted.atoms = atoms;
      if (fitted.walkers < n)
        log::info(strfmt("gradient: %s per walker + %s fixed (measured) -> chunks of %lld walkers for "
                         "run.memory_budget = %s",
                         batching::format_bytes(double(fit.bytes_per_item)).c_str(),
                         batching::format_bytes(double(fit.fixed_bytes)).c_str(),
                         static_cast<long long>(fitted.walkers), batching::format_bytes(double(budget_.bytes())).c_str()));
    }
    return fitted.walkers;
  }

  struct Fitted {
    std::int64_t walkers = 0;  ///< chunk (0: not fitted yet)
    std::int64_t held = 0;     ///< held memory when fitted
    std::int64_t electrons = 0, atoms = 0;  ///< of the molecule fitted (an address may be reused)
  };

  OptimOptions options_;
  batching::MemoryBudget budget_;  ///< bounds each chunk's forward and backward pass
  std::map<const SystemTensors*, Fitted> chunks_;  ///< per molecule (molecules differ in size)
  double penalty_weight_;  ///< determinant-balance weight (0: off)
  torch::optim::Adam adam_;
  std::vector<std::string> names_;
};

using OptimizerFactory =
    std::function<std::unique_ptr<Optimizer>(const OptimOptions&, WaveFunction&, const batching::MemoryBudget&)>;

/// Memory an optimizer takes beside the parameters, from their shapes (see optimizer_memory_estimate).
using MemoryEstimate = std::function<OptimizerMemory(const std::vector<torch::Tensor>& params)>;

/// One optimizer: how to build it and how much memory it takes beside the parameters.
struct OptimizerEntry {
  OptimizerFactory make;
  MemoryEstimate memory;
};

double tensor_bytes(const torch::Tensor& t) { return static_cast<double>(t.numel() * t.element_size()); }

/// Per parameter: the gradient (parameter dtype) plus `kept` and `scratch` float64 vectors.
OptimizerMemory per_parameter(const std::vector<torch::Tensor>& params, double kept, double scratch) {
  OptimizerMemory m;
  for (const auto& p : params) {
    const double n = 8.0 * static_cast<double>(p.numel());
    m.kept += kept * n;
    m.step += tensor_bytes(p) + scratch * n;
  }
  return m;
}

/// Optimizers by `optim.type` name.
const std::map<std::string, OptimizerEntry>& optimizer_registry() {
  static const std::map<std::string, OptimizerEntry> registry = [] {
    std::map<std::string, OptimizerEntry> r;
    r["adam"] = {[](const OptimOptions& o, WaveFunction& wf, const batching::MemoryBudget& budget) -> std::unique_ptr<Optimizer> {
                   return std::make_unique<AdamOptimizer>(o, wf, budget);
                 },
                 // exp_avg and exp_avg_sq kept, the gradient, all in the parameters' dtype
                 [](const std::vector<torch::Tensor>& params) {
                   OptimizerMemory m;
                   for (const auto& p : params) m.kept += 2 * tensor_bytes(p), m.step += tensor_bytes(p);
                   return m;
                 }};
    // spring keeps the previous update; a step makes the update and its scaled copy (float64)
    r["spring"] = {make_natural_gradient, [](const std::vector<torch::Tensor>& params) { return per_parameter(params, 1, 2); }};
    for (const char* name : {"sr", "minsr"})
      r[name] = {make_natural_gradient, [](const std::vector<torch::Tensor>& params) { return per_parameter(params, 0, 2); }};
    // A weight [out, in] may form a Kronecker block: its factors (in + 1)² and out² are kept as
    // moving averages; a step adds their sums, new averages and Cholesky factors, the gradient
    // sums and the update (float64).
    r["kfac"] = {make_kfac, [](const std::vector<torch::Tensor>& params) {
                   OptimizerMemory m = per_parameter(params, 0, 2);
                   for (const auto& p : params)
                     if (p.dim() == 2) {
                       const double in = static_cast<double>(p.size(1)) + 1, out = static_cast<double>(p.size(0));
                       m.kept += 8.0 * (in * in + out * out);
                       m.step += 3 * 8.0 * (in * in + out * out);
                     }
                   return m;
                 }};
    return r;
  }();
  return registry;
}

const OptimizerEntry& optimizer_entry(const std::string& type) {
  const auto& registry = optimizer_registry();
  const auto it = registry.find(type);
  if (it == registry.end()) throw ConfigError("'optim.type': unknown optimizer '" + type + "'");
  return it->second;
}

}  // namespace

std::unique_ptr<Optimizer> make_optimizer(const OptimOptions& options, WaveFunction& wf,
                                          const batching::MemoryBudget& budget) {
  return optimizer_entry(options.type).make(options, wf, budget);
}

OptimizerMemory optimizer_memory_estimate(const OptimOptions& options, WaveFunction& wf) {
  return optimizer_entry(options.type).memory(trainable_parameters(wf));
}

double check_training_memory(const OptimOptions& options, WaveFunction& wf, bool cpu, std::int64_t device_room,
                             std::int64_t host_room) {
  std::int64_t count = 0;
  double held = 0;  // every parameter is copied (undo, checkpoints), the frozen ones too
  for (const auto& p : wf.parameters()) held += tensor_bytes(p), count += p.numel();
  const TrainingMemory need = training_memory_estimate(optimizer_memory_estimate(options, wf), held);
  const auto refuse = [&](double bytes, std::int64_t room, const char* where) {
    if (room < 0 || bytes <= static_cast<double>(room)) return;
    throw BudgetError(strfmt("'model.%s': this model is too large to train here: its %lld parameters take %s, and "
                             "training them with optim.type = %s needs about %s more%s (gradient, optimizer state, "
                             "and the copies of both that undo a failed step and are written to checkpoints), but "
                             "only %s is left to this process; use smaller widths, fewer layers or fewer "
                             "determinants%s",
                             wf.type().c_str(), static_cast<long long>(count), batching::format_bytes(held).c_str(),
                             options.type.c_str(), batching::format_bytes(bytes).c_str(), where,
                             batching::format_bytes(double(room)).c_str(),
                             options.type == "kfac" ? " (K-FAC's factors grow with the square of each layer's width)"
                                                    : ""));
  };
  if (cpu) {
    refuse(need.total(), device_room, "");
    return need.total();
  }
  refuse(need.device, device_room, " on the GPU");
  refuse(need.host, host_room, " in host memory");
  return need.device;
}

TrainingMemory training_memory_estimate(const OptimizerMemory& optimizer, double parameter_bytes) {
  const double copy = parameter_bytes + optimizer.kept;
  return {optimizer.kept + optimizer.step + copy, 3 * copy};
}

}  // namespace nnvmc
