/// Executes a Plan batch by batch with a GEMM backend, accounting every buffer it owns by
/// the same rules the planner used (plan_detail.hpp: simulate_batch).
#include <ATen/ATen.h>

#include <chrono>
#include <functional>

#include "batching/backend.hpp"
#include "batching/budget.hpp"
#include "batching/contract.hpp"
#include "batching/plan_detail.hpp"
#include "batching/workspace.hpp"
#include "core/errors.hpp"

namespace nnvmc::batching {

namespace {

using detail::has;

/// Bytes of executor-owned buffers alive now and at most.
struct Tracker {
  std::int64_t live = 0, peak = 0;
  void alloc(std::int64_t b) { live += b, peak = std::max(peak, live); }
  void free(std::int64_t b) { live -= b; }
};

/// A tensor with its labels (memory order) and the bytes it owns (0 for views); `pooled`:
/// its buffer came from the workspace and goes back there.
struct Slot {
  at::Tensor t;
  std::string labels;
  std::int64_t owned = 0;
  bool pooled = false;
};

std::vector<std::int64_t> permutation(const std::string& from, const std::string& to) {
  std::vector<std::int64_t> p;
  for (char l : to) p.push_back(std::int64_t(from.find(l)));
  return p;
}

std::int64_t extent_of(const Slot& s, const std::string& labels) {
  std::int64_t v = 1;
  for (char l : labels) v *= s.t.size(std::int64_t(s.labels.find(l)));
  return v;
}

/// A host block on `device`, contiguous. To CUDA it goes through page-locked memory (libtorch's
/// caching host allocator) with a non-blocking copy on the current stream, so the host packs the
/// next block while the copy and the GEMMs queued after it run.
at::Tensor to_device(const at::Tensor& t, const c10::Device& device) {
  if (is_on(t, device)) return t.contiguous();  // already there (pin_memory takes host tensors only)
  if (!device.is_cuda() || !t.is_cpu()) return t.to(device).contiguous();  // host, or another GPU
  return t.contiguous().pin_memory().to(device, /*non_blocking=*/true);
}

/// One batch box: start and length of every split label.
using Box = std::map<char, std::pair<std::int64_t, std::int64_t>>;

at::Tensor slice(at::Tensor t, const std::string& labels, const Box& box) {
  for (std::size_t a = 0; a < labels.size(); ++a) {
    const auto it = box.find(labels[a]);
    if (it != box.end()) t = t.narrow(std::int64_t(a), it->second.first, it->second.second);
  }
  return t;
}

/// Iterates over all boxes of `labels` (each split by plan.blocks), calling f(box).
void for_each_box(const Plan& plan, const std::string& labels, Box& box, std::size_t i,
                  const std::function<void()>& f) {
  if (i == labels.size()) return f();
  const char l = labels[i];
  const std::int64_t e = plan.extents.at(l), b = plan.blocks.at(l);
  for (std::int64_t start = 0; start < e; start += b) {
    box[l] = {start, std::min(b, e - start)};
    for_each_box(plan, labels, box, i + 1, f);
  }
  box.erase(l);
}

struct Runner {
  const Plan& plan;
  const std::vector<at::Tensor>& ops;  // operands (resident ones already on the device)
  const at::Tensor& out;
  c10::Device device;
  GemmBackend& gemm;
  Workspace& ws;
  Tracker tr;
  ExecReport rep;
  bool inner = false;
  bool first_inner = true;  // the batch is the first of its output block (it writes, later ones add)
  Slot acc;  // accumulator (labels of the final result) when contracted labels are split
  std::map<std::pair<std::size_t, int>, Slot> hoisted;  // (step, side) → copy made once
  std::map<const void*, at::Tensor> taken;  // workspace buffers this execution holds now

  detail::Extents largest = detail::batch_extents(plan);  // extents of the largest batch

