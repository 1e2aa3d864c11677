#include "ccsd/contractor.hpp"

#include <torch/torch.h>

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
  device_clock_ = batching::make_device_clock(torch::Device(options_.device));
}

Contractor::~Contractor() = default;

std::int64_t Contractor::begin_term() { return device_clock_ ? device_clock_->begin() : -1; }

void Contractor::end_term(const std::string& term, std::int64_t interval, double wall_start) {
  if (!device_clock_) {
    // the host, or a build without nnvmc's CUDA part on a CUDA device: the wall time once the
    // term's kernels are done
    batching::synchronize_device(torch::Device(options_.device));
    stats_[term].seconds += Usage::now().wall - wall_start;
    return;
  }
  device_clock_->end(interval);
  unharvested_.emplace(interval, term);
  if (unharvested_.size() >= 256) harvest(false);  // the events of passed terms go back to the pool
}

void Contractor::harvest(bool wait) const {
  if (!device_clock_) return;
  for (const auto& [id, seconds] : device_clock_->harvest(wait)) {
    const auto it = unharvested_.find(id);
    if (it == unharvested_.end()) continue;  // (every ended interval is entered; defensive)
    stats_[it->second].seconds += seconds;
    unharvested_.erase(it);
  }
}

const std::map<std::string, TermStats>& Contractor::stats() const {
  harvest(true);
  return stats_;
}

void Contractor::reset_stats() {
  harvest(true);
  stats_.clear();
}

torch::Tensor Contractor::operator()(const std::string& term, const std::string& spec,
                                     const std::vector<torch::Tensor>& ops) {
  const Usage u0 = Usage::now();
  const std::int64_t interval = begin_term();
  // a contraction that throws still ends its interval (an open one would hold its events)
  struct EndOnThrow {
    Contractor& c;
    const std::string& term;
    std::int64_t interval;
    double wall_start;
    bool armed = true;
    ~EndOnThrow() {
      if (armed) try {
          c.end_term(term, interval, wall_start);
        } catch (...) {
        }
    }
  } guard{*this, term, interval, u0.wall};
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
  guard.armed = false;
  end_term(term, interval, u0.wall);
  const Usage du = Usage::now() - u0;
  auto& s = stats_[term];
  if (explain_ && s.calls == 0) plans_.push_back(term + ": " + plan.explain());
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
  wall0_ = u.wall, cpu0_ = u.cpu(), sys0_ = u.sys, faults0_ = u.minor_faults;
  interval_ = c_.begin_term();
}

Contractor::Section::~Section() {
  try {
    c_.end_term(term_, interval_, wall0_);
  } catch (...) {  // a destructor must not throw; the term then lacks this section's time
  }
  const Usage u = Usage::now();
  auto& s = c_.stats_[term_];
  s.cpu_seconds += u.cpu() - cpu0_;
  s.sys_seconds += u.sys - sys0_;
  s.minor_faults += u.minor_faults - faults0_;
  s.flops += flops_;
  s.calls += 1;
}

}  // namespace nnvmc::ccsd
