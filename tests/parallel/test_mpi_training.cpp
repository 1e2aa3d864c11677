/// Training across ranks equals training in one process (run by mpirun with 2 and 3 ranks; the
/// one-process reference runs on rank 0 with MPI_COMM_SELF while the other ranks wait).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>

#include "common/run_files.hpp"
#include "common/test_util.hpp"
#include "parallel/communicator.hpp"
#include "parallel/gpu_sharing.hpp"
#include "train/trainer.hpp"

using namespace nnvmc;
using test::column;
namespace fs = std::filesystem;

namespace {
parallel::Communicator& world() { return parallel::world(); }

/// A small FermiNet on LiH (4 electrons), float64. 31 walkers: uneven over 2 and 3 ranks.
Config lih_config(const std::string& optimizer, const std::string& out, int iterations,
                  const std::string& laplacian = "forward") {
  Config c = parse_config(
      "system: {molecule: lih}\n"
      "model: {ferminet: {hidden_dims: [[8, 4], [8, 4]], determinants: 2}}\n"
      "sampler: {walkers: 31, steps_per_iteration: 2, burn_in: 4, step_size: 0.3}\n"
      "optim: {lr: 0.02, log_every: 1000, sr: {damping: 0.001, norm_constraint: 0.001}, spring: {momentum: 0.9}}\n"
      "eval: {steps: 2, burn_in: 1}\n"
      "pretrain: {steps: 0}\n"
      "run: {seed: 7, checkpoint_every: 0, dtype: float64}\n",
      {"optim.type=" + optimizer}, "lih_mpi.yaml");
  c.hamiltonian.laplacian = laplacian;
  c.optim.iterations = iterations;
  c.run.output = out;
  c.run.threads = 1;
  return c;
}

/// A scratch directory named after the world size (ctest runs the 2- and 3-rank jobs at once).
std::string scratch(const std::string& name) {
  const auto dir = (fs::temp_directory_path() / (name + "_np" + std::to_string(world().size()))).string();
  if (world().is_root()) fs::remove_all(dir);
  world().barrier();
  return dir;
}

/// Runs `fn` on rank 0 alone as a one-process job (world() = MPI_COMM_SELF); others wait.
void on_root_alone(const std::function<void()>& fn) {
  if (world().is_root()) {
    auto saved = parallel::set_world(parallel::make_self());
    try {
      fn();
    } catch (...) {
      parallel::set_world(std::move(saved));
      throw;
    }
    parallel::set_world(std::move(saved));
  }
  world().barrier();
}

/// Largest |a − b| / max|a| over the tensors of two parameter sets.
double max_relative_difference(const TensorMap& a, const TensorMap& b) {
  double worst = 0;
  for (const auto& [k, v] : a) {
    const double scale = std::max(v.abs().max().item<double>(), 1e-300);
    worst = std::max(worst, (v - b.at(k)).abs().max().item<double>() / scale);
  }
  return worst;
}

void expect_same_series(const std::vector<double>& a, const std::vector<double>& b, double rel) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], rel * std::abs(a[i])) << "row " << i;
}

