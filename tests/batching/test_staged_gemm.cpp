// The staged GEMM backend (pinned staging, copy/compute overlap on three streams, resident
// operands, outputs kept on the device while they accumulate), run on a simulated device whose
// streams execute lazily or run ahead (host_device_ops.hpp), so every missing dependency
// changes the numbers. The same pipeline drives cuBLAS on a GPU.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "batching/backend.hpp"
#include "batching/contract.hpp"
#include "batching/einsum.hpp"
#include "batching/cuda_runtime.hpp"
#include "core/errors.hpp"
#include "host_device_ops.hpp"

using namespace nnvmc;
using batching::StagedGemmOptions;
using test::HostDeviceOps;

namespace {

std::unique_ptr<batching::GemmBackend> staged(HostDeviceOps::Order order, std::int64_t resident_bytes) {
  StagedGemmOptions o;
  o.resident_bytes = resident_bytes;
  return batching::make_staged_backend(std::make_unique<HostDeviceOps>(order), o);
}

struct StagedCase {
  HostDeviceOps::Order order;
  std::int64_t resident;
};
const StagedCase kCases[] = {{HostDeviceOps::Order::lazy, 0},
                       {HostDeviceOps::Order::lazy, 1 << 24},
                       {HostDeviceOps::Order::run_ahead, 0},
                       {HostDeviceOps::Order::run_ahead, 1 << 24}};

}  // namespace

TEST(StagedGemm, SequencesOfBatchesMatchTorchUnderLazyAndRunAheadStreams) {
  for (const auto& [order, resident] : kCases) {
    for (const auto dtype : {torch::kFloat64, torch::kFloat32}) {
      torch::manual_seed(3);
      const auto opt = torch::dtype(dtype);
      // Operands reused across calls (stable), transposed views, and outputs that are
      // accumulated by consecutive calls, then left for another block, then accumulated again.
      const auto A = torch::randn({2, 7, 5}, opt), B = torch::randn({2, 5, 6}, opt);
      const auto At = torch::randn({2, 5, 7}, opt).transpose(1, 2);  // column-major [2, 7, 5]
      auto c1 = torch::zeros({2, 7, 6}, opt), c2 = torch::full({2, 7, 6}, 1.5, opt), c3 = torch::empty({2, 7, 6}, opt);
      auto e1 = torch::zeros({2, 7, 6}, opt), e2 = c2.clone(), e3 = torch::empty({2, 7, 6}, opt);
      auto backend = staged(order, resident);
      for (int rep = 0; rep < 3; ++rep) {
        const auto scale = double(rep + 1);
        const auto Ar = A * scale;  // a fresh (unstable) operand every time
        backend->bmm(Ar, B, c1, true, false, true);
        backend->bmm(At, B, c1, true, true, true);
        backend->bmm(A, B, c2, true, true, true);
        backend->bmm(At, B, c3, false, true, true);
        e1 += torch::bmm(Ar, B) + torch::bmm(At, B);
        e2 += torch::bmm(A, B);
        e3 = torch::bmm(At, B);
      }
      backend->synchronize();
      const double tol = dtype == torch::kFloat64 ? 1e-12 : 1e-4;
      EXPECT_TRUE(torch::allclose(c1, e1, tol, tol)) << "order " << int(order) << " resident " << resident;
      EXPECT_TRUE(torch::allclose(c2, e2, tol, tol)) << "order " << int(order) << " resident " << resident;
      EXPECT_TRUE(torch::allclose(c3, e3, tol, tol)) << "order " << int(order) << " resident " << resident;
    }
  }
}