  /// A counted workspace tensor of `shape` for a tensor with `labels`: its buffer is sized for
  /// the largest batch, so batches at the edges reuse the same buffers (and count as much).
  Slot take(at::IntArrayRef shape, const at::TensorOptions& o, const std::string& labels) {
    return take(shape, o, std::int64_t(detail::volume(labels, largest)));
  }
  Slot take(at::IntArrayRef shape, const at::TensorOptions& o, std::int64_t capacity) {
    Slot s{ws.take(shape, o, capacity, plan.budget_bytes > 0 ? plan.budget_bytes : plan.peak_bytes), "", 0, true};
    s.owned = std::max(capacity, s.t.numel()) * std::int64_t(s.t.element_size());
    tr.alloc(s.owned);
    taken[s.t.storage().data()] = s.t;
    return s;
  }
  /// Returns a workspace tensor's buffer.
  void give(const at::Tensor& t) {
    taken.erase(t.storage().data());
    ws.give(t);
  }
  /// Extents of `labels` in the batch `box`.
  std::vector<std::int64_t> box_shape(const std::string& labels, const Box& box) const {
    std::vector<std::int64_t> shape;
    for (char l : labels) shape.push_back(box.count(l) ? box.at(l).second : plan.extents.at(l));
    return shape;
  }
  /// Frees what `s` owns.
  void drop(Slot& s) {
    if (s.t.defined()) gemm.release(s.t);  // a kept intermediate's device copy goes too
    tr.free(s.owned);
    if (s.pooled) give(s.t);
    s = Slot{};
  }
  /// After an exception: every buffer this execution still holds goes back to the workspace.
  void give_back_all() {
    for (auto& [p, t] : taken) gemm.release(t), ws.give(t);
    taken.clear();
  }

  /// Brings operand/intermediate `x` into the GEMM layout rows×cols (as [B, R, C]).
  /// Operand/intermediate `x` as it arrives: the intermediate itself, or the operand's slice
  /// for `box` (uploaded when it lives elsewhere), with x.summed labels summed out.
  Slot fetch(const StepInput& x, std::vector<Slot>& inter, const Box& box) {
    const int n_ops = int(plan.spec.inputs.size());
    Slot s;
    s.labels = x.labels;
    if (x.id >= n_ops) {
      s = std::move(inter[x.id - n_ops]);  // the step consumes the intermediate
      inter[x.id - n_ops] = Slot{};
      if (!x.summed.empty()) gemm.fetch_kept(s.t);  // summed on the host below
    } else {
      s.t = slice(ops[x.id], x.labels, box);
      if (!plan.operands_on_device && !plan.resident[x.id]) {
        s.t = to_device(s.t, device);
        s.owned = s.t.nbytes();
        rep.bytes_h2d += s.owned;
        tr.alloc(s.owned);
      }
    }
    if (!x.summed.empty()) {
      std::vector<std::int64_t> dims, shape;
      std::string kept;
      for (std::size_t a = 0; a < s.labels.size(); ++a)
        has(x.summed, s.labels[a]) ? dims.push_back(std::int64_t(a))
                                   : (void(kept += s.labels[a]), shape.push_back(s.t.size(std::int64_t(a))));
      Slot r = take(shape, s.t.options(), kept);
      r.labels = kept;
      at::sum_out(r.t, s.t, dims);
      rep.copy_bytes += r.t.nbytes();
      drop(s);
      s = std::move(r);
    }
    return s;
  }

  /// GEMM memory order of side `is_a` of `st` (x.trans: the BLAS-transposed one).
  static std::string gemm_order(const StepInput& x, bool is_a, const Step& st) {
    const std::string rows = is_a ? st.m : st.k, cols = is_a ? st.k : st.n;
    return x.trans ? st.batch + cols + rows : st.batch + rows + cols;
  }

  /// Whether `s` must be copied into the GEMM order of side `is_a`.
  static bool needs_copy(const StepInput& x, const Slot& s, bool is_a, const Step& st) {
    return x.transpose_copy || s.labels != gemm_order(x, is_a, st) || (!s.t.is_contiguous() && !x.strided);
  }

  /// Copies `src` (labels `labels`) into `dst`, a contiguous buffer of at least its size, in
  /// the GEMM order of side `is_a`; returns the [B, R, C] matrix view of the copy. A kept
  /// intermediate is copied where the backend keeps it.
  at::Tensor copy_to_gemm(const at::Tensor& src, const std::string& labels, const at::Tensor& dst,
                          const StepInput& x, bool is_a, const Step& st) {
    const at::Tensor p = src.permute(permutation(labels, gemm_order(x, is_a, st)));
    at::Tensor d = dst.reshape({-1}).narrow(0, 0, p.numel()).view(p.sizes());
    if (!gemm.copy_kept(p, d)) d.copy_(p);
    return matrix(Slot{d, gemm_order(x, is_a, st)}, is_a, st);
  }

