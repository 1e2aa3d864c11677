/// The device-aware cost model: with the CPU's rates the planner chooses exactly the plans it
/// chose before the model knew devices; GPU rates change the choices where they should.
#include <gtest/gtest.h>

#include <sys/resource.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>

#include "batching/plan.hpp"
#include "plan_signature.hpp"

namespace b = nnvmc::batching;

namespace {
struct Expected {
  int model;         // 0: CostModel{} defaults, 1: this CPU's measured rates
  const char* spec;
  int div;           // budget = unsplit peak / div (0: unlimited)
  const char* signature;
};

// Plans of main at a07899a/9748e22 (before the cost model knew devices), generated with the
// loop below (NNVMC_PRINT_PLAN_SIGNATURES=1).
const Expected kToday[] = {
#include "plan_signatures_today.inc"
};

b::CostModel cpu_rates() {  // what CostModel::measure("cpu") gives on the 2-core Zen 5 VM
  b::CostModel m;
  m.gemm_flops_per_s = 5.5e10;
  m.copy_bytes_per_s = 8e9;
  m.batch_overhead_s = 1e-5;
  m.tile_bytes = 8 << 20;
  return m;
}

template <class F>
void for_each_case(const b::CostModel& m, F&& f) {
  for (const auto& c : nnvmc::test::ccsd_plan_cases()) {
    b::PlanOptions o;
    o.cost = m;
    const auto es = b::parse_einsum(c.spec);
    const auto ample = b::make_plan(es, c.shapes, o);
    for (int div : {0, 2, 8, 32}) {
      o.budget_bytes = div ? ample.peak_bytes / div : 0;
      if (div && o.budget_bytes == 0) continue;
      std::string sig;
      try {
        sig = nnvmc::test::plan_signature(b::make_plan(es, c.shapes, o));
      } catch (const std::exception&) {
        sig = "error";
      }
      f(c.spec, div, sig);
    }
  }
}
}  // namespace

TEST(CostModel, CpuRatesPickTheSamePlansAsBeforeTheModelKnewDevices) {
  const b::CostModel models[] = {b::CostModel{}, cpu_rates()};
  const bool print = std::getenv("NNVMC_PRINT_PLAN_SIGNATURES") != nullptr;
  std::size_t k = 0;
  for (int mi = 0; mi < 2; ++mi)
    for_each_case(models[mi], [&](const std::string& spec, int div, const std::string& sig) {
      if (print) std::cout << "    {" << mi << ", \"" << spec << "\", " << div << ", \"" << sig << "\"},\n";
      if (print) return;
      ASSERT_LT(k, std::size(kToday));
      const Expected& e = kToday[k++];
      EXPECT_EQ(e.model, mi);
      EXPECT_EQ(e.spec, spec);
      EXPECT_EQ(e.div, div);
      EXPECT_EQ(e.signature, sig) << spec << " budget peak/" << div << " model " << mi;
    });
  if (!print) {
    EXPECT_EQ(k, std::size(kToday));
  }
}

TEST(CostModel, RatesAreKeptOnDiskPerDeviceKey) {
  const std::string file = testing::TempDir() + "nnvmc_cost_model_test.tsv";
  std::remove(file.c_str());
  b::CostModel cpu = cpu_rates(), gpu;
  gpu.gemm_flops_per_s = 4.77e13, gpu.gemm_ref_dim = 4096, gpu.gemm_half_dim = 150, gpu.transfer_bytes_per_s = 5.1e10;
  EXPECT_FALSE(b::CostModel::read_cached(file, "cpu|x").has_value());
  ASSERT_TRUE(b::CostModel::write_cached(file, "cpu|x", cpu));
  ASSERT_TRUE(b::CostModel::write_cached(file, "cuda:0|H200", gpu));
  cpu.gemm_flops_per_s = 6e10;  // replacing one entry keeps the other
  ASSERT_TRUE(b::CostModel::write_cached(file, "cpu|x", cpu));
  const auto c = b::CostModel::read_cached(file, "cpu|x"), g = b::CostModel::read_cached(file, "cuda:0|H200");
  ASSERT_TRUE(c && g);
  EXPECT_DOUBLE_EQ(c->gemm_flops_per_s, 6e10);
  EXPECT_DOUBLE_EQ(c->tile_bytes, cpu.tile_bytes);
  EXPECT_DOUBLE_EQ(g->gemm_flops_per_s, 4.77e13);
  EXPECT_DOUBLE_EQ(g->gemm_half_dim, 150);
  EXPECT_DOUBLE_EQ(g->gemm_ref_dim, 4096);
  EXPECT_DOUBLE_EQ(g->transfer_bytes_per_s, 5.1e10);
  EXPECT_FALSE(b::CostModel::read_cached(file, "cuda:0").has_value());  // keys match whole
  std::remove(file.c_str());
}