void check_rank_independence(const std::string& optimizer, const std::string& laplacian = "forward") {
  ASSERT_GT(world().size(), 1) << "run me under mpirun -np K with K > 1";
  const auto tag = optimizer + "_" + laplacian;
  const auto dir_k = scratch("nnvmc_mpi_" + tag + "_k"), dir_1 = scratch("nnvmc_mpi_" + tag + "_1");
  Trainer k(lih_config(optimizer, dir_k, 5, laplacian));
  const auto out_k = k.run(true);
  const TensorMap params_k = module_state(*k.setup().wf);
  // Parameters are replicated: every rank holds the same.
  for (const auto& [name, v] : params_k) {
    auto copy = v.detach().to(torch::kFloat64).clone();
    world().broadcast(copy.data_ptr<double>(), sizeof(double) * copy.numel(), 0);
    EXPECT_TRUE(torch::equal(copy, v.detach().to(torch::kFloat64))) << name << " differs on rank " << world().rank();
  }
  const int ranks = world().size();
  on_root_alone([&] {
    Trainer one(lih_config(optimizer, dir_1, 5, laplacian));
    const auto out_1 = one.run(true);
    const double diff = max_relative_difference(module_state(*one.setup().wf), params_k);
    std::printf("[ info     ] %s, %s, %d ranks vs 1: largest relative parameter difference %.3g\n", optimizer.c_str(),
                laplacian.c_str(), ranks, diff);
    EXPECT_LE(diff, 1e-10);
    expect_same_series(column(dir_1 + "/result.h5", "train/energy"), column(dir_k + "/result.h5", "train/energy"), 1e-10);
    expect_same_series(column(dir_1 + "/result.h5", "train/acceptance"),
                       column(dir_k + "/result.h5", "train/acceptance"), 1e-10);
    expect_same_series(out_1.final_eval.series, out_k.final_eval.series, 1e-10);
    EXPECT_TRUE(fs::exists(dir_k + "/summary.json"));
  });
}
}  // namespace

/// Two geometries of H2 trained together by a tiny Orbformer (a transferable ansatz), with the
/// determinant-balance penalty on: each molecule's walkers are split over the ranks.
Config two_h2_config(const std::string& optimizer, const std::string& out, int iterations) {
  Config c = parse_config(
      std::string(test::kTwoH2System) +
      "model: {type: orbformer}\n"
      "sampler: {walkers: 31, steps_per_iteration: 2, burn_in: 4, step_size: 0.3}\n"
      "hamiltonian: {laplacian: forward}\n"
      "optim: {lr: 0.01, log_every: 1000, determinant_balance: 0.01, sr: {damping: 0.001}}\n"
      "eval: {steps: 2, burn_in: 1}\n"
      "pretrain: {steps: 0}\n"
      "run: {seed: 3, checkpoint_every: 0, dtype: float64}\n",
      {"optim.type=" + optimizer}, "two_h2_mpi.yaml");
  c.model.orbformer = test::small_orbformer(2);
  c.optim.iterations = iterations;
  c.run.output = out;
  c.run.threads = 1;
  return c;
}

void check_two_molecules(const std::string& optimizer) {
  ASSERT_GT(world().size(), 1) << "run me under mpirun -np K with K > 1";
  const auto dir_k = scratch("nnvmc_mpi_mol_" + optimizer + "_k"), dir_1 = scratch("nnvmc_mpi_mol_" + optimizer + "_1");
  Trainer k(two_h2_config(optimizer, dir_k, 3));
  const auto out_k = k.run(true);
  const TensorMap params_k = module_state(*k.setup().wf);
  const int ranks = world().size();
  on_root_alone([&] {
    Trainer one(two_h2_config(optimizer, dir_1, 3));
    const auto out_1 = one.run(true);
    const double diff = max_relative_difference(module_state(*one.setup().wf), params_k);
    std::printf("[ info     ] two molecules, %s, %d ranks vs 1: largest relative parameter difference %.3g\n",
                optimizer.c_str(), ranks, diff);
    // Adam divides each gradient by its running RMS, so the rounding of a gradient that is a
    // near-cancelling sum is not damped: the Jastrow's ∂log|ψ|/∂α is almost the same for every
    // walker, its centred covariance with E_L nearly cancels, and the order in which walkers
    // are summed (per rank, then over ranks) moves α by ~1e-10 after 3 steps (measured 1.4e-10
    // with 2 ranks, 2.6e-10 with 3; every other parameter < 1e-11, SPRING < 3e-12). Energies
    // are still compared at 1e-10 below.
    EXPECT_LE(diff, optimizer == "adam" ? 1e-9 : 1e-10);
    for (const char* name : {"h2_short", "h2_long"})
      expect_same_series(column(dir_1 + "/result.h5", std::string("train/") + name + "/energy"),
                         column(dir_k + "/result.h5", std::string("train/") + name + "/energy"), 1e-10);
    ASSERT_EQ(out_1.evals.size(), 2u);
    ASSERT_EQ(out_k.evals.size(), 2u);
    for (size_t i = 0; i < 2; ++i) expect_same_series(out_1.evals[i].series, out_k.evals[i].series, 1e-10);
  });
}