  /// The [B, R, C] view (rows × cols of side `is_a`) of a slot in either GEMM order.
  static at::Tensor matrix(const Slot& s, bool is_a, const Step& st) {
    const std::string rows = is_a ? st.m : st.k, cols = is_a ? st.k : st.n;
    const std::int64_t B = extent_of(s, st.batch), R = extent_of(s, rows), C = extent_of(s, cols);
    if (s.labels == st.batch + rows + cols) return s.t.view({B, R, C});
    return s.t.view({B, C, R}).transpose(1, 2);
  }

  /// Side `is_a` of step `si` as a [B, R, C] GEMM operand (copied when its layout needs it).
  Slot prepare(const StepInput& x, std::vector<Slot>& inter, const Box& box, bool is_a,
               const Step& st, std::size_t si) {
    if (x.hoisted) {
      const auto it = hoisted.find({si, is_a ? 0 : 1});
      if (it != hoisted.end()) return Slot{it->second.t, it->second.labels, 0, false};
    }
    Slot s = fetch(x, inter, box);
    if (needs_copy(x, s, is_a, st)) {
      const std::string order = gemm_order(x, is_a, st);
      std::vector<std::int64_t> shape;
      for (char l : order) shape.push_back(s.t.size(std::int64_t(s.labels.find(l))));
      Slot c = take(shape, s.t.options(), order);
      c.labels = order;
      const at::Tensor m = copy_to_gemm(s.t, s.labels, c.t, x, is_a, st);
      rep.copy_bytes += m.numel() * m.element_size();
      drop(s);
      s = std::move(c);
      s.t = m;
    } else {
      s.t = matrix(s, is_a, st);
    }
    if (x.hoisted) {  // kept (and counted) until the execution ends; the step gets a view
      hoisted[{si, is_a ? 0 : 1}] = s;
      return Slot{s.t, s.labels, 0, false};
    }
    return s;
  }

  /// Makes the copies of hoisted operands before the first batch.
  void prepare_hoisted() {
    std::vector<Slot> none;
    for (std::size_t si = 0; si < plan.steps.size(); ++si) {
      const Step& st = plan.steps[si];
      if (st.a.hoisted) prepare(st.a, none, {}, true, st, si);
      if (st.b.hoisted) prepare(st.b, none, {}, false, st, si);
    }
  }
  void drop_hoisted() {
    for (auto& [k, s] : hoisted) drop(s);
    hoisted.clear();
  }

