/// Per-batch buffer accounting: which operands are copied, transposed or reduced, and the
/// resulting peak bytes, copy bytes and transfers. The executor follows the same rules.
#include <algorithm>

#include "batching/plan_detail.hpp"

namespace nnvmc::batching::detail {

namespace {
bool has(const std::string& s, char c) { return s.find(c) != std::string::npos; }
std::string without(const std::string& s, const std::string& drop) {
  std::string r;
  for (char c : s)
    if (!has(drop, c)) r += c;
  return r;
}
}  // namespace

Extents batch_extents(const Plan& plan) {
  Extents box = plan.extents;
  for (auto [l, b] : plan.blocks) box[l] = std::min(box[l], b);
  return box;
}

bool box_is_contiguous(const std::string& labels, const Extents& full, const Extents& box) {
  bool sliced_inner = false;  // a dim inner to this one is restricted
  for (auto it = labels.rbegin(); it != labels.rend(); ++it) {
    const std::int64_t e = box.at(*it), f = full.at(*it);
    if (sliced_inner && e != 1) return false;
    if (e != f) sliced_inner = true;
  }
  return true;
}

void assign_layouts(Plan& plan) {
  const Extents box = batch_extents(plan);
  const int n_ops = int(plan.spec.inputs.size());
  for (auto& st : plan.steps) {
    for (int side = 0; side < 2; ++side) {
      StepInput& x = side == 0 ? st.a : st.b;
      bool contiguous = true;
      if (x.id < n_ops) {
        const bool view = plan.operands_on_device || plan.resident[x.id];
        contiguous = !view || box_is_contiguous(x.labels, plan.extents, box);
      }
      if (!x.summed.empty()) contiguous = true;  // the reduction makes a fresh tensor
      const std::string mem = without(x.labels, x.summed);
      const std::string outer = side == 0 ? st.m : st.n;
      const std::string natural = side == 0 ? st.batch + st.m + st.k : st.batch + st.k + st.n;
      const std::string transposed = st.batch + (side == 0 ? st.k + st.m : st.n + st.k);
      x.trans = false;
      x.transpose_copy = false;
      if (contiguous && mem == natural) continue;
      if (contiguous && mem == transposed) {
        x.trans = true;
        continue;
      }
      x.transpose_copy = true;
    }
  }
  plan.out_direct = !plan.steps.empty() && plan.out_on_device &&
                    plan.steps.back().result == plan.spec.output &&
                    box_is_contiguous(plan.spec.output, plan.extents, box);
}

BatchCost simulate_batch(const Plan& plan) {
  const Extents box = batch_extents(plan);
  const int n_ops = int(plan.spec.inputs.size());
  auto bytes = [&](const std::string& labels) { return volume(labels, box) * plan.elem_bytes; };
  BatchCost c;
  for (int i = 0; i < n_ops; ++i)
    if (plan.resident[i]) c.resident_bytes += volume(plan.spec.inputs[i], plan.extents) * plan.elem_bytes;
  std::int64_t live = c.resident_bytes;
  std::int64_t peak = live;
  auto alloc = [&](std::int64_t b) {
    live += b;
    peak = std::max(peak, live);
  };
  bool inner_split = false;
  for (auto [l, b] : plan.blocks) inner_split = inner_split || !has(plan.spec.output, l);
  if (plan.steps.empty()) {  // single operand: reduction into a fresh tensor, then copied
    alloc(bytes(plan.spec.output));
    c.peak_bytes = peak;
    return c;
  }
  if (inner_split && !plan.out_direct) alloc(bytes(plan.spec.output));  // accumulator
  std::vector<std::int64_t> inter(plan.steps.size(), 0);
  for (std::size_t s = 0; s < plan.steps.size(); ++s) {
    const Step& st = plan.steps[s];
    std::int64_t held[2] = {0, 0};
    for (int side = 0; side < 2; ++side) {
      const StepInput& x = side == 0 ? st.a : st.b;
      std::int64_t cur = 0;
      if (x.id >= n_ops) {
        cur = inter[x.id - n_ops];
      } else if (!plan.operands_on_device && !plan.resident[x.id]) {
        cur = bytes(x.labels);
        alloc(cur);
      }
      const std::string mem = without(x.labels, x.summed);
      if (!x.summed.empty()) {
        alloc(bytes(mem));
        live -= cur;
        cur = bytes(mem);
        c.copy_bytes += cur;
      }
      if (x.transpose_copy) {
        alloc(bytes(mem));
        live -= cur;
        cur = bytes(mem);
        c.copy_bytes += cur;
      }
      held[side] = cur;
    }
    if (!st.final) {
      inter[s] = bytes(st.result);
      alloc(inter[s]);
    } else if (!plan.out_direct && !inner_split) {
      alloc(bytes(st.result));
      live -= bytes(st.result);
    }
    live -= held[0] + held[1];
  }
  c.peak_bytes = peak;
  return c;
}

void evaluate(Plan& plan) {
  const BatchCost c = simulate_batch(plan);
  plan.batches = 1;
  for (auto [l, b] : plan.blocks) plan.batches *= plan.n_blocks(l);
  auto repeats = [&](const std::string& span) {
    double r = 1;
    for (auto [l, b] : plan.blocks)
      if (!has(span, l)) r *= double(plan.n_blocks(l));
    return r;
  };
  plan.flops = 0;
  double gemm_seconds = 0;
  const Extents box = batch_extents(plan);
  for (const auto& st : plan.steps) {
    const double f = st.flops * repeats(st.batch + st.m + st.n + st.k);
    plan.flops += f;
    // thin GEMMs run below the peak rate: efficiency min(1, d/32) per matrix dimension
    double eff = 1;
    for (const std::string& g : {st.m, st.n, st.k}) eff *= std::min(1.0, double(volume(g, box)) / 32.0);
    gemm_seconds += f / (plan.cost.gemm_flops_per_s * std::max(eff, 1e-3));
  }
  plan.transfer_bytes = 0;
  for (std::size_t i = 0; i < plan.spec.inputs.size(); ++i) {
    if (plan.operands_on_device) break;
    const double full = double(volume(plan.spec.inputs[i], plan.extents) * plan.elem_bytes);
    plan.transfer_bytes += plan.resident[i] ? full : full * repeats(plan.spec.inputs[i]);
  }
  if (!plan.out_on_device)
    plan.transfer_bytes += double(volume(plan.spec.output, plan.extents) * plan.elem_bytes);
  plan.copy_bytes = double(c.copy_bytes) * double(plan.batches);
  plan.peak_bytes = c.peak_bytes;
  plan.modelled_seconds = gemm_seconds +
                          plan.transfer_bytes / plan.cost.transfer_bytes_per_s +
                          plan.copy_bytes / plan.cost.copy_bytes_per_s +
                          double(plan.batches) * plan.cost.batch_overhead_s;
}

}  // namespace nnvmc::batching::detail
