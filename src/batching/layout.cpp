/// Per-batch buffer accounting: which operands are copied, transposed or reduced, and the
/// resulting peak bytes, copy bytes and transfers. The executor follows the same rules.
#include <algorithm>
#include <tuple>

#include "batching/device_ops.hpp"
#include "batching/plan_detail.hpp"

namespace nnvmc::batching::detail {

namespace {
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

namespace {
/// Whether the dims of `group` (consecutive in memory) merge into one in a slice with extents
/// `box`: every label but the first keeps its full extent.
bool mergeable(const std::string& group, const Extents& full, const Extents& box) {
  for (std::size_t i = 1; i < group.size(); ++i)
    if (box.at(group[i]) != full.at(group[i])) return false;
  return true;
}

/// Tiles the larger per-batch layout copy of `st` above plan.tile_bytes along the first label
/// of its free group (see Step::tile_side).
void choose_tile(const Plan& plan, Step& st, const Extents& box) {
  st.tile_side = -1;
  st.tile = 0;
  if (plan.tile_bytes <= 0) return;
  std::int64_t best = plan.tile_bytes;
  for (int side = 0; side < 2; ++side) {
    const StepInput& x = side == 0 ? st.a : st.b;
    const std::string& group = side == 0 ? st.m : st.n;
    if (!x.transpose_copy || x.hoisted || group.empty()) continue;
    const std::int64_t bytes = volume(without(x.labels, x.summed), box) * plan.elem_bytes;
    const std::int64_t e = box.at(group[0]);
    if (bytes <= best || e < 2) continue;
    // tiles of ~tile_bytes, but no GEMM narrower than cost.tile_min_width along the tiled group
    const std::int64_t width = volume(group, box) / e;  // per entry of the tiled label
    const auto min_width = std::int64_t(plan.cost.tile_min_width);
    const std::int64_t tile = std::max({std::int64_t(1), plan.tile_bytes / std::max<std::int64_t>(1, bytes / e),
                                        (min_width + width - 1) / width});
    if (tile >= e) continue;
    best = bytes;
    st.tile_side = side;
    st.tile = tile;
  }
}
}  // namespace

std::int64_t tile_copy_bytes(const Plan& plan, const Step& st, const Extents& box) {
  const StepInput& x = st.tile_side == 0 ? st.a : st.b;
  const char l = (st.tile_side == 0 ? st.m : st.n)[0];
  return volume(without(x.labels, x.summed), box) / box.at(l) * st.tile * plan.elem_bytes;
}

void assign_layouts(Plan& plan) {
  const Extents box = batch_extents(plan);
  const int n_ops = int(plan.spec.inputs.size());
  for (auto& st : plan.steps) {
    for (int side = 0; side < 2; ++side) {
      StepInput& x = side == 0 ? st.a : st.b;
      const std::string mem = without(x.labels, x.summed);
      const std::string rows = side == 0 ? st.m : st.k, cols = side == 0 ? st.k : st.n;
      const std::string natural = st.batch + rows + cols, transposed = st.batch + cols + rows;
      bool contiguous = true;
      x.strided = false;
      if (x.id < n_ops && x.summed.empty()) {
        const bool view = plan.operands_on_device || plan.resident[x.id];
        contiguous = !view || box_is_contiguous(x.labels, plan.extents, box);
        // a slice whose batch, row and column groups each merge is a strided matrix batch
        if (!contiguous && plan.strided_views && (mem == natural || mem == transposed)) {
          const bool nat = mem == natural;
          x.strided = mergeable(st.batch, plan.extents, box) && mergeable(nat ? rows : cols, plan.extents, box) &&
                      mergeable(nat ? cols : rows, plan.extents, box);
          contiguous = x.strided;
        }
      }
      x.trans = false;
      x.transpose_copy = false;
      if (contiguous && mem == transposed && mem != natural) {
        x.trans = true;
      } else if (!contiguous || mem != natural) {
        // copy into the GEMM layout that keeps the source's innermost label innermost, so the
        // copy moves contiguous runs instead of transposing element by element
        x.transpose_copy = true;
        x.trans = !mem.empty() && transposed.back() == mem.back() && natural.back() != mem.back();
      }
      // an operand no split label touches is copied/reduced once for all batches
      bool split = false;
      for (char l : x.labels) split = split || plan.blocks.count(l);
      x.hoisted = x.id < n_ops && !plan.blocks.empty() && !split &&
                  (plan.operands_on_device || plan.resident[x.id]) &&
                  (x.transpose_copy || !x.summed.empty());
    }
    choose_tile(plan, st, box);
  }
  plan.out_direct = !plan.steps.empty() && plan.out_on_device &&
                    plan.steps.back().result == plan.spec.output &&
                    box_is_contiguous(plan.spec.output, plan.extents, box);
  // a tiled step keeps its source alongside the tile buffer: drop tiles that raise the peak
  for (auto& st : plan.steps) {
    if (st.tile_side < 0) continue;
    const std::int64_t tiled = simulate_batch(plan).peak_bytes;
    const auto keep = std::make_pair(st.tile_side, st.tile);
    st.tile_side = -1;
    st.tile = 0;
    if (simulate_batch(plan).peak_bytes >= tiled) std::tie(st.tile_side, st.tile) = keep;
  }
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
  for (const Step& st : plan.steps)  // hoisted operands are prepared before the first batch:
    for (const StepInput* x : {&st.a, &st.b}) {  // the sum, then the layout copy of it
      if (!x->hoisted) continue;
      const std::int64_t b = bytes(without(x->labels, x->summed));
      const bool summed = !x->summed.empty();
      if (summed) alloc(b), c.once_copy_bytes += b;
      if (x->transpose_copy) {
        alloc(b);
        c.once_copy_bytes += b;
        if (summed) live -= b;
      }
    }
  if (inner_split && !plan.out_direct) alloc(bytes(plan.spec.output));  // accumulator
  std::vector<std::int64_t> inter(plan.steps.size(), 0);
  for (std::size_t s = 0; s < plan.steps.size(); ++s) {
    const Step& st = plan.steps[s];
    std::int64_t held[2] = {0, 0};
    for (int side = 0; side < 2; ++side) {
      const StepInput& x = side == 0 ? st.a : st.b;
      if (x.hoisted) continue;
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
      if (x.transpose_copy && st.tile_side == side) {  // source kept, one tile buffer
        const std::int64_t t = tile_copy_bytes(plan, st, box);
        alloc(t);
        cur += t;
        c.copy_bytes += bytes(mem);
      } else if (x.transpose_copy) {
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

double over_batches(const Plan& plan, const std::string& labels) {
  double r = double(volume(labels, plan.extents) * plan.elem_bytes);
  for (auto [l, b] : plan.blocks)
    if (!has(labels, l)) r *= double(plan.n_blocks(l));
  return r;
}

namespace {
/// Whether the staged backend makes the layout copy of intermediate `x` on the device: nothing
/// summed out of it, and few enough dimensions for DeviceOps::strided_copy.
bool on_device_copy(const StepInput& x) {
  return x.summed.empty() && int(x.labels.size()) <= kMaxCopyRank;
}
}  // namespace

double staged_transfer_bytes(const Plan& plan) {
  if (plan.steps.empty()) return 0;  // a reduction on the host: no GEMM
  const int n_ops = int(plan.spec.inputs.size());
  double bytes = 0;
  for (const Step& st : plan.steps) {
    for (const StepInput* x : {&st.a, &st.b}) {
      const std::string mem = without(x->labels, x->summed);
      if (x->id >= n_ops) {  // an intermediate stays on the device (its layout copy too) ...
        if (!on_device_copy(*x) && (x->transpose_copy || !x->summed.empty()))  // ... unless summed or copied on the host
          bytes += over_batches(plan, x->labels) + over_batches(plan, mem);
      } else if (x->hoisted || (!x->transpose_copy && x->summed.empty())) {
        // kept: crosses once (an operand passed twice, as the ladder's L, is counted twice
        // though the backend may find the second's slices already resident: an overestimate)
        bytes += double(volume(mem, plan.extents) * plan.elem_bytes);
      } else {
        bytes += over_batches(plan, mem);  // a fresh host buffer every batch
      }
    }
    // each output block comes back once: the GEMMs of intermediates between two batches' final
    // GEMMs write device buffers, so an accumulated block stays open on the device
    if (st.final) bytes += double(volume(plan.spec.output, plan.extents) * plan.elem_bytes);
  }
  return bytes;
}

double staged_device_copy_bytes(const Plan& plan) {
  // counted as copy_bytes counts them (the largest batch's, times plan.batches), so that
  // copy_bytes − device_copy_bytes is what the host copies
  const int n_ops = int(plan.spec.inputs.size());
  const Extents box = batch_extents(plan);
  double bytes = 0;
  for (const Step& st : plan.steps)
    for (const StepInput* x : {&st.a, &st.b})
      if (x->id >= n_ops && x->transpose_copy && on_device_copy(*x))
        bytes += double(volume(x->labels, box) * plan.elem_bytes) * double(plan.batches);
  return bytes;
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
    // thin GEMMs run below the peak rate (CostModel::dim_efficiency per matrix dimension)
    double eff = 1;
    for (const std::string& g : {st.m, st.n, st.k}) eff *= plan.cost.dim_efficiency(double(volume(g, box)));
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
  plan.copy_bytes = double(c.copy_bytes) * double(plan.batches) + double(c.once_copy_bytes);
  plan.peak_bytes = c.peak_bytes;
  const double overhead = double(plan.batches) * plan.cost.batch_overhead_s;
  if (plan.staged) {
    // the staging pipeline overlaps the host's packing and layout copies, the link and the
    // device's GEMMs and copies of intermediates: the slowest of the three sets the pace
    plan.transfer_bytes += staged_transfer_bytes(plan);
    plan.device_copy_bytes = staged_device_copy_bytes(plan);
    const double device_copy_rate =
        plan.cost.device_copy_bytes_per_s > 0 ? plan.cost.device_copy_bytes_per_s : plan.cost.copy_bytes_per_s;
    const double device = gemm_seconds + plan.device_copy_bytes / device_copy_rate;
    const double host = (plan.copy_bytes - plan.device_copy_bytes + plan.transfer_bytes) / plan.cost.copy_bytes_per_s;
    plan.modelled_seconds =
        std::max({device, plan.transfer_bytes / plan.cost.transfer_bytes_per_s, host}) + overhead;
    return;
  }
  plan.modelled_seconds = gemm_seconds +
                          plan.transfer_bytes / plan.cost.transfer_bytes_per_s +
                          plan.copy_bytes / plan.cost.copy_bytes_per_s + overhead;
}

}  // namespace nnvmc::batching::detail