  void run_batch(const Box& box) {
    std::vector<Slot> inter(plan.steps.size());
    for (std::size_t si = 0; si < plan.steps.size(); ++si) {
      const Step& st = plan.steps[si];
      const std::vector<std::int64_t> rshape = box_shape(st.result, box);  // before the matrix views
      // a tiled side arrives uncopied; its tile buffer is taken right away (as simulate_batch counts)
      const int ts = st.tile_side;
      Slot a, b, tile;
      auto side = [&](int which) {
        const StepInput& x = which == 0 ? st.a : st.b;
        Slot& s = which == 0 ? a : b;
        if (ts != which) return void(s = prepare(x, inter, box, which == 0, st, si));
        s = fetch(x, inter, box);
        const char l = (which == 0 ? st.m : st.n)[0];
        const std::int64_t e = s.t.size(std::int64_t(s.labels.find(l)));
        tile = take({s.t.numel() / e * std::min(st.tile, e)}, s.t.options(),
                    detail::tile_copy_bytes(plan, st, largest) / plan.elem_bytes);
      };
      side(0);
      side(1);
      auto rows_cols = [&](const Slot& s, bool is_a, int which) {  // {R, C} of side `is_a`
        if (ts != which) return std::make_pair(s.t.size(1), s.t.size(2));
        return std::make_pair(extent_of(s, is_a ? st.m : st.k), extent_of(s, is_a ? st.k : st.n));
      };
      const std::int64_t B = ts == 0 ? extent_of(a, st.batch) : a.t.size(0);
      const auto [M, K] = rows_cols(a, true, 0);
      const std::int64_t N = rows_cols(b, false, 1).second;
      rep.flops += 2.0 * double(B) * double(M) * double(N) * double(K);
      // slices of the operands themselves (no copy) stay valid for the whole execution
      const bool stable_a = ts != 0 && stable(st.a, a), stable_b = ts != 1 && stable(st.b, b);
      at::Tensor c;  // the GEMM result [B, M, N]
      bool accumulate = false;
      Slot tmp;
      if (!st.final) {
        tmp = take({B, M, N}, out.options().device(device), st.result);
        c = tmp.t;
        if (gemm.keeps_intermediates()) gemm.keep(c);
      } else if (plan.out_direct) {
        c = slice(out, plan.spec.output, box).view({B, M, N});
        accumulate = inner && !first_inner;
      } else if (inner) {
        c = acc.t.view({B, M, N});
        accumulate = !first_inner;
      } else {
        tmp = take({B, M, N}, out.options().device(device), st.result);
        c = tmp.t;
      }
      if (ts < 0) {
        gemm.bmm(a.t, b.t, c, accumulate, stable_a, stable_b);
      } else {  // copy and multiply one tile of the first m (n) label at a time: its rows (columns) of c
        const Slot& src = ts == 0 ? a : b;
        const std::int64_t pos = std::int64_t(src.labels.find((ts == 0 ? st.m : st.n)[0]));
        const std::int64_t e = src.t.size(pos), per = (ts == 0 ? M : N) / e;
        for (std::int64_t start = 0; start < e; start += st.tile) {
          const std::int64_t len = std::min(st.tile, e - start);
          const at::Tensor m = copy_to_gemm(src.t.narrow(pos, start, len), src.labels, tile.t,
                                            ts == 0 ? st.a : st.b, ts == 0, st);
          rep.copy_bytes += m.numel() * m.element_size();
          const at::Tensor cs = c.narrow(ts == 0 ? 1 : 2, start * per, len * per);
          if (ts == 0) gemm.bmm(m, b.t, cs, accumulate, false, stable_b);
          else gemm.bmm(a.t, m, cs, accumulate, stable_a, false);
        }
      }
      if (!st.final) {
        if (!gemm.keeps_intermediates()) gemm.synchronize();  // the next step reads c on the host
        inter[si] = std::move(tmp);
        inter[si].t = c.view(rshape);
        inter[si].labels = st.result;
      } else if (tmp.t.defined()) {
        gemm.synchronize();
        write_out(tmp.t.view(rshape), st.result, box);
        drop(tmp);
      }
      drop(a);
      drop(b);
      drop(tile);
    }
  }

  /// Whether `s` stays alive and unchanged until the execution ends: a slice of an operand, or
  /// a hoisted copy (made before the first batch, dropped after the last).
  bool stable(const StepInput& x, const Slot& s) const {
    return x.id < int(plan.spec.inputs.size()) && (x.hoisted || s.t.is_alias_of(ops[x.id]));
  }

  void write_out(const at::Tensor& r, const std::string& labels, const Box& box) {
    slice(out, plan.spec.output, box).copy_(r.permute(permutation(labels, plan.spec.output)));
    rep.copy_bytes += r.nbytes();
    if (!plan.out_on_device) rep.bytes_d2h += r.nbytes();
  }

