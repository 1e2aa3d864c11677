/// The device-aware cost model: with the CPU's rates the planner chooses exactly the plans it
/// chose before the model knew devices; GPU rates change the choices where they should.
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>

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
  if (!print) EXPECT_EQ(k, std::size(kToday));
}
