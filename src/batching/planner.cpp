/// make_plan(): order search, step construction and split choice; plan printing.
#include <sstream>

#include "batching/budget.hpp"
#include "batching/plan_detail.hpp"
#include "core/errors.hpp"

namespace nnvmc::batching {

SplitStrategy parse_split(const std::string& text) {
  if (text == "none") return SplitStrategy::none;
  if (text == "x") return SplitStrategy::x;
  if (text == "c") return SplitStrategy::c;
  if (text == "auto") return SplitStrategy::automatic;
  throw InputError("split strategy must be none | x | c | auto, got '" + text + "'");
}

std::string to_string(SplitStrategy s) {
  switch (s) {
    case SplitStrategy::none: return "none";
    case SplitStrategy::x: return "x";
    case SplitStrategy::c: return "c";
    case SplitStrategy::automatic: return "auto";
  }
  return "?";
}

BackendKind parse_backend(const std::string& text) {
  if (text == "torch") return BackendKind::torch;
  if (text == "cublas") return BackendKind::cublas;
  throw InputError("backend must be torch | cublas, got '" + text + "'");
}

std::string to_string(BackendKind b) { return b == BackendKind::torch ? "torch" : "cublas"; }

std::int64_t Plan::n_blocks(char label) const {
  const auto it = blocks.find(label);
  if (it == blocks.end()) return 1;
  return (extents.at(label) + it->second - 1) / it->second;
}

ExecReport& ExecReport::operator+=(const ExecReport& o) {
  flops += o.flops;
  bytes_h2d += o.bytes_h2d;
  bytes_d2h += o.bytes_d2h;
  copy_bytes += o.copy_bytes;
  peak_bytes = std::max(peak_bytes, o.peak_bytes);
  batches += o.batches;
  seconds += o.seconds;
  if (strategy.empty()) strategy = o.strategy;
  return *this;
}

Plan make_plan(const EinsumSpec& spec, const std::vector<std::vector<std::int64_t>>& shapes,
               const PlanOptions& options, bool operands_on_device, bool out_on_device,
               std::int64_t elem_bytes) {
  Plan plan;
  plan.spec = spec;
  plan.extents = label_extents(spec, shapes);
  plan.elem_bytes = elem_bytes;
  plan.budget_bytes = options.budget_bytes;
  plan.operands_on_device = operands_on_device;
  plan.out_on_device = out_on_device;
  plan.resident.assign(spec.inputs.size(), false);
  plan.cost = options.cost ? *options.cost : CostModel::measure(options.device);
  // tiled layout copies write column/row blocks of the GEMM result: the torch backend on the
  // CPU only (there the copies run at cache speed; GPU copies are bandwidth-bound anyway)
  // strided operand slices: libtorch's CPU bmm passes them to BLAS as they are (checked: no
  // allocation inside bmm); on CUDA this is untested here, so slices are still copied there
  const bool torch_cpu = options.backend == BackendKind::torch && options.device == "cpu";
  plan.strided_views = torch_cpu;
  plan.staged = options.backend == BackendKind::cublas;
  if (torch_cpu) plan.tile_bytes = std::int64_t(plan.cost.tile_bytes);
  const auto path = options.path.empty()
                        ? detail::search_path(spec, plan.extents, options.budget_bytes, elem_bytes)
                        : options.path;
  plan.steps = detail::build_steps(spec, plan.extents, path);
  plan.strategy = options.split;
  if (plan.steps.empty()) {  // one operand: a reduction/permutation, never split
    detail::assign_layouts(plan);
    detail::evaluate(plan);
    if (plan.budget_bytes > 0 && plan.peak_bytes > plan.budget_bytes)
      throw BudgetError("einsum '" + spec.text() + "': needs " + format_bytes(double(plan.peak_bytes)) +
                        ", budget is " + format_bytes(double(plan.budget_bytes)));
    return plan;
  }
  if (!detail::choose_split(plan, options.split, options.protected_labels)) {
    // smallest possible batch: every label the strategy may split at block size 1
    Plan tiny = plan;
    tiny.blocks.clear();
    const std::string keep =
        options.split == SplitStrategy::c ? detail::c_split_protected(plan, options.protected_labels) : "";
    for (auto [l, e] : plan.extents)
      if (e > 1 && keep.find(l) == std::string::npos) tiny.blocks[l] = 1;
    detail::assign_layouts(tiny);
    detail::evaluate(tiny);
    throw BudgetError("einsum '" + spec.text() + "' with split=" + to_string(options.split) +
                      " does not fit the memory budget of " + format_bytes(double(plan.budget_bytes)) +
                      " (unsplit it needs " + format_bytes(double(plan.peak_bytes)) +
                      (options.split == SplitStrategy::none
                           ? std::string("; split=none runs every contraction whole)")
                           : ", the smallest batch about " + format_bytes(double(tiny.peak_bytes)) + ")"));
  }
  return plan;
}

std::string Plan::explain() const {
  std::ostringstream os;
  os << "einsum " << spec.text() << "  extents";
  for (auto [l, e] : extents) os << ' ' << l << '=' << e;
  os << "\n  budget " << (budget_bytes > 0 ? format_bytes(double(budget_bytes)) : "unlimited")
     << ", split " << to_string(strategy) << ", " << batches << " batch(es)";
  if (!blocks.empty()) {
    os << ", blocks";
    for (auto [l, b] : blocks) os << ' ' << l << ':' << b << "/" << extents.at(l);
  }
  os << "\n";
  const int n_ops = int(spec.inputs.size());
  auto name = [&](int id) {
    return std::string(id < n_ops ? "op" : "t") + std::to_string(id < n_ops ? id : id - n_ops);
  };
  for (std::size_t s = 0; s < steps.size(); ++s) {
    const Step& st = steps[s];
    auto in = [&](const StepInput& x) {
      std::string r = name(x.id) + "[" + x.labels + "]";
      if (!x.summed.empty()) r += " sum(" + x.summed + ")";
      if (x.transpose_copy) r += " copy";
      if (x.trans) r += " T";
      if (x.hoisted) r += " once";
      if (x.strided) r += " strided";
      return r;
    };
    os << "  step " << s << ": " << (st.final ? "out" : name(n_ops + int(s))) << "[" << st.result
       << "] = " << in(st.a) << " * " << in(st.b) << "  (batch '" << st.batch << "' m '" << st.m
       << "' n '" << st.n << "' k '" << st.k << "', " << st.flops * 1e-9 << " GFLOP unsplit)";
    if (st.tile_side >= 0)
      os << "\n          copy of op " << (st.tile_side == 0 ? "a" : "b") << " in tiles of " << st.tile << " along '"
         << (st.tile_side == 0 ? st.m : st.n)[0] << "'";
    os << "\n";
  }
  os << "  estimate: " << flops * 1e-9 << " GFLOP, peak " << format_bytes(double(peak_bytes))
     << ", transfers " << format_bytes(transfer_bytes) << ", copies " << format_bytes(copy_bytes)
     << ", modelled " << modelled_seconds << " s" << (out_direct ? ", writes output in place" : "") << "\n";
  for (std::size_t i = 0; i < resident.size(); ++i)
    if (resident[i]) os << "  op" << i << " resident on the device\n";
  if (!notes.empty()) {
    os << "  candidates:\n";
    for (const auto& n : notes) os << "    " << n << "\n";
  }
  return os.str();
}

}  // namespace nnvmc::batching
