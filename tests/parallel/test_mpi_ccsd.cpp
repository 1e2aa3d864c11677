/// CCSD(T) across ranks (ladder rows and (T) triples split over ranks) equals one process.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <unistd.h>

#include "batching/cost_model.hpp"
#include "ccsd/driver.hpp"
#include "core/system.hpp"
#include "parallel/communicator.hpp"
#include "scf/scf.hpp"

using namespace nnvmc;

namespace {
ccsd::CcsdRun water(double cholesky_tau) {
  ccsd::CcsdRunOptions o;
  o.basis = "cc-pvdz";
  o.cholesky_tau = cholesky_tau;
  o.ccsd.triples = true;
  o.ccsd.verbose = false;
  o.ccsd.plan.cost = batching::CostModel{};
  return ccsd::run_ccsd(load_molecule("h2o", default_molecules_dir()), o);
}

void expect_same_as_one_process(double cholesky_tau) {
  auto& w = parallel::world();
  ASSERT_GT(w.size(), 1);
  const auto k = water(cholesky_tau);
  if (w.is_root()) {
    auto saved = parallel::set_world(parallel::make_self());
    const auto one = water(cholesky_tau);
    parallel::set_world(std::move(saved));
    EXPECT_EQ(k.cc.iterations, one.cc.iterations);
    EXPECT_NEAR(k.cc.e_ccsd, one.cc.e_ccsd, 1e-10 * std::abs(one.cc.e_ccsd));
    EXPECT_NEAR(k.cc.e_t, one.cc.e_t, 1e-10 * std::abs(one.cc.e_ccsd_t));
    EXPECT_NEAR(k.cc.e_ccsd_t, one.cc.e_ccsd_t, 1e-10 * std::abs(one.cc.e_ccsd_t));
    // The ladder is shared out: rank 0 multiplies about 1/K of the one-process ladder FLOPs.
    const double mine = k.cc.terms.at("ladder").flops, all = one.cc.terms.at("ladder").flops;
    std::printf("[ info     ] ladder GEMM FLOPs on rank 0: %.3g of %.3g (%d ranks)\n", mine, all, w.size());
    EXPECT_GT(all, 0.0);
    EXPECT_LT(mine, (1.0 / w.size() + 0.15) * all);
  }
  w.barrier();
}
}  // namespace

TEST(MpiCcsd, WaterCcpvdzEqualsOneProcess) { expect_same_as_one_process(0.0); }

TEST(MpiCcsd, WaterCcpvdzCholeskyEqualsOneProcess) { expect_same_as_one_process(1e-6); }

TEST(MpiCcsd, EveryRankPlansWithRankZerosMeasuredRates) {
  // Ranks benchmarking at once on one node would each see a fraction of it and write that to
  // the shared cache. Forced to measure afresh (NNVMC_COST_MODEL=measure, an empty cache), ranks
  // measuring each for itself would differ in the last bits at least; they adopt rank 0's.
  auto& w = parallel::world();
  ASSERT_GT(w.size(), 1);
  auto saved = [](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    return v ? std::optional<std::string>(v) : std::nullopt;
  };
  const auto cache0 = saved("NNVMC_CACHE_DIR"), mode0 = saved("NNVMC_COST_MODEL");
  double pid = double(getpid());
  w.broadcast(&pid, sizeof pid, 0);
  const auto dir = std::filesystem::temp_directory_path() / ("nnvmc_mpi_rates_" + std::to_string(std::int64_t(pid)));
  setenv("NNVMC_CACHE_DIR", dir.c_str(), 1);
  setenv("NNVMC_COST_MODEL", "measure", 1);
  batching::CostModel::forget_measured();
  ccsd::CcsdRunOptions o;
  o.basis = "sto-3g";
  o.ccsd.verbose = false;
  ccsd::run_ccsd(load_molecule("h2o", default_molecules_dir()), o);
  const batching::CostModel m = batching::CostModel::measure("cpu");  // what the run planned with
  double rates[3] = {m.gemm_flops_per_s, m.copy_bytes_per_s, m.gemm_half_dim}, root[3] = {rates[0], rates[1], rates[2]};
  w.broadcast(root, sizeof root, 0);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(rates[i], root[i]) << "rate " << i << " on rank " << w.rank();
  EXPECT_GT(rates[0], 0.0);
  cache0 ? void(setenv("NNVMC_CACHE_DIR", cache0->c_str(), 1)) : void(unsetenv("NNVMC_CACHE_DIR"));
  mode0 ? void(setenv("NNVMC_COST_MODEL", mode0->c_str(), 1)) : void(unsetenv("NNVMC_COST_MODEL"));
  batching::CostModel::forget_measured();
  w.barrier();
  if (w.is_root()) std::filesystem::remove_all(dir);
}

TEST(MpiScf, EveryRankTakesRankZerosOrbitals) {
  // Ranks whose SCF stops elsewhere (here: looser tolerances than rank 0's; in practice J/K
  // rounding from another thread count, which rotates degenerate orbitals) still hold one set
  // of orbitals: rank 0's, bit for bit, so CCSD terms split over ranks share one MO basis.
  auto& w = parallel::world();
  ASSERT_GT(w.size(), 1);
  scf::ScfOptions o;
  if (!w.is_root()) o.energy_tolerance = 1e-3, o.commutator_tolerance = 1e-2;
  const auto r = scf::run_scf(load_molecule("h2o", default_molecules_dir()), "sto-3g", o);
  Eigen::MatrixXd c = r.c_alpha;
  double e = r.energy;
  w.broadcast(c.data(), c.size() * sizeof(double), 0);
  w.broadcast(&e, sizeof e, 0);
  EXPECT_EQ((r.c_alpha - c).cwiseAbs().maxCoeff(), 0.0);
  EXPECT_EQ(r.energy, e);
  const auto iterations = w.allgather(r.iterations);
  for (auto n : iterations) EXPECT_EQ(n, iterations[0]);
}
