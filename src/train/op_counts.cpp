/// @file op_counts.cpp
/// Operator counts from libtorch's Kineto profiler.
#include "train/op_counts.hpp"

#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/torch.h>

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
  return out;
}

}  // namespace nnvmc