TEST(StagedGemm, LaterBlocksIntoTheSameOutputWinOverEarlierOnes) {
  for (const auto& [order, resident] : kCases) {
    torch::manual_seed(4);
    const auto A = torch::randn({2, 6, 3}, torch::kFloat64), B = torch::randn({2, 3, 5}, torch::kFloat64);
    const auto A2 = torch::randn({2, 6, 3}, torch::kFloat64);
    auto c = torch::empty({2, 6, 5}, torch::kFloat64), d = torch::empty({2, 6, 5}, torch::kFloat64);
    auto backend = staged(order, resident);
    backend->bmm(A, B, c, false, true, true);
    backend->bmm(A, B, d, false, true, true);
    backend->bmm(A2, B, c, false, false, true);  // overwrites c: must not be undone by the first
    backend->bmm(A2, B, d, true, false, true);   // accumulates onto the second block's result
    backend->synchronize();
    EXPECT_TRUE(torch::allclose(c, torch::bmm(A2, B), 1e-12, 1e-12)) << "order " << int(order);
    EXPECT_TRUE(torch::allclose(d, torch::bmm(A, B) + torch::bmm(A2, B), 1e-12, 1e-12)) << "order " << int(order);
    auto e = torch::full({2, 6, 5}, 7.0, torch::kFloat64);  // an empty contracted axis: e = 0
    backend->bmm(torch::empty({2, 6, 0}, torch::kFloat64), torch::empty({2, 0, 5}, torch::kFloat64), e, false, false, false);
    backend->synchronize();
    EXPECT_EQ(e.abs().max().item<double>(), 0.0);
  }
}

TEST(StagedGemm, RecurringStableOperandIsUploadedOnceWhenItFits) {
  const auto A = torch::randn({1, 32, 16}, torch::kFloat64), B = torch::randn({1, 16, 64}, torch::kFloat64);
  const std::int64_t calls = 6;
  const auto h2d = [&](std::int64_t resident) {
    auto backend = staged(HostDeviceOps::Order::lazy, resident);
    for (std::int64_t i = 0; i < calls; ++i) {
      auto c = torch::empty({1, 32, 64}, torch::kFloat64);
      backend->bmm(A, B, c, false, true, true);
      backend->synchronize();
      EXPECT_TRUE(torch::allclose(c, torch::bmm(A, B), 1e-12, 1e-12));
    }
    return backend->bytes_h2d();
  };
  EXPECT_EQ(h2d(0), calls * (A.nbytes() + B.nbytes()));
  EXPECT_EQ(h2d(1 << 20), A.nbytes() + B.nbytes());
  EXPECT_EQ(h2d(A.nbytes()), A.nbytes() + calls * B.nbytes());  // only A fits
}

TEST(StagedGemm, KeptOperandsThatTheCallerDroppedMakeRoomForNewOnes) {
  // room for one kept A: the first A is dropped by the caller after one call, so the second,
  // used five times, takes its place and crosses once (without the freeing: five times)
  const auto B = torch::randn({1, 16, 64}, torch::kFloat64);
  auto backend = staged(HostDeviceOps::Order::run_ahead, 32 * 16 * 8);
  auto c = torch::empty({1, 32, 64}, torch::kFloat64);
  {
    const auto A1 = torch::randn({1, 32, 16}, torch::kFloat64);
    backend->bmm(A1, B, c, false, true, false);
    backend->synchronize();
    EXPECT_TRUE(torch::allclose(c, torch::bmm(A1, B), 1e-12, 1e-12));
  }
  const std::int64_t before = backend->bytes_h2d();
  const auto A2 = torch::randn({1, 32, 16}, torch::kFloat64);
  for (int i = 0; i < 5; ++i) {
    backend->bmm(A2, B, c, false, true, false);
    backend->synchronize();
    EXPECT_TRUE(torch::allclose(c, torch::bmm(A2, B), 1e-12, 1e-12));
  }
  EXPECT_EQ(backend->bytes_h2d() - before, A2.nbytes() + 5 * B.nbytes());
}

TEST(StagedGemm, AccumulatedOutputCrossesToTheHostOncePerBlock) {
  const auto A = torch::randn({3, 8, 4}, torch::kFloat64), B = torch::randn({3, 4, 9}, torch::kFloat64);
  auto backend = staged(HostDeviceOps::Order::run_ahead, 0);
  auto c = torch::zeros({3, 8, 9}, torch::kFloat64);
  for (int i = 0; i < 5; ++i) backend->bmm(A, B, c, true, true, true);
  backend->synchronize();
  EXPECT_TRUE(torch::allclose(c, 5 * torch::bmm(A, B), 1e-12, 1e-12));
  EXPECT_EQ(backend->bytes_d2h(), c.nbytes());
  EXPECT_EQ(backend->bytes_h2d(), 5 * (A.nbytes() + B.nbytes()) + c.nbytes());
}

