/// Executes a Plan batch by batch with a GEMM backend, accounting every buffer it owns by
/// the same rules the planner used (plan_detail.hpp: simulate_batch).
#include <ATen/ATen.h>

#include <chrono>
#include <functional>

#include "batching/backend.hpp"
#include "batching/budget.hpp"
#include "batching/contract.hpp"
#include "batching/plan_detail.hpp"
#include "core/errors.hpp"

namespace nnvmc::batching {

namespace {

bool has(const std::string& s, char c) { return s.find(c) != std::string::npos; }

/// Bytes of executor-owned buffers alive now and at most.
struct Tracker {
  std::int64_t live = 0, peak = 0;
  void alloc(std::int64_t b) { live += b, peak = std::max(peak, live); }
  void free(std::int64_t b) { live -= b; }
};

/// A tensor with its labels (memory order) and the bytes it owns (0 for views).
struct Slot {
  at::Tensor t;
  std::string labels;
  std::int64_t owned = 0;
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
  if (!device.is_cuda()) return t.to(device).contiguous();
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
  Tracker tr;
  ExecReport rep;
  bool inner = false;
  at::Tensor acc;  // accumulator [B, M, N] of the final step when contracted labels are split

  /// Brings operand/intermediate `x` into the GEMM layout rows×cols (as [B, R, C]).
  Slot prepare(const StepInput& x, std::vector<Slot>& inter, const Box& box, bool is_a,
               const Step& st) {
    const int n_ops = int(plan.spec.inputs.size());
    Slot s;
    s.labels = x.labels;
    if (x.id >= n_ops) {
      s = std::move(inter[x.id - n_ops]);  // the step consumes the intermediate
      inter[x.id - n_ops] = Slot{};
    } else {
      s.t = slice(ops[x.id], x.labels, box);
      if (!plan.operands_on_device && !plan.resident[x.id]) {
        s.t = to_device(s.t, device);
        s.owned = s.t.nbytes();
        rep.bytes_h2d += s.owned;
        tr.alloc(s.owned);
      }
    }
    auto replace = [&](at::Tensor t, std::string labels) {
      tr.alloc(t.nbytes());
      tr.free(s.owned);
      s = Slot{std::move(t), std::move(labels), std::int64_t(0)};
      s.owned = s.t.nbytes();
    };
    if (!x.summed.empty()) {
      std::vector<std::int64_t> dims;
      std::string kept;
      for (std::size_t a = 0; a < s.labels.size(); ++a)
        has(x.summed, s.labels[a]) ? dims.push_back(std::int64_t(a)) : void(kept += s.labels[a]);
      replace(s.t.sum(dims), kept);
    }
    const std::string rows = is_a ? st.m : st.k, cols = is_a ? st.k : st.n;
    const std::string natural = st.batch + rows + cols;
    const std::string mem = x.trans ? st.batch + cols + rows : natural;
    if (x.transpose_copy || s.labels != mem || !s.t.is_contiguous())
      replace(s.t.permute(permutation(s.labels, natural)).contiguous(), natural);
    const std::int64_t B = extent_of(s, st.batch), R = extent_of(s, rows), C = extent_of(s, cols);
    if (s.labels == natural) s.t = s.t.view({B, R, C});
    else s.t = s.t.view({B, C, R}).transpose(1, 2);
    return s;
  }