TEST(MpiTraining, TwoMoleculesWithAdamEqualOneProcess) { check_two_molecules("adam"); }

TEST(MpiTraining, TwoMoleculesWithSpringEqualOneProcess) { check_two_molecules("spring"); }

TEST(MpiTraining, AdamEqualsOneProcess) { check_rank_independence("adam"); }

TEST(MpiTraining, SpringEqualsOneProcess) { check_rank_independence("spring"); }

// SR (parameter space: the P x P Fisher matrix summed over ranks) and minSR (sample space: the
// B x B kernel from every rank's Jacobian rows).
TEST(MpiTraining, SrEqualsOneProcess) { check_rank_independence("sr"); }

TEST(MpiTraining, MinsrEqualsOneProcess) { check_rank_independence("minsr"); }

// K-FAC: each rank accumulates its walkers' factor statistics; the sums are added over ranks.
TEST(MpiTraining, KfacEqualsOneProcess) { check_rank_independence("kfac"); }

// The stochastic Laplacian too: each walker's Hutchinson probes come from its own stream.
TEST(MpiTraining, SpringWithHutchinsonEqualsOneProcess) { check_rank_independence("spring", "hutchinson"); }

TEST(MpiTraining, CheckpointOfKRanksResumesOnOneRank) {
  const auto dir_a = scratch("nnvmc_mpi_resume_a"), dir_b = scratch("nnvmc_mpi_resume_b");
  Trainer a(lih_config("spring", dir_a, 5));  // uninterrupted, K ranks
  a.run(false);
  const TensorMap params_a = module_state(*a.setup().wf);
  const auto r_a = a.checkpoint().molecules.at(0).sampler.r;  // all walkers
  {
    Trainer b(lih_config("spring", dir_b, 3));  // "interrupted" after 3 iterations, K ranks
    b.run(false);
  }
  on_root_alone([&] {
    const auto saved = load_checkpoint(dir_b + "/checkpoint.h5");
    ASSERT_EQ(saved.molecules.at(0).sampler.r.size(0), 31);  // the checkpoint holds every rank's walkers
    Trainer resumed(lih_config("spring", dir_b, 5), dir_b + "/checkpoint.h5");
    resumed.run(false);
    EXPECT_LE(max_relative_difference(module_state(*resumed.setup().wf), params_a), 1e-10);
    EXPECT_LE((resumed.setup().molecules.at(0).sampler->positions() - r_a).abs().max().item<double>(), 1e-10);
    expect_same_series(column(dir_b + "/result.h5", "train/energy"), column(dir_a + "/result.h5", "train/energy"),
                       1e-10);
  });
}

// Resumed on the same number of ranks, the run continues bit for bit: every walker's stream,
// the optimizer state and the reduction order are what they were.
TEST(MpiTraining, CheckpointOfKRanksResumesOnKRanksBitForBit) {
  const auto dir_a = scratch("nnvmc_mpi_resume_kk_a"), dir_b = scratch("nnvmc_mpi_resume_kk_b");
  Trainer a(lih_config("spring", dir_a, 5));
  a.run(false);
  {
    Trainer b(lih_config("spring", dir_b, 3));
    b.run(false);
  }
  Trainer resumed(lih_config("spring", dir_b, 5), dir_b + "/checkpoint.h5");
  resumed.run(false);
  const TensorMap pa = module_state(*a.setup().wf), pb = module_state(*resumed.setup().wf);
  ASSERT_EQ(pa.size(), pb.size());
  for (const auto& [k, v] : pa) EXPECT_TRUE(torch::equal(v, pb.at(k))) << k << " on rank " << world().rank();
  EXPECT_TRUE(torch::equal(a.setup().molecules.at(0).sampler->positions(),
                           resumed.setup().molecules.at(0).sampler->positions()));
  if (world().is_root()) {
    EXPECT_EQ(column(dir_b + "/result.h5", "train/energy"), column(dir_a + "/result.h5", "train/energy"));
  }
}