TEST(StagedGemm, PlanWithStridedSlicesOrTilesIsRefusedByABackendThatNeedsContiguousBlocks) {
  const auto L = torch::randn({40, 6, 9}, torch::kFloat64), t = torch::randn({4, 9, 4, 9}, torch::kFloat64);
  auto out = torch::empty({4, 6, 4, 6}, torch::kFloat64);
  batching::PlanOptions o;  // torch on the CPU: strided operand slices under a C-split
  o.split = batching::SplitStrategy::c;
  o.cost = batching::CostModel{};
  o.budget_bytes = 20000;
  const auto plan = batching::plan_contraction("xac,xbd,icjd->iajb", {L, L, t}, out, o);
  bool strided = false;
  for (const auto& st : plan.steps) strided = strided || st.a.strided || st.b.strided;
  ASSERT_TRUE(strided) << plan.explain();
  auto backend = staged(HostDeviceOps::Order::lazy, 0);
  EXPECT_THROW(batching::execute(plan, {L, L, t}, out, o, *backend), nnvmc::InputError);
}

TEST(StagedGemm, SplitContractionsThroughTheExecutorEqualTheUnsplitResult) {
  torch::manual_seed(5);
  // The ladder-like term with a long contracted axis x, as the CCSD module uses it.
  const auto L = torch::randn({40, 6, 9}, torch::kFloat64);  // x, a, c
  const auto t = torch::randn({4, 9, 4, 9}, torch::kFloat64);  // i, c, j, d
  const std::string spec = "xac,xbd,icjd->iajb";
  const auto ref = torch::einsum(spec, {L, L, t});
  for (const auto split : {batching::SplitStrategy::c, batching::SplitStrategy::x, batching::SplitStrategy::automatic}) {
    for (const std::int64_t budget : {std::int64_t(0), std::int64_t(60000), std::int64_t(20000)}) {
      for (const auto& [order, resident] : kCases) {
        batching::PlanOptions o;
        o.split = split;
        o.budget_bytes = budget;
        o.backend = batching::BackendKind::cublas;  // planned for the staged backend: no strided slices or tiles
        auto out = torch::empty_like(ref);
        const auto plan = batching::plan_contraction(spec, {L, L, t}, out, o);
        auto backend = staged(order, resident);
        const auto rep = batching::execute(plan, {L, L, t}, out, o, *backend);
        EXPECT_TRUE(torch::allclose(out, ref, 1e-11, 1e-11))
            << "split " << batching::to_string(split) << " budget " << budget << " batches " << rep.batches;
        if (budget > 0) {
          EXPECT_LE(rep.peak_bytes, budget);
        }
      }
    }
  }
}

// Host operands planned for a device: what the executor moves (slices uploaded per batch,
// resident operands once, each output block downloaded once) is what the plan says it moves.
TEST(StagedGemm, HostOperandPlanMovesWhatItsPlanSays) {
  torch::manual_seed(6);
  const auto L = torch::randn({40, 6, 9}, torch::kFloat64), t = torch::randn({4, 9, 4, 9}, torch::kFloat64);
  const std::string spec = "xac,xbd,icjd->iajb";
  const auto ref = torch::einsum(spec, {L, L, t});
  for (const auto split : {batching::SplitStrategy::c, batching::SplitStrategy::x, batching::SplitStrategy::automatic}) {
    for (const std::int64_t budget : {std::int64_t(0), std::int64_t(60000), std::int64_t(20000)}) {
      batching::PlanOptions o;
      o.split = split;
      o.budget_bytes = budget;
      o.cost = batching::CostModel{};
      const auto plan = batching::make_plan(batching::parse_einsum(spec), {{40, 6, 9}, {40, 6, 9}, {4, 9, 4, 9}}, o,
                                            /*operands_on_device=*/false, /*out_on_device=*/false);
      auto out = torch::empty_like(ref);
      const auto rep = batching::execute(plan, {L, L, t}, out, o);
      EXPECT_TRUE(torch::allclose(out, ref, 1e-11, 1e-11));
      EXPECT_EQ(double(rep.bytes_h2d + rep.bytes_d2h), plan.transfer_bytes)
          << "split " << batching::to_string(split) << " budget " << budget << "\n" << plan.explain();
      EXPECT_EQ(rep.bytes_d2h, out.nbytes());
    }
  }
}