  void run_batch(const Box& box) {
    std::vector<Slot> inter(plan.steps.size());
    for (std::size_t si = 0; si < plan.steps.size(); ++si) {
      const Step& st = plan.steps[si];
      // result shape before the operands are reshaped to matrices
      std::vector<std::int64_t> rshape;
      for (char l : st.result) {
        const auto it = box.find(l);
        rshape.push_back(it != box.end() ? it->second.second : plan.extents.at(l));
      }
      Slot a = prepare(st.a, inter, box, true, st);
      Slot b = prepare(st.b, inter, box, false, st);
      const std::int64_t B = a.t.size(0), M = a.t.size(1), K = a.t.size(2), N = b.t.size(2);
      rep.flops += 2.0 * double(B) * double(M) * double(N) * double(K);
      // slices of the operands themselves (no copy) stay valid for the whole execution
      const bool stable_a = stable(st.a, a), stable_b = stable(st.b, b);
      if (!st.final) {
        at::Tensor c = at::empty({B, M, N}, a.t.options());
        tr.alloc(c.nbytes());
        gemm.bmm(a.t, b.t, c, false, stable_a, stable_b);
        gemm.synchronize();  // the next step reads c
        inter[si] = Slot{c.view(rshape), st.result, std::int64_t(c.nbytes())};
      } else if (plan.out_direct) {
        gemm.bmm(a.t, b.t, slice(out, plan.spec.output, box).view({B, M, N}), inner, stable_a, stable_b);
      } else if (inner) {
        gemm.bmm(a.t, b.t, acc, true, stable_a, stable_b);
      } else {
        at::Tensor c = at::empty({B, M, N}, a.t.options());
        tr.alloc(c.nbytes());
        gemm.bmm(a.t, b.t, c, false, stable_a, stable_b);
        gemm.synchronize();
        write_out(c.view(rshape), st.result, box);
        tr.free(c.nbytes());
      }
      tr.free(a.owned + b.owned);
    }
  }

  bool stable(const StepInput& x, const Slot& s) const {
    return x.id < int(plan.spec.inputs.size()) && s.t.is_alias_of(ops[x.id]);
  }

  void write_out(const at::Tensor& r, const std::string& labels, const Box& box) {
    slice(out, plan.spec.output, box).copy_(r.permute(permutation(labels, plan.spec.output)));
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
    at::Tensor r = dims.empty() ? t.clone() : t.sum(dims);
    tr.alloc(r.nbytes());
    write_out(r, kept, {});
    tr.free(r.nbytes());
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
  const c10::Device device(options.device);
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
  std::vector<at::Tensor> ops = operands;
  Runner run{plan, ops, out, device, gemm, Tracker{}, ExecReport{}, false, at::Tensor()};
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (!ops[i].is_contiguous()) {  // the plan assumes row-major operands
      ops[i] = ops[i].contiguous();
      run.tr.alloc(ops[i].nbytes());
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
  if (plan.steps.empty()) {
    run.run_single();
    run.rep.batches = 1;
  } else {
    if (run.inner && plan.out_direct) out.zero_();
    const Step& last = plan.steps.back();
    Box box;
    for_each_box(plan, outer, box, 0, [&] {
      std::int64_t acc_bytes = 0;
      if (run.inner && !plan.out_direct) {
        auto ext = [&](const std::string& ls) {
          std::int64_t v = 1;
          for (char l : ls) v *= box.count(l) ? box.at(l).second : plan.extents.at(l);
          return v;
        };
        run.acc = at::zeros({ext(last.batch), ext(last.m), ext(last.n)}, out.options().device(device));
        acc_bytes = run.acc.nbytes();
        run.tr.alloc(acc_bytes);
      }
      for_each_box(plan, inner, box, 0, [&] {
        run.run_batch(box);
        run.rep.batches += 1;
      });
      if (acc_bytes) {
        run.gemm.synchronize();  // acc is complete
        std::vector<std::int64_t> rshape;
        for (char l : last.result) rshape.push_back(box.count(l) ? box.at(l).second : plan.extents.at(l));
        run.write_out(run.acc.view(rshape), last.result, box);
        run.acc = at::Tensor();
        run.tr.free(acc_bytes);
      }
    });
  }
  gemm.synchronize();
  ExecReport rep = run.rep;
  rep.bytes_h2d += gemm.bytes_h2d();
  rep.bytes_d2h += gemm.bytes_d2h();
  rep.peak_bytes = run.tr.peak;
  rep.strategy = to_string(plan.strategy);
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return rep;
}

}  // namespace nnvmc::batching