TEST(MpiTraining, OnlyRankZeroWritesAndAllRanksStopTogether) {
  const auto dir = scratch("nnvmc_mpi_stop");
  Trainer t(lih_config("adam", dir, 50));
  // A stop request reaching one rank only (a signal) stops every rank at the same iteration.
  t.set_iteration_hook([](std::int64_t it) {
    if (it == 2 && world().rank() == world().size() - 1) Trainer::request_stop(true);
    return StopAction::none;
  });
  const auto out = t.run(false);
  Trainer::request_stop(false);
  EXPECT_TRUE(out.interrupted);
  if (world().is_root()) {
    EXPECT_EQ(load_checkpoint(dir + "/checkpoint.h5").iteration, out.iterations);
  }
  const auto all = world().allgather(out.iterations);
  for (auto n : all) EXPECT_EQ(n, all[0]);
}

TEST(MpiTraining, ARankWhoseEveryWalkerIsExcludedFailsTheStepOnAllRanks) {
  // One walker per rank, so excluding the one walker allowed (max(1, B/100)) can leave a rank
  // with none; K-FAC on that rank would skip the reductions the others make (a hang or a crash).
  // Every rank instead rejects the step (same global mask) and retries it with new moves.
  const auto dir = scratch("nnvmc_mpi_empty_rank");
  Config c = lih_config("kfac", dir, 4);
  c.sampler.walkers = world().size();
  Trainer t(c);
  int tries = 0;
  t.set_energy_hook([&](std::int64_t it, torch::Tensor& e) {
    if (it == 1 && tries++ == 0 && world().rank() == world().size() - 1) e[0] = std::nan("");
  });
  const auto out = t.run(false);
  EXPECT_EQ(out.iterations, 4);
  const auto failed = world().allgather(out.failed_steps);
  for (auto n : failed) EXPECT_EQ(n, 1);
}

// Ranks on one GPU take shares of its 'auto' memory and cannot use NCCL; ranks on their own GPUs
// can, even when each calls its GPU "device 0". The identity is the host and the GPU's PCI bus
// id (host and index without a GPU, as here): the same index on one host is one GPU, and the
// ranks' own indices are different GPUs.
TEST(MpiGpuSharing, RanksOnTheSameGpuCountEachOtherAndOnlyThem) {
  auto& w = world();
  EXPECT_EQ(parallel::ranks_sharing_gpu(w, 0), w.size());
  EXPECT_EQ(parallel::ranks_sharing_gpu(w, w.rank()), 1);
}

// "cuda" without an index under mpirun: one GPU per rank of a node while there are enough,
// round robin when there are more ranks than GPUs, all on device 0 with one GPU (or none seen)
TEST(MpiGpuSharing, RanksOfANodeTakeItsGpusInTurn) {
  auto& w = world();
  std::vector<std::int64_t> with_enough, with_two;
  for (auto g : w.allgather(parallel::rank_gpu(w, w.size()))) with_enough.push_back(g);
  for (auto g : w.allgather(parallel::rank_gpu(w, 2))) with_two.push_back(g);
  std::vector<std::int64_t> distinct = with_enough;
  std::sort(distinct.begin(), distinct.end());
  EXPECT_EQ(std::unique(distinct.begin(), distinct.end()) - distinct.begin(), w.size());  // one host here
  for (int r = 0; r < w.size(); ++r) EXPECT_EQ(with_two[std::size_t(r)], r % 2) << "rank " << r;
  EXPECT_EQ(parallel::rank_gpu(w, 1), 0);
  EXPECT_EQ(parallel::rank_gpu(w, 0), 0);
}