// Plans for the staged backend count what it moves: every split of contractions with two and
// three operands (intermediates, hoisted copies, reduced operands, split contracted labels)
// moves, on a fresh backend that keeps what it may, exactly the plan's transfer bytes.
TEST(StagedGemm, StagedPlanMovesWhatItsPlanSays) {
  torch::manual_seed(12);
  const auto opt = torch::dtype(torch::kFloat64);
  struct Contraction {
    std::string spec;
    std::vector<torch::Tensor> ops;
    std::vector<std::pair<int, int>> path;  // empty: searched
  };
  const auto L = torch::randn({40, 6, 9}, opt);
  const std::vector<Contraction> cases = {
      {"xac,xbd,icjd->iajb", {L, L.clone(), torch::randn({4, 9, 4, 9}, opt)}, {}},
      {"iakc,jbkc->iajb", {torch::randn({5, 8, 6, 8}, opt), torch::randn({5, 8, 6, 8}, opt)}, {}},
      {"abz,bc,cd->ad", {torch::randn({30, 20, 3}, opt), torch::randn({20, 25}, opt), torch::randn({25, 30}, opt)}, {}},
      // small outputs of large contracted labels: only blocks of k, l fit
      {"ikz,kj->ij", {torch::randn({2, 3000, 2}, opt), torch::randn({3000, 3}, opt)}, {}},
      // kl·lj first: an intermediate [k, j] whose k blocks each add to the whole output
      {"ik,kl,lj->ij", {torch::randn({2, 2000}, opt), torch::randn({2000, 40}, opt), torch::randn({40, 1}, opt)}, {{1, 2}, {0, 3}}}};
  int split_contracted = 0, multi_step_split_contracted = 0, hoisted = 0;
  for (const auto& [spec, ops, path] : cases) {
    const auto ref = torch::einsum(spec, ops);
    for (const auto split : {batching::SplitStrategy::c, batching::SplitStrategy::x, batching::SplitStrategy::automatic}) {
      for (const std::int64_t budget : {std::int64_t(0), std::int64_t(60000), std::int64_t(20000), std::int64_t(9000)}) {
        batching::PlanOptions o;
        o.split = split;
        o.budget_bytes = budget;
        o.backend = batching::BackendKind::cublas;  // planned for the staging pipeline
        o.cost = batching::CostModel{};
        o.path = path;
        auto out = torch::empty_like(ref);
        batching::Plan plan;
        try {
          plan = batching::plan_contraction(spec, ops, out, o);
        } catch (const BudgetError&) {
          continue;  // the smallest budgets do not fit every strategy
        }
        ASSERT_TRUE(plan.staged);
        bool contracted = false;
        for (auto [l, b] : plan.blocks) contracted = contracted || plan.spec.output.find(l) == std::string::npos;
        split_contracted += contracted;
        multi_step_split_contracted += contracted && plan.steps.size() > 1;
        for (const auto& st : plan.steps) hoisted += st.a.hoisted || st.b.hoisted;
        const auto backend = staged(HostDeviceOps::Order::run_ahead, std::int64_t(1) << 30);
        const auto rep = batching::execute(plan, ops, out, o, *backend);
        const std::string what = spec + " split " + batching::to_string(split) + " budget " + std::to_string(budget);
        EXPECT_TRUE(torch::allclose(out, ref, 1e-11, 1e-11)) << what;
        EXPECT_EQ(double(rep.bytes_h2d + rep.bytes_d2h), plan.transfer_bytes) << what << "\n" << plan.explain();
      }
    }
  }
  EXPECT_GT(split_contracted, 0);  // the accumulating blocks were among the plans
  EXPECT_GT(multi_step_split_contracted, 0);
  EXPECT_GT(hoisted, 0);  // copies made once for all batches (kept on the device)
}

