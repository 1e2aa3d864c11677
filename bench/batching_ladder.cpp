/// Ladder term Σ_x Σ_cd L[x,a,c] L[x,b,d] t[i,c,j,d] ("xac,xbd,icjd->iajb") at budgets of
/// 1/2, 1/8 and 1/32 of its unsplit need: C-split vs X-split vs auto, GFLOP/s as a fraction
/// of the measured DGEMM rate (one run, ratios).
/// usage: batching_ladder [o v naux] [device] [backend]   (defaults 10 90 300 cpu torch)
/// Each plan runs REPS times (env, default 3) with one workspace kept across the runs, as a
/// CCSD run keeps it across iterations: "cold" is the first run (fresh buffers, page faults),
/// "warm" the median of the others. EXPLAIN=1 prints every plan; BUDGETS=2,8,32 and
/// SPLITS=c,x,auto choose the rows; TILE_BYTES overrides the layout-copy tile size (0: none).
/// The operands live on the host; device cuda with backend torch moves each batch to the GPU
/// (pinned, non-blocking), backend cublas (device cpu) stages them through the staged cuBLAS
/// pipeline. The DGEMM rate is measured where the GEMMs run.
#include <torch/torch.h>

#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <vector>

#include "batching/backend.hpp"
#include "batching/budget.hpp"
#include "batching/contract.hpp"
#include "batching/workspace.hpp"
#include "bench_args.hpp"

namespace b = nnvmc::batching;

namespace {
int run(int argc, char** argv) {
  const std::int64_t o = argc > 3 ? std::atol(argv[1]) : 10, v = argc > 3 ? std::atol(argv[2]) : 90,
                     x = argc > 3 ? std::atol(argv[3]) : 300;
  const std::string device = argc > 4 ? argv[4] : "cpu";
  const b::BackendKind backend = b::parse_backend(argc > 5 ? argv[5] : "torch");
  const std::string gemm_device = backend == b::BackendKind::cublas ? "cuda" : device;
  b::ensure_device_runtime(gemm_device);
  b::CostModel rates = b::CostModel::measure(gemm_device);
  if (std::getenv("TILE_BYTES")) rates.tile_bytes = std::atof(std::getenv("TILE_BYTES"));  // 0: no tiles
  // DGEMM rate at a CCSD-like size (n = 2048), for the fraction
  const auto opts = torch::TensorOptions().dtype(torch::kFloat64).device(torch::Device(gemm_device));
  torch::Tensor A = torch::rand({2048, 2048}, opts), B = torch::rand({2048, 2048}, opts), C = torch::empty({2048, 2048}, opts);
  torch::mm_out(C, A, B);
  double best = 1e30;
  for (int r = 0; r < 3; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    torch::mm_out(C, A, B);
    (void)C.sum().item<double>();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  const double dgemm = 2.0 * 2048.0 * 2048.0 * 2048.0 / best;
  std::printf("o %ld v %ld naux %ld  device %s  backend %s  DGEMM %.1f GFLOP/s (planner rate %.1f)\n", long(o),
              long(v), long(x), device.c_str(), b::to_string(backend).c_str(), dgemm * 1e-9,
              rates.gemm_flops_per_s * 1e-9);
  torch::manual_seed(1);
  const torch::Tensor L = torch::randn({x, v, v}, torch::kFloat64), t = torch::randn({o, v, o, v}, torch::kFloat64);
  torch::Tensor out = torch::empty({o, v, o, v}, torch::kFloat64), ref = torch::empty_like(out);
  b::PlanOptions p;
  p.device = device;
  p.backend = backend;
  p.cost = rates;
  const int reps = std::max(2, std::getenv("REPS") ? std::atoi(std::getenv("REPS")) : 3);
  const bool explain = std::getenv("EXPLAIN") != nullptr;
  // runs `plan` reps times with one workspace; returns {cold, warm median} reports
  auto run = [&](const b::Plan& plan, torch::Tensor& into) {
    b::PlanOptions q = p;
    q.workspace = std::make_shared<b::Workspace>();
    std::vector<b::ExecReport> r;
    for (int i = 0; i < reps; ++i) r.push_back(b::execute(plan, {L, L, t}, into, q));
    std::sort(r.begin() + 1, r.end(), [](const auto& x, const auto& y) { return x.seconds < y.seconds; });
    return std::make_pair(r[0], r[1 + (reps - 1) / 2]);
  };
  const auto unsplit = b::plan_contraction("xac,xbd,icjd->iajb", {L, L, t}, out, p);
  const auto [c0, w0] = run(unsplit, ref);
  if (explain) std::printf("%s\n", unsplit.explain().c_str());
  std::printf("unsplit need %s: cold %.2f s (%.0f%% of DGEMM), warm %.2f s, %.1f GFLOP/s (%.0f%% of DGEMM)\n",
              b::format_bytes(double(unsplit.peak_bytes)).c_str(), c0.seconds, 100 * c0.gflops() * 1e9 / dgemm,
              w0.seconds, w0.gflops(), 100 * w0.gflops() * 1e9 / dgemm);
  std::printf("%-8s %-5s %8s %8s %8s %10s %9s %10s %7s %s\n", "budget", "split", "batches", "cold_s", "warm_s",
              "GFLOP/s", "%DGEMM", "h2d_MiB", "ok", "blocks");
  // BUDGETS=2,8,32 (divisors of the unsplit need), SPLITS=c,x,auto: what to run
  const auto divs = nnvmc::bench::split_list(std::getenv("BUDGETS") ? std::getenv("BUDGETS") : "2,8,32");
  const auto splits = nnvmc::bench::split_list(std::getenv("SPLITS") ? std::getenv("SPLITS") : "c,x,auto");
  for (const auto& dtext : divs)
    for (const auto& stext : splits) {
      const int div = std::atoi(dtext.c_str());
      const b::SplitStrategy s = b::parse_split(stext);
      p.budget_bytes = unsplit.peak_bytes / div;
      p.split = s;
      try {
        const auto plan = b::plan_contraction("xac,xbd,icjd->iajb", {L, L, t}, out, p);
        const auto [cold, r] = run(plan, out);
        if (explain) std::printf("%s\n", plan.explain().c_str());
        const double err = (out - ref).abs().max().item<double>() / ref.abs().max().item<double>();
        std::string blocks;
        for (auto [l, bs] : plan.blocks) blocks += std::string(1, l) + ":" + std::to_string(bs) + " ";
        std::printf("1/%-6d %-5s %8ld %8.2f %8.2f %10.1f %8.0f%% %10.1f %7s %s(%s)\n", div,
                    b::to_string(plan.strategy).c_str(), long(r.batches), cold.seconds, r.seconds, r.gflops(),
                    100 * r.gflops() * 1e9 / dgemm, double(r.bytes_h2d) / (1 << 20),
                    err < 1e-12 && std::max(r.peak_bytes, cold.peak_bytes) <= p.budget_bytes ? "yes" : "NO",
                    blocks.c_str(), b::to_string(s).c_str());
      } catch (const std::exception& e) {
        std::printf("1/%-6d %-5s %s\n", div, b::to_string(s).c_str(), e.what());
      }
    }
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  return nnvmc::bench::guarded_main(argv[0], [&] { return run(argc, argv); });
}
