/// Host <-> device bytes per CCSD iteration, counted by the backends, on the simulated device
/// of tests/batching/host_device_ops.hpp (the staged pipeline that drives cuBLAS on a GPU).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "batching/backend.hpp"
#include "batching/budget.hpp"
#include "ccsd/mo_integrals.hpp"
#include "ccsd/rccsd.hpp"
#include "common/ccsd_fixtures.hpp"
#include "core/errors.hpp"
#include "tests/batching/host_device_ops.hpp"

namespace {

namespace b = nnvmc::batching;
namespace cc = nnvmc::ccsd;
using nnvmc::test::HostDeviceOps;

/// Water's conventional MO integrals (ccsd_fixtures.hpp), built once.
const cc::MoIntegrals& water_mo() {
  static const cc::MoIntegrals mo = cc::conventional_integrals(nnvmc::test::water().rhf, nnvmc::test::water().basis, 0);
  return mo;
}

cc::CcsdOptions options(std::shared_ptr<b::GemmBackend> backend) {
  cc::CcsdOptions o;
  o.plan.cost = b::CostModel{};
  o.max_iterations = 5;
  o.require_convergence = false;
  if (backend) o.plan.backend = b::BackendKind::cublas;  // planned for the staged pipeline
  o.backend = std::move(backend);
  return o;
}

std::shared_ptr<b::GemmBackend> simulated_staged(std::int64_t resident_bytes) {
  b::StagedGemmOptions s;
  s.resident_bytes = resident_bytes;
  return b::make_staged_backend(std::make_unique<HostDeviceOps>(HostDeviceOps::Order::run_ahead), s);
}

}  // namespace

TEST(BytesMoved, HostRunMovesNothing) {
  const auto r = cc::run_rccsd(water_mo(), options(nullptr));
  ASSERT_EQ(r.bytes_h2d_per_iteration.size(), 5u);
  for (std::size_t k = 0; k < 5; ++k) {
    EXPECT_EQ(r.bytes_h2d_per_iteration[k], 0);
    EXPECT_EQ(r.bytes_d2h_per_iteration[k], 0);
  }
}

TEST(BytesMoved, ResidentIntegralsCrossOnceThenEachIterationMovesOnlyItsAmplitudesAndResults) {
  const auto host = cc::run_rccsd(water_mo(), options(nullptr));
  const auto resident = cc::run_rccsd(water_mo(), options(simulated_staged(std::int64_t(1) << 28)));
  const auto staged = cc::run_rccsd(water_mo(), options(simulated_staged(0)));
  // the same iterations on every path
  EXPECT_NEAR(resident.e_ccsd, host.e_ccsd, 1e-10);
  EXPECT_NEAR(staged.e_ccsd, host.e_ccsd, 1e-10);
  const auto& hr = resident.bytes_h2d_per_iteration;
  const auto& hs = staged.bytes_h2d_per_iteration;
  ASSERT_EQ(hr.size(), 5u);
  ASSERT_EQ(hs.size(), 5u);
  // staged: every iteration uploads the same blocks again
  for (std::size_t k = 1; k < 5; ++k) EXPECT_EQ(hs[k], hs[0]) << "iteration " << k + 1;
  // resident: the integral blocks cross in the first iteration only; afterwards each iteration
  // uploads the same (the new amplitudes and intermediates), less than the first and the staged one
  for (std::size_t k = 2; k < 5; ++k) EXPECT_EQ(hr[k], hr[1]) << "iteration " << k + 1;
  EXPECT_LT(hr[1], hr[0]);
  EXPECT_LT(hr[1], hs[1]);
  // results come back once per contraction either way
  for (std::size_t k = 0; k < 5; ++k) {
    EXPECT_GT(staged.bytes_d2h_per_iteration[k], 0);
    EXPECT_EQ(resident.bytes_d2h_per_iteration[k], staged.bytes_d2h_per_iteration[k]);
  }
}

// A resident run keeps integrals, cached blocks, amplitudes and DIIS on plan.device. On the CPU
// (Residency::device) the same code runs with the device being the host: the iterations and
// energies are the host run's, nothing crosses, and the tensors it keeps are charged to the
// budget, so every contraction plans within what is left.
TEST(BytesMoved, ResidentRunEqualsTheHostRunAndPlansWithinTheBudgetLeftByItsTensors) {
  const auto host = cc::run_rccsd(water_mo(), options(nullptr));
  auto o = options(nullptr);
  o.resident = cc::Residency::device;
  const std::int64_t kept = cc::resident_bytes(water_mo(), o);
  o.plan.budget_bytes = 3 * kept;
  o.explain = true;
  const auto r = cc::run_rccsd(water_mo(), o);
  ASSERT_TRUE(r.resident);
  EXPECT_EQ(r.resident_bytes, kept);
  EXPECT_FALSE(host.resident);
  EXPECT_NEAR(r.e_ccsd, host.e_ccsd, 1e-10);
  ASSERT_EQ(r.seconds_iterations.size(), 5u);
  for (std::size_t k = 0; k < 5; ++k) EXPECT_EQ(r.bytes_h2d_per_iteration[k] + r.bytes_d2h_per_iteration[k], 0);
  // every contraction (set-up, iterations) was planned for the budget less the kept tensors
  ASSERT_FALSE(r.plans.empty());
  const std::string left = "budget " + b::format_bytes(double(2 * kept)) + ",";
  for (const auto& p : r.plans) EXPECT_NE(p.find(left), std::string::npos) << p;
  EXPECT_TRUE(r.t1.device().is_cpu());  // results come back to the host
  // when they do not fit half the budget, the run keeps them in host memory
  o.plan.budget_bytes = 2 * kept - 1;
  EXPECT_FALSE(cc::run_rccsd(water_mo(), o).resident);
}