// A multi-step plan's intermediates stay on the device: their GEMMs write device buffers, their
// layout copies run there, and the next GEMM reads them there. Only the output comes back (each
// block once, even when contracted labels are split), under both stream orders.
TEST(StagedGemm, IntermediatesOfMultiStepPlansNeverCrossToTheHost) {
  torch::manual_seed(13);
  const auto opt = torch::dtype(torch::kFloat64);
  const auto L = torch::randn({40, 6, 9}, opt), t = torch::randn({4, 9, 4, 9}, opt);
  const std::vector<std::pair<std::string, std::vector<torch::Tensor>>> cases = {
      {"xac,xbd,icjd->iajb", {L, L.clone(), t}},
      {"abz,bc,cd->ad", {torch::randn({30, 20, 3}, opt), torch::randn({20, 25}, opt), torch::randn({25, 30}, opt)}},
      {"ik,kl,lj->ij", {torch::randn({2, 2000}, opt), torch::randn({2000, 40}, opt), torch::randn({40, 1}, opt)}}};
  int multi_step = 0, device_copies = 0;
  for (const auto& [spec, ops] : cases) {
    const auto ref = torch::einsum(spec, ops);
    for (const auto split : {batching::SplitStrategy::c, batching::SplitStrategy::x}) {
      for (const std::int64_t budget : {std::int64_t(0), std::int64_t(60000), std::int64_t(20000)}) {
        for (const auto order : {HostDeviceOps::Order::lazy, HostDeviceOps::Order::run_ahead}) {
          batching::PlanOptions o;
          o.split = split;
          o.budget_bytes = budget;
          o.backend = batching::BackendKind::cublas;
          o.cost = batching::CostModel{};
          auto out = torch::empty_like(ref);
          batching::Plan plan;
          try {
            plan = batching::plan_contraction(spec, ops, out, o);
          } catch (const BudgetError&) {
            continue;
          }
          if (plan.steps.size() < 2) continue;
          ++multi_step;
          auto device = std::make_unique<HostDeviceOps>(order);
          const HostDeviceOps& d = *device;
          StagedGemmOptions so;
          so.resident_bytes = std::int64_t(1) << 30;
          auto backend = batching::make_staged_backend(std::move(device), so);
          const auto rep = batching::execute(plan, ops, out, o, *backend);
          const std::string what = spec + " split " + batching::to_string(split) + " budget " + std::to_string(budget);
          EXPECT_TRUE(torch::allclose(out, ref, 1e-11, 1e-11)) << what;
          EXPECT_EQ(rep.bytes_d2h, out.nbytes()) << what << "\n" << plan.explain();
          device_copies += d.strided_copies();
          EXPECT_EQ(d.strided_copies() > 0, plan.device_copy_bytes > 0) << what;
        }
      }
    }
  }
  EXPECT_GT(multi_step, 0);
  EXPECT_GT(device_copies, 0);  // some intermediate needed a layout copy, made on the device
}

// A layout copy of a kept intermediate with more dimensions than the device kernel takes is
// made on the host: the intermediate comes back first, with the GEMM's values.
TEST(StagedGemm, KeptIntermediateCopiedOnTheHostWhenItHasTooManyDimensions) {
  torch::manual_seed(14);
  auto backend = staged(HostDeviceOps::Order::lazy, 0);
  const auto a = torch::randn({1, 65536, 3}, torch::kFloat64), b = torch::randn({1, 3, 2}, torch::kFloat64);
  auto c = torch::empty({1, 65536, 2}, torch::kFloat64);
  ASSERT_TRUE(backend->keeps_intermediates());
  backend->keep(c);
  backend->bmm(a, b, c, false, false, false);
  std::vector<std::int64_t> dims(17, 2), reversed;
  for (std::int64_t d = 16; d >= 0; --d) reversed.push_back(d);
  const auto src = c.view(dims).permute(reversed);  // 17 dimensions, more than the kernel takes
  auto dst = torch::empty(src.sizes(), torch::kFloat64);
  EXPECT_FALSE(backend->copy_kept(src, dst));
  EXPECT_TRUE(torch::allclose(c, torch::bmm(a, b), 1e-12, 1e-12));  // fetched into c's memory
  EXPECT_EQ(backend->bytes_d2h(), c.nbytes());
  backend->synchronize();
}