  void run_single() {  // one operand: sum out labels, permute into out
    const std::string& in = plan.spec.inputs[0];
    at::Tensor t = ops[0].to(device);
    if (!plan.operands_on_device) rep.bytes_h2d += t.nbytes();
    std::vector<std::int64_t> dims;
    std::string kept;
    for (std::size_t a = 0; a < in.size(); ++a)
      has(plan.spec.output, in[a]) ? void(kept += in[a]) : dims.push_back(std::int64_t(a));
    Slot r = take(box_shape(kept, {}), t.options(), kept);
    dims.empty() ? void(r.t.copy_(t)) : void(at::sum_out(r.t, t, dims));
    write_out(r.t, kept, {});
    drop(r);
  }
};

}  // namespace

ExecReport execute(const Plan& plan, const std::vector<at::Tensor>& operands, const at::Tensor& out,
                   const PlanOptions& options) {
  auto backend = make_backend(options.backend, options.device);
  return execute(plan, operands, out, options, *backend);
}

ExecReport execute(const Plan& plan, const std::vector<at::Tensor>& operands, const at::Tensor& out,
                   const PlanOptions& options, GemmBackend& gemm) {
  const auto t0 = std::chrono::steady_clock::now();
  // "cuda" means the output's own cuda:N when it is there (one key per buffer in the workspace)
  c10::Device device = is_on(out, c10::Device(options.device)) ? out.device() : c10::Device(options.device);
  // an index-less "cuda" (host output) is the current CUDA device, spelt with its index as the
  // tensors made on it are: the workspace keys buffers by device, and "cuda" and "cuda:0" would
  // keep two sets of buffers of the same sizes
  device = with_index(device);
  if (operands.size() != plan.spec.inputs.size())
    throw InputError("einsum '" + plan.spec.text() + "': plan is for " +
                     std::to_string(plan.spec.inputs.size()) + " operands");
  for (std::size_t i = 0; i < operands.size(); ++i)
    for (std::size_t a = 0; a < plan.spec.inputs[i].size(); ++a)
      if (operands[i].dim() != std::int64_t(plan.spec.inputs[i].size()) ||
          operands[i].size(std::int64_t(a)) != plan.extents.at(plan.spec.inputs[i][a]))
        throw InputError("einsum '" + plan.spec.text() + "': operand " + std::to_string(i) +
                         " does not have the planned shape");
  for (std::size_t a = 0; a < plan.spec.output.size(); ++a)
    if (out.dim() != std::int64_t(plan.spec.output.size()) ||
        out.size(std::int64_t(a)) != plan.extents.at(plan.spec.output[a]))
      throw InputError("einsum '" + plan.spec.text() + "': output does not have the planned shape");
  for (const auto& st : plan.steps)
    if ((st.tile_side >= 0 || st.a.strided || st.b.strided) && !gemm.takes_strided())
      throw InputError("einsum '" + plan.spec.text() +
                       "': the plan passes strided slices or tiles (planned for the torch backend on the "
                       "CPU), which this GEMM backend does not take; plan it for the backend that runs it");
  // a backend may outlive this call (kept for a whole CCSD run): count only what this call moves
  const std::int64_t h2d0 = gemm.bytes_h2d(), d2h0 = gemm.bytes_d2h();
  std::vector<at::Tensor> ops = operands;
  Workspace local;
  Workspace& ws = options.workspace ? *options.workspace : local;
  Runner run{plan, ops, out, device, gemm, ws, Tracker{}, ExecReport{}, false, true, Slot{}, {}, {}};
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (!ops[i].is_contiguous()) {  // the plan assumes row-major operands
      ops[i] = ops[i].contiguous();
      run.tr.alloc(ops[i].nbytes());
      run.rep.copy_bytes += ops[i].nbytes();
    }
    if (plan.resident[i]) {
      ops[i] = to_device(ops[i], device);
      run.rep.bytes_h2d += ops[i].nbytes();
      run.tr.alloc(ops[i].nbytes());
    }
  }
  std::string outer, inner;
  for (auto [l, b] : plan.blocks) (has(plan.spec.output, l) ? outer : inner) += l;
  run.inner = !inner.empty();
  try {
    if (plan.steps.empty()) {
      run.run_single();
      run.rep.batches = 1;
    } else {
      run.prepare_hoisted();
      const Step& last = plan.steps.back();
      Box box;
      for_each_box(plan, outer, box, 0, [&] {
        if (run.inner && !plan.out_direct) {
          run.acc = run.take(run.box_shape(last.result, box), out.options().device(device), last.result);
        }
        // the block's first batch writes it (no zeroing, and a staging backend uploads nothing)
        run.first_inner = true;
        for_each_box(plan, inner, box, 0, [&] {
          run.run_batch(box);
          run.first_inner = false;
          run.rep.batches += 1;
        });
        if (run.acc.t.defined()) {
          run.gemm.synchronize();  // acc is complete
          run.write_out(run.acc.t, last.result, box);
          run.drop(run.acc);
        }
      });
      run.drop_hoisted();
    }
    gemm.synchronize();
  } catch (...) {
    try {  // nothing the backend still has in flight writes a buffer handed back below
      gemm.synchronize();
    } catch (...) {
    }
    run.give_back_all();  // a shared workspace keeps no buffers busy for good
    throw;
  }
  ExecReport rep = run.rep;
  rep.bytes_h2d += gemm.bytes_h2d() - h2d0;
  rep.bytes_d2h += gemm.bytes_d2h() - d2h0;
  rep.peak_bytes = run.tr.peak;
  rep.strategy = to_string(plan.strategy);
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return rep;
}

}  // namespace nnvmc::batching
