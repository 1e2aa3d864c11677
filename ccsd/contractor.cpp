#include "ccsd/contractor.hpp"

#include <torch/torch.h>

#include <optional>

#include "batching/backend.hpp"
#include "batching/contract.hpp"
#include "batching/workspace.hpp"
#include "ccsd/usage.hpp"

namespace nnvmc::ccsd {

namespace {
/// Bytes of the distinct elements `t` views (a broadcast axis, stride 0, counts once).
double distinct_bytes(const torch::Tensor& t) {
  double n = double(t.element_size());
  for (std::int64_t d = 0; d < t.dim(); ++d)
    if (t.stride(d) != 0) n *= double(t.size(d));
  return n;
}
}  // namespace

Contractor::Contractor(batching::PlanOptions options, bool explain, std::shared_ptr<batching::GemmBackend> backend)
    : options_(std::move(options)), explain_(explain), backend_(std::move(backend)) {
  batching::ensure_device_runtime(options_.device);  // before torch is asked anything about CUDA
  // The staged cuBLAS backend is planned with device "cpu" (its operands are host tensors) but
  // multiplies on the GPU: plan its batches with the GPU's rates (GEMM rate, shape efficiency,
  // link) and the host's copy bandwidth (its layout copies and staging run on the host, those
  // of intermediates on the GPU).
  if (!options_.cost && options_.backend == batching::BackendKind::cublas) {
    batching::CostModel m = batching::CostModel::measure("cuda");
    m.device_copy_bytes_per_s = m.copy_bytes_per_s;
    m.copy_bytes_per_s = batching::CostModel::measure("cpu").copy_bytes_per_s;
    options_.cost = m;
  } else if (!options_.cost) {
    options_.cost = batching::CostModel::measure(options_.device);
  }
  // buffers are reused from one iteration to the next (held within the budget)
  if (!options_.workspace) options_.workspace = std::make_shared<batching::Workspace>();
  device_timing_ = batching::device_stage_timing(torch::Device(options_.device));
  device_timing_.attach(term_times_);
}

Contractor::~Contractor() = default;

const std::map<std::string, TermStats>& Contractor::stats() const {
  for (const auto& [term, e] : term_times_.stages()) stats_[term].seconds = e.seconds;
  return stats_;
}

void Contractor::reset_stats() {
  term_times_.reset();
  stats_.clear();
}

torch::Tensor Contractor::operator()(const std::string& term, const std::string& spec,
                                     const std::vector<torch::Tensor>& ops) {
  const Usage u0 = Usage::now();
  std::optional<StageTimers::Scope> timed;  // the term's time, to the end of its kernels
  timed.emplace(term_times_, term);
  const auto es = batching::parse_einsum(spec);
  const auto ext = batching::label_extents(es, [&] {
    std::vector<std::vector<std::int64_t>> s;
    for (const auto& t : ops) s.emplace_back(t.sizes().begin(), t.sizes().end());
    return s;
  }());
  std::vector<std::int64_t> shape;
  for (char l : es.output) shape.push_back(ext.at(l));
  torch::Tensor out = torch::empty(shape, ops[0].options());
  const auto plan = batching::plan_contraction(spec, ops, out, options_);
  const auto rep = backend_ ? batching::execute(plan, ops, out, options_, *backend_)
                            : batching::execute(plan, ops, out, options_);
  timed.reset();
  const Usage du = Usage::now() - u0;
  auto& s = stats_[term];
  if (explain_) {  // every distinct plan (a term's contractions differ: the dressing's, (T)'s blocks)
    std::string line = term + ": " + plan.explain();
    if (seen_plans_.insert(line).second) {
      if (plans_per_term_[term]++ < kPlansPerTerm) plans_.push_back(std::move(line));
      else ++more_plans_[term];
    }
  }
  s.cpu_seconds += du.cpu();
  s.sys_seconds += du.sys;
  s.minor_faults += du.minor_faults;
  s.copy_bytes += double(rep.copy_bytes);
  s.bytes_h2d += rep.bytes_h2d;
  s.bytes_d2h += rep.bytes_d2h;
  bytes_h2d_ += rep.bytes_h2d;
  bytes_d2h_ += rep.bytes_d2h;
  s.flops += rep.flops;
  for (const auto& t : ops) s.operand_bytes += distinct_bytes(t);
  s.operand_bytes += distinct_bytes(out);
  s.batches += rep.batches;
  s.peak_bytes = std::max(s.peak_bytes, rep.peak_bytes);
  s.calls += 1;
  s.strategy = rep.strategy;
  return out;
}

Contractor::Section::Section(Contractor& c, std::string term, double flops)
    : c_(c), term_(std::move(term)), flops_(flops) {
  const Usage u = Usage::now();
  cpu0_ = u.cpu(), sys0_ = u.sys, faults0_ = u.minor_faults;
  timed_.emplace(c.term_times_, term_);
}

Contractor::Section::~Section() {
  timed_.reset();
  const Usage u = Usage::now();
  auto& s = c_.stats_[term_];
  s.cpu_seconds += u.cpu() - cpu0_;
  s.sys_seconds += u.sys - sys0_;
  s.minor_faults += u.minor_faults - faults0_;
  s.flops += flops_;
  s.calls += 1;
}

}  // namespace nnvmc::ccsd