// A GEMM with an empty contracted extent writes its (kept) output on the host; the other kept
// intermediates stay on the device with their values.
TEST(StagedGemm, AnEmptySumLeavesOtherKeptIntermediatesOnTheDevice) {
  torch::manual_seed(15);
  for (const auto order : {HostDeviceOps::Order::lazy, HostDeviceOps::Order::run_ahead}) {
    auto backend = staged(order, 0);
    const auto a = torch::randn({2, 5, 3}, torch::kFloat64), b = torch::randn({2, 3, 4}, torch::kFloat64);
    auto first = torch::empty({2, 5, 4}, torch::kFloat64), empty_sum = torch::empty({2, 5, 6}, torch::kFloat64);
    backend->keep(first);
    backend->bmm(a, b, first, false, false, false);
    backend->keep(empty_sum);
    backend->bmm(torch::empty({2, 5, 0}, torch::kFloat64), torch::empty({2, 0, 6}, torch::kFloat64), empty_sum, false,
                 false, false);
    EXPECT_TRUE(torch::equal(empty_sum, torch::zeros_like(empty_sum)));
    const auto w = torch::randn({2, 4, 7}, torch::kFloat64);
    auto out = torch::empty({2, 5, 7}, torch::kFloat64);
    backend->bmm(first, w, out, false, false, false);  // reads `first` where it was kept
    backend->synchronize();
    EXPECT_TRUE(torch::allclose(out, torch::bmm(torch::bmm(a, b), w), 1e-12, 1e-12));
    EXPECT_EQ(backend->bytes_d2h(), out.nbytes());
  }
}

// A contraction repeated (as every CCSD iteration repeats its terms) reuses the device buffers
// of its intermediates and staging: no allocation after the first two runs (the output slots
// alternate).
TEST(StagedGemm, RepeatedContractionsReuseTheirDeviceBuffers) {
  torch::manual_seed(16);
  const auto L = torch::randn({40, 6, 9}, torch::kFloat64), t = torch::randn({4, 9, 4, 9}, torch::kFloat64);
  const std::string spec = "xac,xbd,icjd->iajb";
  const auto ref = torch::einsum(spec, {L, L, t});
  for (const std::int64_t budget : {std::int64_t(0), std::int64_t(20000)}) {
    batching::PlanOptions o;
    o.backend = batching::BackendKind::cublas;
    o.cost = batching::CostModel{};
    o.budget_bytes = budget;
    auto out = torch::empty_like(ref);
    const auto plan = batching::plan_contraction(spec, {L, L, t}, out, o);
    ASSERT_GE(plan.steps.size(), 2u);
    auto device = std::make_unique<HostDeviceOps>(HostDeviceOps::Order::run_ahead);
    const HostDeviceOps& d = *device;
    auto backend = batching::make_staged_backend(std::move(device), StagedGemmOptions{0});
    for (int run = 0; run < 2; ++run) batching::execute(plan, {L, L, t}, out, o, *backend);
    const int allocations = d.device_allocations();
    for (int run = 0; run < 3; ++run) {
      out.zero_();
      batching::execute(plan, {L, L, t}, out, o, *backend);
      EXPECT_TRUE(torch::allclose(out, ref, 1e-11, 1e-11)) << "budget " << budget;
    }
    EXPECT_EQ(d.device_allocations(), allocations) << "budget " << budget << "\n" << plan.explain();
  }
}

// With a device budget the backend holds staging buffers, kept intermediates and resident
// operands together within it: recurring operands that would pass it are not kept (or are
// evicted, least recently read first), so they cross again, but the device never holds more
// than the budget, as counted by the simulated device itself.
TEST(StagedGemm, DeviceMemoryStaysWithinItsBudgetAndOperandsThatDoNotFitCrossAgain) {
  torch::manual_seed(5);
  const auto opt = torch::kFloat64;
  std::vector<torch::Tensor> As;  // eight recurring operands, 32 KiB each
  for (int i = 0; i < 8; ++i) As.push_back(torch::randn({4, 32, 32}, opt));
  const auto B = torch::randn({4, 32, 32}, opt);
  const auto staging = 2 * 2 * B.nbytes() + 2 * B.nbytes();  // two slots of a and b, two outputs
  for (const std::int64_t budget : {std::int64_t(0), std::int64_t(staging + 3 * B.nbytes())}) {
    auto ops = std::make_unique<HostDeviceOps>(HostDeviceOps::Order::run_ahead);
    const HostDeviceOps& d = *ops;
    StagedGemmOptions o;
    o.resident_bytes = std::int64_t(1) << 24;
    o.device_budget_bytes = budget;
    auto backend = batching::make_staged_backend(std::move(ops), o);
    EXPECT_EQ(backend->device_budget_bytes(), budget);
    for (int rep = 0; rep < 3; ++rep)
      for (const auto& A : As) {
        auto c = torch::empty({4, 32, 32}, opt);
        backend->bmm(A, B, c, false, true, true);
        backend->synchronize();
        EXPECT_TRUE(torch::allclose(c, torch::bmm(A, B), 1e-12, 1e-12));
      }
    EXPECT_EQ(backend->peak_device_bytes(), std::int64_t(d.peak_device_bytes()));
    if (budget == 0) {  // no limit: every operand crosses once
      EXPECT_EQ(backend->bytes_h2d(), 9 * B.nbytes());
      EXPECT_GT(backend->peak_device_bytes(), 9 * B.nbytes());
    } else {
      EXPECT_LE(std::int64_t(d.peak_device_bytes()), budget);
      EXPECT_GT(backend->bytes_h2d(), 9 * B.nbytes());   // some cross again ...
      EXPECT_LT(backend->bytes_h2d(), 48 * B.nbytes());  // ... but B and a few stay
    }
  }
}