TEST(BytesMoved, AutomaticResidencyStaysOnTheHostOnTheCpuAndForStagedBackends) {
  auto o = options(nullptr);
  EXPECT_EQ(o.resident, cc::Residency::automatic);
  EXPECT_FALSE(cc::run_rccsd(water_mo(), o).resident);  // device "cpu"
  auto s = options(simulated_staged(0));
  s.resident = cc::Residency::device;  // the staged backend takes host tensors: never resident
  EXPECT_FALSE(cc::run_rccsd(water_mo(), s).resident);
  EXPECT_EQ(cc::parse_residency("off"), cc::Residency::host);
  EXPECT_THROW(cc::parse_residency("maybe", "--resident"), nnvmc::InputError);
}

// Frozen-core CCSD (the seed's tables are frozen-core) on every path: resident (Residency::device)
// and through the simulated staged device, with and without resident integral blocks, the same
// energy as the host run, and above the all-electron one (less correlation).
TEST(BytesMoved, FrozenCoreRunsTheSameOnTheResidentAndStagedPaths) {
  static const cc::MoIntegrals fc = [] {
    const nnvmc::System system = nnvmc::load_molecule("h2o", nnvmc::default_molecules_dir());
    const nnvmc::scf::BasisSet basis = nnvmc::scf::make_basis("6-31g", system);
    return cc::conventional_integrals(nnvmc::scf::run_rhf(system, basis), basis, 1);
  }();
  const auto host = cc::run_rccsd(fc, options(nullptr));
  auto o = options(nullptr);
  o.resident = cc::Residency::device;
  const auto resident = cc::run_rccsd(fc, o);
  ASSERT_TRUE(resident.resident);
  const auto staged = cc::run_rccsd(fc, options(simulated_staged(0)));
  const auto kept = cc::run_rccsd(fc, options(simulated_staged(std::int64_t(1) << 28)));
  EXPECT_NEAR(resident.e_ccsd, host.e_ccsd, 1e-10);
  EXPECT_NEAR(staged.e_ccsd, host.e_ccsd, 1e-10);
  EXPECT_NEAR(kept.e_ccsd, host.e_ccsd, 1e-10);
  EXPECT_GT(host.e_ccsd, cc::run_rccsd(water_mo(), options(nullptr)).e_ccsd);
}

// The staged backend with a device budget smaller than the integral blocks and amplitudes it
// would keep: the device never holds more than the budget (as the simulated device counts it),
// contractions plan within half of it, the blocks that do not fit cross again every iteration,
// and the energies are the host run's.
TEST(BytesMoved, AStagedRunHoldsItsDeviceWithinItsBudgetAndStreamsWhatDoesNotFit) {
  const auto host = cc::run_rccsd(water_mo(), options(nullptr));
  const auto run = [&](std::int64_t device_budget, const HostDeviceOps** device) {
    b::StagedGemmOptions s;
    s.resident_bytes = std::int64_t(1) << 28;
    s.device_budget_bytes = device_budget;
    auto ops = std::make_unique<HostDeviceOps>(HostDeviceOps::Order::run_ahead);
    *device = ops.get();
    auto o = options(b::make_staged_backend(std::move(ops), s));
    o.explain = true;
    return std::make_pair(cc::run_rccsd(water_mo(), o), o.backend);  // the backend keeps the device alive
  };
  const HostDeviceOps* d = nullptr;
  const auto [all, all_backend] = run(0, &d);
  const std::int64_t kept_all = all.device_peak_bytes;
  EXPECT_EQ(all.device_budget_bytes, 0);
  EXPECT_EQ(kept_all, std::int64_t(d->peak_device_bytes()));
  EXPECT_GT(kept_all, water_mo().bytes());  // the integrals and the blocks built from them stay
  for (const std::int64_t budget : {kept_all / 2, kept_all / 4}) {
    const auto [r, backend] = run(budget, &d);
    EXPECT_NEAR(r.e_ccsd, host.e_ccsd, 1e-10) << "budget " << budget;
    EXPECT_EQ(r.device_budget_bytes, budget);
    EXPECT_LE(std::int64_t(d->peak_device_bytes()), budget);
    EXPECT_EQ(r.device_peak_bytes, std::int64_t(d->peak_device_bytes()));
    ASSERT_EQ(r.bytes_h2d_per_iteration.size(), 5u);
    EXPECT_GT(r.bytes_h2d_per_iteration[2], all.bytes_h2d_per_iteration[2]) << "budget " << budget;
    const std::string half = "budget " + b::format_bytes(double(budget / 2)) + ",";
    ASSERT_FALSE(r.plans.empty());
    for (const auto& p : r.plans) EXPECT_NE(p.find(half), std::string::npos) << p;
  }
  // half of it is what every contraction plans within, below any budget of the plan's own
  cc::CcsdOptions o = options(simulated_staged(0));
  EXPECT_EQ(cc::contraction_budget(o), 0);
  b::StagedGemmOptions s;
  s.device_budget_bytes = 1000;
  o.backend = b::make_staged_backend(std::make_unique<HostDeviceOps>(HostDeviceOps::Order::lazy), s);
  EXPECT_EQ(cc::contraction_budget(o), 500);
  o.plan.budget_bytes = 300;
  EXPECT_EQ(cc::contraction_budget(o), 300);
}
