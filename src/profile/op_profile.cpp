#include "profile/op_profile.hpp"

#include <torch/csrc/autograd/profiler_kineto.h>

#include <algorithm>
#include <cstdlib>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include "core/errors.hpp"
#include "profile/stage_recorder.hpp"

namespace nnvmc::profile {

namespace prof = torch::autograd::profiler;
namespace pimpl = torch::profiler::impl;

double StageOps::seconds() const {
  double s = 0;
  for (const auto& [g, st] : groups) s += st.seconds;
  return s;
}
double StageOps::flops() const {
  double s = 0;
  for (const auto& [g, st] : groups) s += st.flops;
  return s;
}
double StageOps::bytes() const {
  double s = 0;
  for (const auto& [g, st] : groups) s += st.bytes;
  return s;
}

namespace {

// Kineto activity types (libkineto/ActivityType.h).
constexpr int kCpuOp = 0, kUserAnnotation = 1, kGpuMemcpy = 3, kGpuMemset = 4, kKernel = 5;

struct Event {
  std::string name;
  std::uint64_t start = 0, end = 0, thread = 0, correlation = 0, linked = 0;
  int type = 0;
  double reported_flops = 0;
  std::vector<OpInput> inputs;
  int parent = -1;
  double child_seconds = 0;
  bool descendant_flops = false, descendant_bytes = false;  ///< an operator below it has an estimate
  bool owner = false;         ///< counts its own FLOPs and bytes, and those below it none
  bool inside_owner = false;  ///< below an owner
  OpCost cost;
};

/// Whether the profiler's events carry structuredInputShapes() (tensor lists too; newer torch)
/// or only shapes() (one shape per tensor input; torch 2.11, the device image's version).
template <class E, class = void>
struct HasStructuredShapes : std::false_type {};
template <class E>
struct HasStructuredShapes<E, std::void_t<decltype(std::declval<const E&>().structuredInputShapes())>>
    : std::true_type {};

/// The inputs of one profiled op with their shapes and element sizes (a template so that the
/// branch for the other torch version is never compiled).
template <class E>
std::vector<OpInput> inputs_of(const E& e, int default_bytes) {
  std::vector<OpInput> in;
  const auto dtypes = e.dtypes();
  const auto dtype_at = [&](size_t i) { return i < dtypes.size() ? dtypes[i] : std::string(); };
  if constexpr (HasStructuredShapes<E>::value) {
    const auto shapes = e.structuredInputShapes();
    for (size_t i = 0; i < shapes.size(); ++i) {
      OpInput x;
      if (const auto* s = std::get_if<std::vector<int64_t>>(&shapes[i])) {
        x.element_bytes = dtype_bytes(dtype_at(i));
        if (x.element_bytes > 0) x.shapes.push_back(*s);
      } else if (const auto* l = std::get_if<std::vector<std::vector<int64_t>>>(&shapes[i])) {
        x.element_bytes = default_bytes;
        x.shapes = *l;
      }
      if (x.element_bytes > 0) in.push_back(std::move(x));
    }
  } else {
    (void)default_bytes;  // tensor lists (e.g. cat's inputs) are not reported: their bytes are missed
    const auto shapes = e.shapes();
    for (size_t i = 0; i < shapes.size(); ++i) {
      OpInput x;
      x.element_bytes = dtype_bytes(dtype_at(i));
      if (x.element_bytes > 0 && !shapes[i].empty()) {
        x.shapes.push_back(shapes[i]);
        in.push_back(std::move(x));
      }
    }
  }
  return in;
}

/// The stage names a stage's numbers also count toward: "a.b" → {"a.b", "a"}.
std::vector<std::string> with_ancestors(const std::string& stage) {
  std::vector<std::string> out{stage};
  for (auto p = stage.rfind('.'); p != std::string::npos; p = stage.rfind('.', p - 1)) {
    out.push_back(stage.substr(0, p));
    if (p == 0) break;
  }
  return out;
}

}  // namespace

namespace {
double median_of_values(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0.0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
}  // namespace

std::map<std::string, StageOps> median_of(const std::vector<std::map<std::string, StageOps>>& its) {
  std::map<std::string, StageOps> out;
  for (const auto& it : its)
    for (const auto& [stage, so] : it) {
      auto& o = out[stage];
      for (const auto& [g, gs] : so.groups) o.groups[g];
      for (const auto& [n, sec] : so.op_seconds) o.op_seconds[n];
    }
  const auto pick = [&](auto&& get) {
    std::vector<double> v;
    for (const auto& it : its) v.push_back(get(it));
    return median_of_values(v);
  };
  for (auto& [stage, o] : out) {
    const auto find = [&](const std::map<std::string, StageOps>& it) -> const StageOps* {
      const auto f = it.find(stage);
      return f == it.end() ? nullptr : &f->second;
    };
    o.wall_seconds = pick([&](const auto& it) { const auto* s = find(it); return s ? s->wall_seconds : 0.0; });
    o.coverage = pick([&](const auto& it) {
      const auto* s = find(it);
      return s && s->wall_seconds > 0 ? s->seconds() / s->wall_seconds : 0.0;
    });
    for (auto& [g, gs] : o.groups) {
      const auto field = [&](double GroupStats::*m) {
        return pick([&](const auto& it) {
          const auto* s = find(it);
          if (!s) return 0.0;
          const auto f = s->groups.find(g);
          return f == s->groups.end() ? 0.0 : f->second.*m;
        });
      };
      gs.seconds = field(&GroupStats::seconds);
      gs.calls = field(&GroupStats::calls);
      gs.flops = field(&GroupStats::flops);
      gs.bytes = field(&GroupStats::bytes);
      gs.reported_flops = field(&GroupStats::reported_flops);
    }
    for (auto& [n, sec] : o.op_seconds)
      sec = pick([&](const auto& it) {
        const auto* s = find(it);
        if (!s) return 0.0;
        const auto f = s->op_seconds.find(n);
        return f == s->op_seconds.end() ? 0.0 : f->second;
      });
  }
  return out;
}

OpProfiler::OpProfiler(bool cuda, int default_element_bytes)
    : cuda_(cuda), default_element_bytes_(default_element_bytes) {
  // libkineto prints every profiler start/stop (its USDT and STAGE lines) and, on a machine
  // without a GPU, "gpuGetDeviceCount failed" to stderr; level 6 is above all of them. A level
  // the user set is kept. (Read when libkineto initialises, i.e. at the first start().)
  setenv("KINETO_LOG_LEVEL", "6", /*overwrite=*/0);
}

OpProfiler::~OpProfiler() {
  if (!running_) return;
  try {
    prof::disableProfiler();
  } catch (...) {  // nothing to report from a destructor
  }
}

void OpProfiler::start() {
  const pimpl::ProfilerConfig config(pimpl::ProfilerState::KINETO, /*report_input_shapes=*/true,
                                     /*profile_memory=*/false, /*with_stack=*/false, /*with_flops=*/true);
  std::set<pimpl::ActivityType> activities{pimpl::ActivityType::CPU};
  if (cuda_) activities.insert(pimpl::ActivityType::CUDA);
  prof::prepareProfiler(config, activities);
  prof::enableProfiler(config, activities);
  running_ = true;
}

std::map<std::string, StageOps> OpProfiler::stop() {
  if (!running_) throw Error("OpProfiler::stop without start");
  running_ = false;
  const auto result = prof::disableProfiler();
  std::vector<Event> ops, stages, kernels;
  // CPU operator → index in ops: a kernel's linked correlation id is that of the (innermost) CPU
  // operator that launched it (torch's own profiler matches them the same way)
  std::unordered_map<std::uint64_t, std::size_t> op_by_correlation;
  for (const auto& k : result->events()) {
    Event e;
    e.name = k.name();
    e.start = k.startNs();
    e.end = k.endNs();
    e.thread = k.startThreadId();
    e.type = k.activityType();
    e.correlation = k.correlationId();
    e.linked = k.linkedCorrelationId();
    // stage ranges are host-side annotations; on CUDA Kineto repeats them as GPU-side
    // annotations (type 2, one per stream), which must not count again
    if (e.name.rfind(kStageRangePrefix, 0) == 0 && (e.type == kUserAnnotation || e.type == kCpuOp)) {
      e.name = e.name.substr(kStageRangePrefix.size());
      stages.push_back(std::move(e));
    } else if (e.type == kCpuOp) {
      e.reported_flops = static_cast<double>(k.flops());
      e.inputs = inputs_of(k, default_element_bytes_);
      ops.push_back(std::move(e));
    } else if (e.type == kKernel || e.type == kGpuMemcpy || e.type == kGpuMemset) {
      kernels.push_back(std::move(e));
    }  // runtime/driver calls and annotations: not needed
  }
  // Nesting of CPU events per thread: parents start first and end last.
  std::vector<std::size_t> order(ops.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const auto &x = ops[a], &y = ops[b];
    if (x.thread != y.thread) return x.thread < y.thread;
    if (x.start != y.start) return x.start < y.start;
    return x.end > y.end;
  });
  std::vector<std::size_t> stack;
  for (std::size_t idx : order) {
    auto& e = ops[idx];
    while (!stack.empty() && (ops[stack.back()].thread != e.thread || ops[stack.back()].end <= e.start))
      stack.pop_back();
    if (!stack.empty()) {
      e.parent = static_cast<int>(stack.back());
      ops[stack.back()].child_seconds += 1e-9 * static_cast<double>(e.end - e.start);
    }
    stack.push_back(idx);
    if (e.correlation) op_by_correlation[e.correlation] = idx;
  }
  // Work is counted once. The deepest operator with a FLOP estimate owns its FLOPs and bytes,
  // and the operators below it count nothing: mm under matmul; linalg_lu_factor_ex, whose only
  // children copy its input (counted at the copy, the factorisation had 0 FLOPs). Bytes outside
  // such operators count at the deepest operator that moves any.
  std::vector<OpCost> own(ops.size());
  for (auto it = order.rbegin(); it != order.rend(); ++it) {  // children before parents
    auto& e = ops[*it];
    if (e.type != kCpuOp) continue;
    own[*it] = estimate_cost(e.name, classify_op(e.name), e.inputs, e.reported_flops);
    e.owner = own[*it].flops > 0 && !e.descendant_flops;
    if (e.parent < 0) continue;
    ops[e.parent].descendant_flops |= e.descendant_flops || own[*it].flops > 0;
    ops[e.parent].descendant_bytes |= e.descendant_bytes || own[*it].bytes > 0;
  }
  for (std::size_t idx : order) {  // parents before children
    auto& e = ops[idx];
    if (e.type != kCpuOp) continue;
    e.inside_owner = e.parent >= 0 && (ops[e.parent].owner || ops[e.parent].inside_owner);
    if (!e.inside_owner && (e.owner || (!e.descendant_flops && !e.descendant_bytes))) e.cost = own[idx];
  }
  // Innermost stage range containing a time point.
  std::sort(stages.begin(), stages.end(), [](const Event& a, const Event& b) { return a.start < b.start; });
  const auto stage_at = [&](std::uint64_t t) -> std::string {
    const Event* best = nullptr;
    for (const auto& s : stages) {
      if (s.start > t) break;
      if (t < s.end && (!best || s.end - s.start < best->end - best->start)) best = &s;
    }
    return best ? best->name : kOutsideStages;
  };
  std::map<std::string, StageOps> out;
  for (const auto& s : stages) out[s.name].wall_seconds += 1e-9 * static_cast<double>(s.end - s.start);
  const auto add = [&](const std::string& stage, const std::string& name, OpGroup g, double seconds,
                       const OpCost& cost, double reported) {
    for (const auto& st : with_ancestors(stage)) {
      auto& ops_of = out[st];
      auto& gs = ops_of.groups[group_name(g)];
      gs.seconds += seconds;
      gs.calls += 1;
      gs.flops += cost.flops;
      gs.bytes += cost.bytes;
      gs.reported_flops += reported;
      ops_of.op_seconds[name] += seconds;
    }
  };
  if (!cuda_ || kernels.empty()) {
    for (const auto& e : ops) {
      if (e.type != kCpuOp) continue;
      const double self = std::max(0.0, 1e-9 * static_cast<double>(e.end - e.start) - e.child_seconds);
      add(stage_at(e.start), e.name, classify_op(e.name), self, e.cost, e.reported_flops);
    }
  } else {
    // CUDA: kernel time, grouped by the operator that launched the kernel (the CPU operator its
    // linked correlation id names); stages by time (the recorder synchronises at stage ends).
    std::vector<bool> costed(ops.size(), false);
    for (const auto& k : kernels) {
      std::string name = k.name;
      OpGroup g = k.type == kKernel ? OpGroup::other : OpGroup::data_movement;
      OpCost cost;
      const auto r = k.linked ? op_by_correlation.find(k.linked) : op_by_correlation.end();
      if (r != op_by_correlation.end()) {
        const std::size_t op = r->second;
        name = ops[op].name;
        g = classify_op(name);
        if (!costed[op]) cost = ops[op].cost;  // once per operator call, at its first kernel
        costed[op] = true;
      }
      add(stage_at(k.start), name, g, 1e-9 * static_cast<double>(k.end - k.start), cost, 0);
    }
  }
  return out;
}

}  // namespace nnvmc::profile