// An explicit device budget larger than the device's free memory is refused when the backend is
// made (not by the device allocator in the middle of a run); the free memory itself is accepted.
TEST(StagedGemm, ADeviceBudgetAboveTheDevicesFreeMemoryIsRefusedUpFront) {
  constexpr std::size_t device = std::size_t(1) << 26;  // a 64 MiB simulated device
  StagedGemmOptions o;
  o.device_budget_bytes = std::int64_t(device) + 1;
  try {
    batching::make_staged_backend(std::make_unique<HostDeviceOps>(HostDeviceOps::Order::lazy, device), o);
    FAIL() << "no BudgetError";
  } catch (const BudgetError& e) {
    EXPECT_NE(std::string(e.what()).find("free memory (64.00 MiB)"), std::string::npos) << e.what();
  }
  o.device_budget_bytes = std::int64_t(device);
  auto backend = batching::make_staged_backend(std::make_unique<HostDeviceOps>(HostDeviceOps::Order::lazy, device), o);
  EXPECT_EQ(backend->device_budget_bytes(), std::int64_t(device));
  o.device_budget_bytes = -1;  // auto: a fraction of it
  auto auto_backend = batching::make_staged_backend(std::make_unique<HostDeviceOps>(HostDeviceOps::Order::lazy, device), o);
  EXPECT_LT(auto_backend->device_budget_bytes(), std::int64_t(device));
  EXPECT_GT(auto_backend->device_budget_bytes(), 0);
}

// A budget that cannot hold one call's staging buffers is a BudgetError naming the budget, and
// evicting resident operands to make room for staging buffers keeps the results right.
TEST(StagedGemm, StagingThatCannotFitTheDeviceBudgetIsABudgetError) {
  const auto A = torch::randn({2, 64, 64}, torch::kFloat64), B = torch::randn({2, 64, 64}, torch::kFloat64);
  StagedGemmOptions o;
  o.device_budget_bytes = A.nbytes();  // not even a's and b's slots
  auto backend = batching::make_staged_backend(std::make_unique<HostDeviceOps>(HostDeviceOps::Order::lazy), o);
  auto c = torch::empty({2, 64, 64}, torch::kFloat64);
  try {
    backend->bmm(A, B, c, false, true, true);
    backend->synchronize();
    FAIL() << "no BudgetError";
  } catch (const BudgetError& e) {
    EXPECT_NE(std::string(e.what()).find("device memory budget"), std::string::npos) << e.what();
  }
  // small operands kept resident first, then larger ones whose staging needs their room
  const auto a = torch::randn({1, 16, 16}, torch::kFloat64), b = torch::randn({1, 16, 16}, torch::kFloat64);
  o.device_budget_bytes = 7 * A.nbytes() / 2;  // the small ones fit beside their slots, not beside A's
  o.resident_bytes = std::int64_t(1) << 24;
  auto evicting = batching::make_staged_backend(std::make_unique<HostDeviceOps>(HostDeviceOps::Order::run_ahead), o);
  std::vector<torch::Tensor> small;
  for (int i = 0; i < 40; ++i) small.push_back(torch::randn({1, 16, 16}, torch::kFloat64));
  auto cs = torch::empty({1, 16, 16}, torch::kFloat64);
  for (const auto& x : small) evicting->bmm(x, b, cs, false, true, true);
  evicting->synchronize();
  evicting->bmm(A, B, c, false, true, true);  // its slots need the room the small ones hold
  evicting->synchronize();
  EXPECT_TRUE(torch::allclose(c, torch::bmm(A, B), 1e-12, 1e-12));
  EXPECT_LE(evicting->peak_device_bytes(), 7 * A.nbytes() / 2);
  const auto before = evicting->bytes_h2d();
  evicting->bmm(small[0], b, cs, false, true, true);
  evicting->synchronize();
  EXPECT_TRUE(torch::allclose(cs, torch::bmm(small[0], b), 1e-12, 1e-12));
  EXPECT_GE(evicting->bytes_h2d() - before, small[0].nbytes());  // evicted: it crossed again
  // an operand larger than the whole budget fails at once, evicting nothing on the way
  const auto huge = torch::randn({1, 256, 256}, torch::kFloat64);  // 512 KiB > the 224 KiB budget
  const auto kept_before = evicting->bytes_h2d();
  auto ch = torch::empty({1, 256, 16}, torch::kFloat64);
  EXPECT_THROW(evicting->bmm(huge, torch::randn({1, 256, 16}, torch::kFloat64), ch, false, true, true), BudgetError);
  evicting->bmm(small[0], b, cs, false, true, true);  // b, resident before, does not cross again
  evicting->synchronize();
  EXPECT_TRUE(torch::allclose(cs, torch::bmm(small[0], b), 1e-12, 1e-12));
  EXPECT_LE(evicting->bytes_h2d() - kept_before, small[0].nbytes());
}

