/// @file op_counts.cpp
/// Operator counts from libtorch's Kineto profiler.
#include "train/op_counts.hpp"

#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/torch.h>

#include <algorithm>
#include <set>
#include <tuple>
#include <vector>

#include "core/errors.hpp"

namespace nnvmc {

bool is_sync_op(const std::string& name) {
  static const char* const kSync[] = {"aten::_local_scalar_dense", "aten::nonzero",  "aten::nonzero_static",
                                      "aten::masked_select",        "aten::_unique2", "aten::unique_consecutive",
                                      "aten::unique_dim"};
  for (const char* s : kSync)
    if (name == s) return true;
  return false;
}

bool is_view_op(const std::string& name) {
  static const std::set<std::string> kView = {
      "aten::view",        "aten::reshape",    "aten::_reshape_alias", "aten::_unsafe_view", "aten::as_strided",
      "aten::transpose",   "aten::t",          "aten::permute",        "aten::movedim",      "aten::expand",
      "aten::expand_as",   "aten::slice",      "aten::select",         "aten::narrow",       "aten::unsqueeze",
      "aten::squeeze",     "aten::split",      "aten::split_with_sizes", "aten::unbind",     "aten::chunk",
      "aten::alias",       "aten::detach",     "aten::detach_",        "aten::resolve_conj", "aten::resolve_neg",
      "aten::empty",       "aten::empty_like", "aten::empty_strided",  "aten::lift_fresh",   "aten::view_as",
      "aten::diagonal",    "aten::flatten",    "aten::unflatten",      "aten::contiguous",   "aten::_unsafe_split",
      "aten::is_nonzero",  "aten::size",       "aten::stride",         "aten::numel",        "aten::dim"};
  return kView.count(name) > 0;
}

OpCounts count_ops(const std::function<void()>& f) {
  namespace prof = torch::autograd::profiler;
  using torch::profiler::impl::ActivityType;
  using torch::profiler::impl::ProfilerConfig;
  using torch::profiler::impl::ProfilerState;
  if (prof::isProfilerEnabledInMainThread()) throw Error("count_ops: a profiler is already active");
  const ProfilerConfig config(ProfilerState::KINETO);
  const std::set<ActivityType> activities{ActivityType::CPU};
  prof::prepareProfiler(config, activities);
  prof::enableProfiler(config, activities);
  try {
    f();
  } catch (...) {
    prof::disableProfiler();
    throw;
  }
  const auto result = prof::disableProfiler();
  OpCounts out;
  for (const auto& e : result->events()) {
    const std::string name = e.name();
    ++out.by_name[name];
    if (name.rfind("aten::", 0) == 0) ++out.aten;
    if (is_sync_op(name)) ++out.syncs;
  }
  // Nesting from the time intervals: on one thread, an operator inside another one's
  // [start, end] was called by it. Sweep each thread's ops in start order with a stack of the
  // enclosing ones.
  std::vector<std::tuple<std::uint64_t, std::uint64_t, std::int64_t, std::string>> ops;  // thread, start, -end, name
  for (const auto& e : result->events()) {
    std::string name = e.name();
    if (name.rfind("aten::", 0) == 0)
      ops.emplace_back(e.startThreadId(), e.startNs(), -static_cast<std::int64_t>(e.endNs()), std::move(name));
  }
  std::sort(ops.begin(), ops.end());
  std::vector<std::uint64_t> open_ends;  // ends of the enclosing ops on the current thread
  std::uint64_t thread = 0;
  for (const auto& [tid, start, neg_end, name] : ops) {
    if (tid != thread) open_ends.clear();
    thread = tid;
    while (!open_ends.empty() && open_ends.back() < start) open_ends.pop_back();
    if (open_ends.empty() && !is_view_op(name)) ++out.launches;
    open_ends.push_back(static_cast<std::uint64_t>(-neg_end));
  }
  return out;
}

}  // namespace nnvmc
