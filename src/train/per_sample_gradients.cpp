#include "train/per_sample_gradients.hpp"

#include "batching/chunk_fit.hpp"
#include "batching/held_memory.hpp"
#include "core/errors.hpp"
#include "core/log.hpp"
#include "parallel/walker_threads.hpp"
#include "train/recorded_pass.hpp"

namespace nnvmc {

std::vector<torch::Tensor> trainable_parameters(WaveFunction& wf) {
  std::vector<torch::Tensor> out;
  for (const auto& p : wf.named_parameters())
    if (p.value().requires_grad()) out.push_back(p.value());
  return out;
}

std::int64_t parameter_count(const std::vector<torch::Tensor>& params) {
  std::int64_t n = 0;
  for (const auto& p : params) n += p.numel();
  return n;
}

torch::Tensor per_sample_log_gradients(WaveFunction& wf, const SystemTensors& sys, const torch::Tensor& r,
                                       std::int64_t chunk) {
  torch::Tensor out;
  per_sample_log_gradients_into(wf, sys, r, chunk, out);
  return out;
}

void per_sample_log_gradients_into(WaveFunction& wf, const SystemTensors& sys, const torch::Tensor& r,
                                   std::int64_t chunk, torch::Tensor& out) {
  if (chunk <= 0) throw InputError("per_sample_log_gradients: chunk must be > 0");
  const auto params = trainable_parameters(wf);
  const std::int64_t b = r.size(0), p = parameter_count(params);
  if (!out.defined() || out.size(0) != b || out.size(1) != p || out.scalar_type() != torch::kFloat64 ||
      out.device() != r.device())
    out = torch::empty({b, p}, torch::TensorOptions().dtype(torch::kFloat64).device(r.device()));
  // On the CPU, one part of the walkers per thread; the parts run at once, within the memory the
  // chunk was fitted to (parallel::split_chunk).
  const auto split = parallel::split_chunk(parallel::walker_parts(b, r.device().is_cpu()), chunk);
  const std::int64_t parts = split.parts, step = split.chunk;
  parallel::for_each_walker_part(b, parts, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t s = lo; s < hi; s += step) {
      const std::int64_t e = std::min(hi, s + step);
      const auto pass = record_pass(wf, sys, r.slice(0, s, e), params, std::min<std::int64_t>(step, kFallbackChunk));
      write_jacobian(pass, params, out.slice(0, s, e));
    }
  });
}

std::int64_t fit_per_sample_chunk(WaveFunction& wf, const SystemTensors& sys, const torch::Tensor& r,
                                  std::int64_t want, const batching::MemoryBudget& budget,
                                  std::int64_t reserved_bytes) {
  const std::int64_t b = r.size(0);
  if (want <= 0) want = b;
  if (budget.is_unlimited()) return want;
  batching::ChunkFitOptions o;
  o.key = "run.memory_budget";
  o.what = "walker (per-sample gradients)";
  o.probe_items = std::min<std::int64_t>(want, 8);
  o.cuda_device = static_cast<int>(r.get_device());  // −1 on the CPU
  o.reserved_bytes = reserved_bytes;
  const auto fit = batching::fit_chunk(
      [&](std::int64_t k) { per_sample_log_gradients(wf, sys, r.slice(0, 0, k), k); }, b, budget, o);
  // Walker parts (run at once) each pay the measured fixed memory: the chunk they share leaves
  // room for it. The reserved bytes (fit.fixed_bytes includes them) are held once, not per part.
  const std::int64_t parts = parallel::walker_parts(b, r.device().is_cpu());
  const std::int64_t measured_fixed = std::max<std::int64_t>(fit.fixed_bytes - std::max<std::int64_t>(reserved_bytes, 0), 0);
  const std::int64_t shared = fit.bytes_per_item > 0
                                  ? fit.chunk - ((parts - 1) * measured_fixed + fit.bytes_per_item - 1) / fit.bytes_per_item
                                  : fit.chunk;
  const std::int64_t chunk = std::max<std::int64_t>(1, std::min(want, shared));
  std::string context;
  if (parts > 1) context += strfmt(", shared by %lld walker parts", static_cast<long long>(parts));
  if (fit.held_bytes > 0)
    context += ", less " + batching::format_bytes(double(fit.held_bytes)) + " held by captured CUDA graphs";
  log::info(strfmt("per-sample gradients: %s per walker + %s fixed (measured) + %s kept for the step -> chunks of "
                   "%lld walkers for %s = %s%s",
                   batching::format_bytes(double(fit.bytes_per_item)).c_str(),
                   batching::format_bytes(double(measured_fixed)).c_str(),
                   batching::format_bytes(double(reserved_bytes)).c_str(), static_cast<long long>(chunk),
                   o.key.c_str(), batching::format_bytes(double(budget.bytes())).c_str(), context.c_str()));
  return chunk;
}

std::int64_t PerSampleChunk::operator()(WaveFunction& wf, const SystemTensors& sys, const torch::Tensor& r,
                                        std::int64_t want, const batching::MemoryBudget& budget,
                                        std::int64_t reserved_bytes) {
  const std::int64_t held = batching::held_bytes(r.is_cuda() ? static_cast<int>(r.get_device()) : -1);
  if (chunk_ == 0 || held > held_) {
    chunk_ = fit_per_sample_chunk(wf, sys, r, want, budget, reserved_bytes);
    held_ = held;
  }
  return chunk_;
}

void add_to_parameters(const std::vector<torch::Tensor>& params, const torch::Tensor& delta,
                       double alpha) {
  torch::NoGradGuard no_grad;
  std::int64_t offset = 0;
  for (const auto& p : params) {
    const auto n = p.numel();
    const auto d = delta.slice(0, offset, offset + n).reshape(p.sizes()).to(p.options());
    const_cast<torch::Tensor&>(p).add_(d, alpha);
    offset += n;
  }
  if (offset != delta.numel())
    throw NumericalError("add_to_parameters: update has " + std::to_string(delta.numel()) +
                         " entries, the model has " + std::to_string(offset));
}

}  // namespace nnvmc