// The same pipeline on cuBLAS: on a machine with a CUDA device (and a CUDA build) the results
// must equal torch::bmm; without one, asking for the backend is a clear error, not a crash.
TEST(StagedGemm, CublasBackendMatchesTorchOnAGpuOrFailsClearlyWithout) {
  std::unique_ptr<batching::GemmBackend> backend;
  try {
    backend = batching::make_cublas_backend(0);
  } catch (const Error& e) {
    EXPECT_EQ(batching::cuda_device_count(), 0) << "a CUDA device is present, yet: " << e.what();
    return;
  }
  torch::manual_seed(9);
  const auto A = torch::randn({4, 33, 17}, torch::kFloat64), B = torch::randn({4, 17, 29}, torch::kFloat64);
  const auto Bt = torch::randn({4, 29, 17}, torch::kFloat64).transpose(1, 2);
  auto c = torch::zeros({4, 33, 29}, torch::kFloat64), d = torch::empty({4, 33, 29}, torch::kFloat64);
  for (int i = 0; i < 3; ++i) backend->bmm(A, B, c, true, true, true);
  backend->bmm(A, Bt, d, false, true, false);
  backend->synchronize();
  EXPECT_TRUE(torch::allclose(c, 3 * torch::bmm(A, B), 1e-12, 1e-12));
  EXPECT_TRUE(torch::allclose(d, torch::bmm(A, Bt), 1e-12, 1e-12));
  const auto As = A.to(torch::kFloat32), Bs = B.to(torch::kFloat32);
  auto cs = torch::empty({4, 33, 29}, torch::kFloat32);
  backend->bmm(As, Bs, cs, false, false, false);
  backend->synchronize();
  EXPECT_TRUE(torch::allclose(cs, torch::bmm(As, Bs), 1e-4, 1e-4));
  // a three-operand contraction: its intermediates and their layout copies stay on the GPU
  const auto L = torch::randn({40, 6, 9}, torch::kFloat64), t = torch::randn({4, 9, 4, 9}, torch::kFloat64);
  const std::string spec = "xac,xbd,icjd->iajb";
  const auto ref = torch::einsum(spec, {L, L, t});
  for (const std::int64_t budget : {std::int64_t(0), std::int64_t(20000)}) {
    batching::PlanOptions o;
    o.budget_bytes = budget;
    o.backend = batching::BackendKind::cublas;
    o.cost = batching::CostModel{};
    auto out = torch::empty_like(ref);
    const auto plan = batching::plan_contraction(spec, {L, L, t}, out, o);
    const auto rep = batching::execute(plan, {L, L, t}, out, o, *backend);
    EXPECT_TRUE(torch::allclose(out, ref, 1e-11, 1e-11)) << "budget " << budget;
    EXPECT_EQ(rep.bytes_d2h, out.nbytes()) << "budget " << budget;
  }
}
