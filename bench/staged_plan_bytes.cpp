/// What the staged (host operands, device GEMMs) path plans for the ladder term
/// "xac,xbd,icjd->iajb" at CCSD sizes: per budget (a fraction of the unsplit need), the split,
/// batches, GEMM FLOPs, host↔device bytes (what the staged backend moves; tests assert executed
/// bytes = planned bytes on the simulated device), layout copies made on the device, and the
/// bytes the same plan would move if its intermediates crossed to the host and back each batch
/// (the staged backend before it kept them on the device). No GPU needed: the planner runs with
/// the rates given below (defaults: an H200 — DGEMM 47.7 TFLOP/s, link 50 GB/s, device copies
/// 3 TB/s — and this host's measured copy rate).
/// usage: staged_plan_bytes [o v naux]   (default 32 152 1100: (H2O)8/cc-pVDZ frozen core, τ 1e-5)
/// Env: GEMM_FLOPS, LINK_BPS, DEVICE_COPY_BPS override the rates; EXPLAIN=1 prints each plan.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "batching/contract.hpp"
#include "batching/einsum.hpp"
#include "batching/plan.hpp"
#include "batching/plan_detail.hpp"

namespace b = nnvmc::batching;
using nnvmc::batching::detail::over_batches;

namespace {
double env_or(const char* name, double fallback) {
  const char* v = std::getenv(name);
  return v ? std::atof(v) : fallback;
}
bool has(const std::string& s, char c) { return s.find(c) != std::string::npos; }
}  // namespace

int main(int argc, char** argv) {
  const std::int64_t o = argc > 3 ? std::atol(argv[1]) : 32, v = argc > 3 ? std::atol(argv[2]) : 152,
                     x = argc > 3 ? std::atol(argv[3]) : 1100;
  b::CostModel m = b::CostModel::measure("cpu");  // the host's copy rate (packing, host copies)
  m.gemm_flops_per_s = env_or("GEMM_FLOPS", 47.7e12);
  m.transfer_bytes_per_s = env_or("LINK_BPS", 50e9);
  m.device_copy_bytes_per_s = env_or("DEVICE_COPY_BPS", 3e12);
  m.gemm_half_dim = 128, m.gemm_ref_dim = 4096, m.tile_bytes = 0;
  const double need = 8.0 * (2.0 * double(x * v * v) + 2.0 * double(o * o * v * v) + double(v * v) * double(v * v));
  std::printf("ladder o %lld v %lld naux %lld; host copy rate %.2f GB/s\n", (long long)o, (long long)v, (long long)x,
              m.copy_bytes_per_s / 1e9);
  for (const double fraction : {0.5, 0.125, 0.03125}) {
    b::PlanOptions opt;
    opt.backend = b::BackendKind::cublas;
    opt.cost = m;
    opt.budget_bytes = std::int64_t(need * fraction);
    const auto plan = b::make_plan(b::parse_einsum("xac,xbd,icjd->iajb"), {{x, v, v}, {x, v, v}, {o, v, o, v}}, opt,
                                   /*operands_on_device=*/true, /*out_on_device=*/true);  // host tensors, device "cpu",
                                                                                          // as the CCSD contractor plans them
    if (std::getenv("EXPLAIN")) std::printf("%s\n", plan.explain().c_str());
    // the same plan with every intermediate down and up again per batch, and a split contracted
    // block re-crossing between batches (closed by the intermediates' GEMMs)
    const int n_ops = 3;
    double inner = 1, crossing = 0;
    for (auto [c, block] : plan.blocks)
      if (!has(plan.spec.output, c)) inner *= double(plan.n_blocks(c));
    for (const auto& st : plan.steps) {
      for (const auto* in : {&st.a, &st.b})
        if (in->id >= n_ops) crossing += over_batches(plan, in->labels);
      if (!st.final) crossing += over_batches(plan, st.result);
      else if (plan.steps.size() > 1)  // each batch's block down, and up again but for a block's first; now once
        crossing += over_batches(plan, st.result) * (2 - 1 / inner) - over_batches(plan, st.result) / inner;
    }
    std::printf("budget 1/%-3.0f %6.2f GB: split %s, %lld batches, %.0f GFLOP; moves %.2f GB (intermediates crossing: "
                "%.2f GB), device copies %.2f GB, modelled %.3f s\n",
                1 / fraction, double(opt.budget_bytes) / 1e9, b::to_string(plan.strategy).c_str(),
                (long long)plan.batches, plan.flops / 1e9, plan.transfer_bytes / 1e9,
                (plan.transfer_bytes + crossing) / 1e9, plan.device_copy_bytes / 1e9, plan.modelled_seconds);
  }
}