// A cache that cannot be written (here a file-size limit, as a full disk would) is reported as
// not written and leaves the old file as it was and no temporary behind; it was renamed in place
// half-written before.
TEST(CostModel, ACacheThatCannotBeWrittenLeavesTheOldFile) {
  namespace fs = std::filesystem;
  const std::string dir = testing::TempDir() + "nnvmc_cost_model_full";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string file = dir + "/cost_model.tsv";
  const b::CostModel cpu = cpu_rates();
  ASSERT_TRUE(b::CostModel::write_cached(file, "cpu|x", cpu));
  const auto size = fs::file_size(file);
  rlimit old{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
  const auto previous_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit small = old;
  small.rlim_cur = 64;  // the header line alone is longer
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  const bool written = b::CostModel::write_cached(file, "cuda:0|H200", cpu);
  setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, previous_handler);
  EXPECT_FALSE(written);
  EXPECT_EQ(fs::file_size(file), size);
  EXPECT_TRUE(b::CostModel::read_cached(file, "cpu|x").has_value());
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);  // no temporary left
  fs::remove_all(dir);
}

// A cache line of zero, negative or absurd rates (hand-edited, damaged) is not used: it made a
// run's plans 3.5x slower.
TEST(CostModel, ImplausibleStoredRatesAreMeasuredAgain) {
  const std::string file = testing::TempDir() + "nnvmc_cost_model_absurd.tsv";
  {
    std::ofstream out(file);
    out << "cpu|zero\t0 0 0 0 0 0 0 0\n";
    out << "cpu|huge\t1e30 1e10 5e9 2e-5 24 512 0 256\n";
    out << "cpu|ok\t2e10 1e10 5e9 2e-5 24 512 0 256\n";
  }
  EXPECT_FALSE(b::CostModel::read_cached(file, "cpu|zero").has_value());
  EXPECT_FALSE(b::CostModel::read_cached(file, "cpu|huge").has_value());
  EXPECT_TRUE(b::CostModel::read_cached(file, "cpu|ok").has_value());
  std::remove(file.c_str());
}

TEST(CostModel, MeasureReusesTheStoredRatesUnlessAskedToMeasureAgain) {
  const std::string dir = testing::TempDir() + "nnvmc_cost_model_dir";
  setenv("NNVMC_CACHE_DIR", dir.c_str(), 1);
  const std::string file = b::CostModel::cache_file();
  EXPECT_EQ(file, dir + "/cost_model.tsv");
  b::CostModel stored = cpu_rates();
  stored.gemm_flops_per_s = 1.25e9;  // no real measurement gives this
  ASSERT_TRUE(b::CostModel::write_cached(file, b::CostModel::device_key("cpu"), stored));
  b::CostModel::forget_measured();
  EXPECT_DOUBLE_EQ(b::CostModel::measure("cpu").gemm_flops_per_s, 1.25e9);
  b::CostModel::forget_measured();
  // NNVMC_COST_MODEL=measure (README) measures again and stores the new rates
  setenv("NNVMC_COST_MODEL", "measure", 1);
  const double fresh = b::CostModel::measure("cpu").gemm_flops_per_s;
  unsetenv("NNVMC_COST_MODEL");
  EXPECT_NE(fresh, 1.25e9);
  EXPECT_GT(fresh, 0);
  const auto restored = b::CostModel::read_cached(file, b::CostModel::device_key("cpu"));
  ASSERT_TRUE(restored.has_value());
  EXPECT_DOUBLE_EQ(restored->gemm_flops_per_s, fresh);
  b::CostModel::forget_measured();
  unsetenv("NNVMC_CACHE_DIR");
  std::remove(file.c_str());
}

TEST(CostModel, GpuShapeEfficiencyPenalisesThinGemmsMoreThanTheCpus) {
  b::CostModel cpu, gpu;
  gpu.gemm_ref_dim = 4096, gpu.gemm_half_dim = 150;
  EXPECT_DOUBLE_EQ(cpu.dim_efficiency(512), 1.0);
  EXPECT_DOUBLE_EQ(gpu.dim_efficiency(4096), 1.0);
  EXPECT_NEAR(cpu.dim_efficiency(70), (70.0 / 94.0) / (512.0 / 536.0), 1e-15);  // the CPU's rule, unchanged
  for (double d : {32.0, 128.0, 512.0}) EXPECT_LT(gpu.dim_efficiency(d), cpu.dim_efficiency(d)) << d;
  // a plan's modelled time follows: the (H2O)4 ladder's thin second step costs relatively more on the GPU
  const auto es = b::parse_einsum("xac,xbd,icjd->iajb");
  const std::vector<std::vector<std::int64_t>> sh{{621, 76, 76}, {621, 76, 76}, {20, 76, 20, 76}};
  b::PlanOptions o;
  o.device = "cuda";
  o.cost = gpu;
  gpu.gemm_half_dim = 1e-9;  // no shape penalty at all
  b::PlanOptions flat = o;
  flat.cost = gpu;
  EXPECT_GT(b::make_plan(es, sh, o).modelled_seconds, 1.05 * b::make_plan(es, sh, flat).modelled_seconds);
}
