// `nnvmc profile`: the stage times come from the trainer's own scopes and account for the
// iteration; the profiler's operators cover the stages' time; the measured roofline is
// positive and below the cores' theoretical peak; operator groups and cost estimates.
#include <gtest/gtest.h>
#include <unistd.h>
#include <torch/torch.h>
#include <torch/csrc/autograd/profiler_kineto.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include "core/errors.hpp"
#include "profile/op_groups.hpp"
#include "profile/op_profile.hpp"
#include "profile/profile.hpp"
#include "profile/roofline.hpp"
#include "train/molecule_batches.hpp"

namespace fs = std::filesystem;
using namespace nnvmc::profile;

namespace {

/// One profile of a small FermiNet on He and LiH, shared by the tests below.
class ProfileRun : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    torch::set_num_threads(1);
    // ctest runs each test of the suite in its own process, in parallel: one directory each.
    dir_ = fs::temp_directory_path() / ("nnvmc_profile_test_" + std::to_string(getpid()));
    const auto& dir = dir_;
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::string config = (dir / "tiny.yaml").string();
    std::ofstream(config) << "system: {molecule: he}\n"
                             "model: {type: ferminet, ferminet: {hidden_dims: [[16, 4], [16, 4]], determinants: 2}}\n"
                             "sampler: {walkers: 64, steps_per_iteration: 2, burn_in: 4}\n"
                             "hamiltonian: {laplacian: forward}\n"
                             "run: {threads: 1}\n";
    ProfileOptions o;
    o.molecules = {"he", "lih"};
    o.warmup = 2;
    o.iterations = 5;
    o.profiled = 5;
    o.roofline = false;
    o.output = (dir / "out").string();
    report_ = new ProfileReport(run_profile(config, {}, o));
    write_profile_outputs(*report_, o.output, /*plots=*/false);
  }
  static void TearDownTestSuite() {
    delete report_;
    fs::remove_all(dir_);
  }
  static ProfileReport* report_;
  static fs::path dir_;
};
ProfileReport* ProfileRun::report_ = nullptr;
fs::path ProfileRun::dir_;

}  // namespace

TEST_F(ProfileRun, StageTimesSumToWithinTenPercentOfTheIterationTime) {
  ASSERT_EQ(report_->molecules.size(), 2u);
  for (const auto& m : report_->molecules) {
    for (const char* s : {"sampling", "local_energy", "local_energy.laplacian", "local_energy.potential", "gradient",
                          "optimizer", "bookkeeping"})
      EXPECT_GT(m.stages.at(s).seconds, 0) << m.molecule << " " << s;
    EXPECT_NEAR(m.stage_share, 1.0, 0.1) << m.molecule;
    // The parts of the local energy lie within it.
    EXPECT_LE(m.stages.at("local_energy.laplacian").seconds + m.stages.at("local_energy.potential").seconds,
              1.02 * m.stages.at("local_energy").seconds);
    EXPECT_GT(m.stages.at("local_energy").peak_bytes, 0) << m.molecule;
  }
  EXPECT_EQ(report_->molecules[1].n_electrons, 4);
  EXPECT_TRUE(fs::exists(dir_ / "out/profile.json"));
  EXPECT_TRUE(fs::exists(dir_ / "out/profile.h5"));
  EXPECT_TRUE(fs::exists(dir_ / "out/report.md"));
  EXPECT_TRUE(std::isfinite(report_->time_scaling.at("iteration").exponent));
  // on the CPU the stages' own clock; on CUDA their device time from events (bench/gpu_vmc_check.sh)
  EXPECT_EQ(report_->stage_clock, "host clock");
  std::ifstream json(dir_ / "out/profile.json");
  const std::string text((std::istreambuf_iterator<char>(json)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("\"stage_clock\": \"host clock\""), std::string::npos);
  // the memory table has a column for every stage the time table has
  std::ifstream md(dir_ / "out/report.md");
  const std::string report((std::istreambuf_iterator<char>(md)), std::istreambuf_iterator<char>());
  // (what the timed iterations leave out, said: a user audit read the bookkeeping as a training run's)
  EXPECT_NE(report.find("training steps without pretraining, checkpoints or progress lines but the last"), std::string::npos);
  // operators between the stages are said, not dropped (they were in profile.json only)
  for (const auto& m : report_->molecules) {
    if (m.stages.count(kOutsideStages) && m.stages.at(kOutsideStages).ops.seconds() > 0) {
      EXPECT_NE(report.find(m.molecule + ": operators outside the timed stages"), std::string::npos) << report;
    }
  }
  const auto memory = report.find("## Peak working memory per stage");
  ASSERT_NE(memory, std::string::npos) << report;
  const std::string header = report.substr(report.find("| molecule |", memory), 200);
  EXPECT_NE(header.find("| sampling | local_energy | local_energy.laplacian | local_energy.potential | gradient | "
                        "optimizer | bookkeeping |"),
            std::string::npos)
      << header;
}

TEST_F(ProfileRun, OperatorGroupsCoverAtLeastNinetyPercentOfTheProfiledOperatorTime) {
  for (const auto& m : report_->molecules) {
    double all = 0, named = 0;
    for (const char* s : {"sampling", "local_energy", "gradient", "optimizer"}) {
      const auto& ops = m.stages.at(s).ops;
      EXPECT_GT(ops.seconds(), 0) << m.molecule << " " << s;
      for (const auto& [g, st] : ops.groups) {
        all += st.seconds;
        if (g != "other") named += st.seconds;
      }
    }
    // GEMM, elementwise, reductions, data movement and linear algebra, not "other".
    EXPECT_GE(named / all, 0.9) << m.molecule;
    // every stage gets a place on the roofline: FLOPs and bytes from the operators' shapes
    for (const char* s : {"sampling", "local_energy", "gradient", "optimizer"}) {
      const auto& ops = m.stages.at(s).ops;
      EXPECT_GT(ops.bytes(), 0) << m.molecule << " " << s;
      EXPECT_TRUE(std::isfinite(ops.flops() / ops.bytes()) && ops.flops() > 0) << m.molecule << " " << s;
    }
    std::printf("%s: the operators cover %.0f %% of the compute stages' profiled wall time\n", m.molecule.c_str(),
                100 * m.profiled_ops / m.profiled_wall);
    EXPECT_GT(m.profiled_ops, 0);
    const auto& grad = m.stages.at("gradient").ops;
    EXPECT_GT(grad.groups.at("gemm").seconds, 0) << m.molecule;  // the network's layers
    EXPECT_GT(grad.groups.at("gemm").flops, 0) << m.molecule;
    EXPECT_GT(m.stages.at("local_energy.laplacian").ops.groups.at("linalg").calls, 0) << m.molecule;  // LU
    EXPECT_GT(m.stages.at("local_energy.laplacian").ops.groups.at("linalg").flops, 0) << m.molecule;
  }
}

namespace {
/// A fresh directory for one test process, holding `config_text` as config.yaml: the quickest
/// profile options (one warm-up and one timed iteration, nothing profiled, no roofline) into
/// <dir>/out.
struct QuickProfile {
  fs::path dir;
  std::string config;
  ProfileOptions options;
  QuickProfile(const std::string& name, const std::string& config_text)
      : dir(fs::temp_directory_path() / (name + "_" + std::to_string(getpid()))), config((dir / "config.yaml").string()) {
    torch::set_num_threads(1);
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::ofstream(config) << config_text;
    options.warmup = 1;
    options.iterations = 1;
    options.profiled = 0;
    options.roofline = false;
    options.output = (dir / "out").string();
  }
  ~QuickProfile() { fs::remove_all(dir); }
};
}  // namespace

TEST(ProfileInputs, BadMoleculeListsFailBeforeAnythingRunsAndARerunReplacesItsOwnRuns) {
  QuickProfile p("nnvmc_profile_inputs", "model: {type: ferminet, ferminet: {hidden_dims: [[4, 2]], determinants: 1}}\n"
                                         "sampler: {walkers: 8, steps_per_iteration: 1, burn_in: 1}\n"
                                         "run: {threads: 1}\n");
  const fs::path& dir = p.dir;
  const std::string& config = p.config;
  ProfileOptions& o = p.options;
  const auto message = [&](std::vector<std::string> molecules) -> std::string {
    o.molecules = std::move(molecules);
    try {
      run_profile(config, {}, o);
    } catch (const nnvmc::InputError& e) {
      return e.what();
    }
    return "";
  };
  // An unknown molecule late in the list: refused before the first one is profiled.
  EXPECT_NE(message({"h", "nosuch"}).find("nosuch"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir / "out" / "runs" / "h"));
  EXPECT_NE(message({"h", "h"}).find("twice"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir / "out" / "runs" / "h"));
  // The same profile twice into one output: the second replaces the first's run directory.
  o.molecules = {"h"};
  EXPECT_EQ(run_profile(config, {}, o).molecules.size(), 1u);
  EXPECT_TRUE(fs::exists(dir / "out" / "runs" / "h" / "checkpoint.h5"));
  EXPECT_EQ(run_profile(config, {}, o).molecules.size(), 1u);
}

// Scratch runs are named after the molecules: a bond scan of two inline molecules (both named
// 'inline') gets runs/inline and runs/inline_2, the config's own molecule its name (they were
// refused as "twice", and the config's molecule went to runs/molecule).
TEST(ProfileInputs, MoleculesOfOneNameGetNumberedScratchRunsAndTheConfigsMoleculeItsName) {
  QuickProfile p("nnvmc_profile_names", "system: {molecule: h}\n"
                                        "model: {type: ferminet, ferminet: {hidden_dims: [[4, 2]], determinants: 1}}\n"
                                        "sampler: {walkers: 8, steps_per_iteration: 1, burn_in: 1}\n"
                                        "run: {threads: 1}\n");
  p.options.molecules = {"[[H, 0, 0, 0], [H, 0, 0, 1.2]]", "[[H, 0, 0, 0], [H, 0, 0, 1.8]]"};
  EXPECT_EQ(run_profile(p.config, {}, p.options).molecules.size(), 2u);
  const fs::path runs = p.dir / "out" / "runs";
  EXPECT_TRUE(fs::exists(runs / "inline" / "checkpoint.h5"));
  EXPECT_TRUE(fs::exists(runs / "inline_2" / "checkpoint.h5"));
  EXPECT_TRUE(fs::exists(runs / "inline" / "profile_scratch.txt"));
  p.options.molecules.clear();
  EXPECT_EQ(run_profile(p.config, {}, p.options).molecules.size(), 1u);
  EXPECT_TRUE(fs::exists(runs / "h" / "checkpoint.h5"));
}

// A config of several molecules (a transferable ansatz) trains a batch per iteration: profiling
// it without --molecules times that batch, and its one row says so (it was labelled with the
// first molecule's name and walkers, as if only that molecule had been trained).
TEST(ProfileInputs, ConfigOfSeveralMoleculesIsProfiledAsOneBatchRowNamingThemAll) {
  QuickProfile p("nnvmc_profile_batch",
                 "system: {molecules: [h2, he, li]}\n"
                 "model: {type: orbformer, orbformer: {elements: H-Li, heads: 2, head_dim: 4, layers: 1,\n"
                 "  featurization_heads: 2, determinants: 1, envelopes_per_nucleus: 2, nuclear_feature_dim: 4,\n"
                 "  nuclear_layers: 1, orbital_layers: 1, orbital_heads: 2, orbital_head_dim: 4}}\n"
                 "sampler: {walkers: 4, steps_per_iteration: 1, burn_in: 1}\n"
                 "optim: {type: adam, molecules_per_step: 2}\n"
                 "run: {threads: 1}\n");
  const ProfileReport report = run_profile(p.config, {}, p.options);
  ASSERT_EQ(report.molecules.size(), 1u);
  const MoleculeProfile& row = report.molecules[0];
  EXPECT_EQ(row.molecule, "h2, he, li");
  EXPECT_EQ(row.molecules_per_iteration, 2);
  // The warm-up lasts until each molecule has been trained (and its chunks calibrated), not
  // only --warmup 1: a molecule first drawn in a timed iteration put its calibration in the
  // timings (the audit: local_energy 0.074 s beside laplacian + potential 0.029 s).
  std::set<std::size_t> seen;
  for (int t = 0; t < row.warmup; ++t)
    for (std::size_t i : nnvmc::molecules_for_iteration(3, 2, /*seed=*/0, t)) seen.insert(i);
  EXPECT_EQ(seen.size(), 3u) << row.warmup;
  EXPECT_GE(row.warmup, 2);
  const auto& le = row.stages.at("local_energy");
  EXPECT_LE(row.stages.at("local_energy.laplacian").seconds + row.stages.at("local_energy.potential").seconds,
            1.02 * le.seconds);
  EXPECT_EQ(row.walkers, 8);      // 4 walkers of each of the two molecules an iteration trains
  EXPECT_EQ(row.n_electrons, 3);  // the largest molecule's
}

/// Above the clock of any x86 core (GHz): a measured GEMM rate over this × FLOP/cycle is a
/// FLOP-counting error, not turbo.
constexpr double kMaxGhz = 6.0;

TEST(Roofline, PeaksArePositiveAndDgemmIsBelowTheCoresPeakAtAnyClock) {
  torch::set_num_threads(1);
  const CpuPeak cpu = read_cpu_peak();
  ASSERT_GT(cpu.ghz, 0) << "no clock in /proc/cpuinfo";
  const Roofline r = measure_roofline("cpu", "float64", 512, 1 << 21, 2);
  EXPECT_GT(r.peak_gflops, 0);
  EXPECT_GT(r.bandwidth_gbs, 0);
  EXPECT_EQ(r.threads, 1);
  EXPECT_GT(r.theoretical_gflops, 0);
  // The theoretical peak is at the clock the machine states (a VM's cpu MHz is the nominal one),
  // which turbo exceeds (76 vs 73.6 GFLOP/s measured on an Emerald Rapids VM at "2300 MHz"); a
  // sound bound is the peak at 6 GHz, above any x86 core's clock.
  EXPECT_LT(r.peak_gflops, kMaxGhz * cpu.flops_per_cycle_f64) << cpu.assumption;
}

// float32 runs measure SGEMM against the cores' single-precision peak (twice the double one).
TEST(Roofline, SgemmForFloat32IsBelowTheCoresSinglePrecisionPeakAtAnyClock) {
  torch::set_num_threads(1);
  const Roofline d = measure_roofline("cpu", "float64", 512, 1 << 21, 2);
  const Roofline s = measure_roofline("cpu", "float32", 512, 1 << 21, 2);
  EXPECT_GT(s.peak_gflops, 0);
  EXPECT_GT(s.bandwidth_gbs, 0);
  EXPECT_DOUBLE_EQ(s.theoretical_gflops, 2 * d.theoretical_gflops);
  EXPECT_LT(s.peak_gflops, 2 * kMaxGhz * read_cpu_peak().flops_per_cycle_f64);  // (see above)
}

TEST(Roofline, TheoreticalPeakFromCpuinfoFlagsAndClock) {
  const auto path = (fs::temp_directory_path() / "nnvmc_cpuinfo").string();
  std::ofstream(path) << "processor\t: 0\nmodel name\t: Some CPU @ 3.00GHz\nflags\t\t: fpu sse2 avx avx2 fma\n"
                         "cpu MHz\t\t: 2000.0\n\nprocessor\t: 1\ncpu MHz\t\t: 2100.0\n";
  const CpuPeak p = read_cpu_peak(path);
  EXPECT_EQ(p.cores, 2);
  EXPECT_DOUBLE_EQ(p.ghz, 3.0);  // the model name's nominal clock beats the current cpu MHz
  EXPECT_EQ(p.flops_per_cycle_f64, 16);
  EXPECT_DOUBLE_EQ(p.gflops_per_core(false), 48.0);
  EXPECT_DOUBLE_EQ(p.gflops_per_core(true), 96.0);
  // AVX-512 doubles the FLOP per cycle where its units are 512 bits wide, not on AMD's Zen 4
  // (found by a user audit: an EPYC 9004 was given twice its peak).
  const auto avx512 = [&](const char* vendor, int family) {
    std::ofstream(path) << "processor\t: 0\nvendor_id\t: " << vendor << "\ncpu family\t: " << family
                        << "\nmodel name\t: X\nflags\t\t: fpu sse2 avx avx2 fma avx512f\ncpu MHz\t\t: 2600.0\n";
    return read_cpu_peak(path).flops_per_cycle_f64;
  };
  EXPECT_EQ(avx512("AuthenticAMD", 25), 16);
  EXPECT_EQ(avx512("AuthenticAMD", 26), 32);
  EXPECT_EQ(avx512("GenuineIntel", 6), 32);
}

TEST(OpGroups, NamesMapToGroups) {
  EXPECT_EQ(classify_op("aten::mm"), OpGroup::gemm);
  EXPECT_EQ(classify_op("aten::addmm"), OpGroup::gemm);
  EXPECT_EQ(classify_op("aten::mul_"), OpGroup::elementwise);
  EXPECT_EQ(classify_op("aten::tanh_backward"), OpGroup::elementwise);
  EXPECT_EQ(classify_op("aten::sum"), OpGroup::reduction);
  EXPECT_EQ(classify_op("aten::linalg_vector_norm"), OpGroup::reduction);
  EXPECT_EQ(classify_op("aten::copy_"), OpGroup::data_movement);
  EXPECT_EQ(classify_op("aten::cat"), OpGroup::data_movement);
  EXPECT_EQ(classify_op("aten::permute"), OpGroup::data_movement);
  EXPECT_EQ(classify_op("aten::select_backward"), OpGroup::data_movement);
  EXPECT_EQ(classify_op("aten::linalg_lu_factor_ex"), OpGroup::linalg);
  EXPECT_EQ(classify_op("aten::linalg_solve_triangular"), OpGroup::linalg);
  EXPECT_EQ(classify_op("aten::relu"), OpGroup::elementwise);  // not "lu"
  EXPECT_EQ(classify_op("MulBackward0"), OpGroup::elementwise);
  EXPECT_EQ(classify_op("autograd::engine::evaluate_function: MmBackward0"), OpGroup::gemm);
  EXPECT_EQ(classify_op("LinalgLuFactorExBackward0"), OpGroup::linalg);
  EXPECT_EQ(classify_op("SelectBackward0"), OpGroup::data_movement);
  EXPECT_EQ(classify_op("torch::autograd::AccumulateGrad"), OpGroup::other);
  EXPECT_EQ(classify_op("aten::empty"), OpGroup::other);
}

TEST(OpGroups, CostEstimatesFromShapes) {
  const OpInput a{{{4, 3}}, 8}, b{{{3, 5}}, 8};
  const auto mm = estimate_cost("aten::mm", OpGroup::gemm, {a, b}, 0);
  EXPECT_DOUBLE_EQ(mm.flops, 2.0 * 4 * 3 * 5);
  EXPECT_DOUBLE_EQ(mm.bytes, 8.0 * (12 + 15 + 20));
  const OpInput x{{{10, 1}}, 4}, y{{{1, 6}}, 4};
  const auto add = estimate_cost("aten::add", OpGroup::elementwise, {x, y}, 0);
  EXPECT_DOUBLE_EQ(add.flops, 60);  // broadcast output
  EXPECT_DOUBLE_EQ(add.bytes, 4.0 * (10 + 6 + 60));
  const OpInput batch{{{7, 3, 3}}, 8};
  EXPECT_DOUBLE_EQ(estimate_cost("aten::linalg_lu_factor_ex", OpGroup::linalg, {batch}, 0).flops, 7 * 2.0 / 3 * 27);
  EXPECT_DOUBLE_EQ(estimate_cost("aten::permute", OpGroup::data_movement, {batch}, 0).bytes, 0);  // a view
  EXPECT_DOUBLE_EQ(estimate_cost("aten::clone", OpGroup::data_movement, {batch}, 0).bytes, 2.0 * 63 * 8);
  const OpInput list{{{2, 3}, {4, 3}}, 8};
  EXPECT_DOUBLE_EQ(estimate_cost("aten::cat", OpGroup::data_movement, {list}, 0).bytes, 2.0 * 18 * 8);
  EXPECT_DOUBLE_EQ(estimate_cost("aten::mm", OpGroup::gemm, {a, b}, 123).flops, 123);  // the profiler's count
  // addmv(bias [P], mat [P, B], vec [B]): 2·P·B, not the P·P a broadcast of the shapes gives.
  const OpInput bias{{{500}}, 8}, mat{{{500, 20}}, 8}, vec{{{20}}, 8};
  EXPECT_DOUBLE_EQ(estimate_cost("aten::addmv_", OpGroup::gemm, {bias, mat, vec}, 0).flops, 2.0 * 500 * 20);
  EXPECT_DOUBLE_EQ(estimate_cost("aten::mv", OpGroup::gemm, {mat, vec}, 0).flops, 2.0 * 500 * 20);
}

// A triangular solve costs n² per right-hand-side column (LAPACK's TRSM count), a solve from an
// LU factorisation twice that, and lu_unpack nothing (a user audit: triangular solves were
// charged 2n²k, the forward Laplacian's FLOPs came out ~1.9× too high).
TEST(OpGroups, SolvesAreChargedPerRightHandSideColumn) {
  const OpInput a{{{8, 28, 28}}, 8}, rhs{{{32, 8, 28, 100}}, 8}, pivots{{{8, 28}}, 4};
  const double columns = 32.0 * 8 * 100;
  EXPECT_DOUBLE_EQ(estimate_cost("aten::linalg_solve_triangular", OpGroup::linalg, {a, rhs}, 0).flops,
                   columns * 28 * 28);
  EXPECT_DOUBLE_EQ(estimate_cost("aten::triangular_solve", OpGroup::linalg, {rhs, a}, 0).flops, columns * 28 * 28);
  EXPECT_DOUBLE_EQ(estimate_cost("aten::linalg_lu_solve", OpGroup::linalg, {a, pivots, rhs}, 0).flops,
                   2 * columns * 28 * 28);
  EXPECT_DOUBLE_EQ(estimate_cost("aten::linalg_solve", OpGroup::linalg, {a, rhs}, 0).flops,
                   2 * columns * 28 * 28 + 8 * 2.0 / 3 * 28 * 28 * 28);
  EXPECT_DOUBLE_EQ(estimate_cost("aten::lu_unpack", OpGroup::linalg, {a, pivots}, 0).flops, 0);
  // a one-column right-hand side, smaller than the matrix, is still the right-hand side
  const OpInput one_column{{{8, 28, 1}}, 8};
  EXPECT_DOUBLE_EQ(estimate_cost("aten::linalg_lu_solve", OpGroup::linalg, {a, pivots, one_column}, 0).flops,
                   2.0 * 8 * 28 * 28);
  EXPECT_DOUBLE_EQ(estimate_cost("aten::cholesky_solve", OpGroup::linalg, {one_column, a}, 0).flops, 2.0 * 8 * 28 * 28);
  EXPECT_DOUBLE_EQ(estimate_cost("aten::cholesky", OpGroup::linalg, {a}, 0).flops, 8 * 28.0 * 28 * 28 / 3);
}

TEST(RelativeSpread, InterquartileRangeOverTheMedianAndTheFullRangeOfFewTimings) {
  EXPECT_EQ(relative_spread({}), 0.0);
  EXPECT_EQ(relative_spread({0.5}), 0.0);
  EXPECT_NEAR(relative_spread({0.199, 0.039, 0.074}), (0.199 - 0.039) / 0.074, 1e-12);
  // 1..9 and one outlier: quartiles 3.25 and 7.75 (linear interpolation), median 5.5
  EXPECT_NEAR(relative_spread({1, 2, 3, 4, 5, 6, 7, 8, 9, 1000}), (7.75 - 3.25) / 5.5, 1e-12);
}

// What makes the timings less trustworthy is said in the report and profile.json, not only on
// stdout (a user audit), including one timed iteration, whose spread reads 0.
TEST(TimingWarnings, FewIterationsASpreadAndALoadAboveTheCoresAreNamed) {
  ProfileReport r;
  r.options.iterations = 10;
  MoleculeProfile steady, noisy;
  steady.molecule = "lih";
  steady.iteration_series = {1.0, 1.01, 0.99, 1.0};
  noisy.molecule = "ch4";
  noisy.iteration_series = {1.0, 1.6, 0.7, 1.3, 0.9};
  r.molecules = {steady};
  EXPECT_TRUE(timing_warnings(r, 0.5, 2).empty());
  EXPECT_TRUE(timing_warnings(r, std::numeric_limits<double>::quiet_NaN(), 2).empty());
  r.molecules.push_back(noisy);
  r.threads = 2;
  EXPECT_EQ(timing_warnings(r, 2.5, 2).size(), 1u);  // the spread only: 2.5 is this profile's 2 threads and a bit
  r.threads = 1;
  const auto w = timing_warnings(r, 4.57, 2);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_NE(w[0].find("ch4: iteration times spread by"), std::string::npos) << w[0];
  EXPECT_NE(w[1].find("the load average (4.57) exceeded the 2 cores"), std::string::npos) << w[1];
  r.options.iterations = 1;
  r.molecules = {steady};
  const auto one = timing_warnings(r, 0.5, 2);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_NE(one[0].find("only 1 timed iteration per molecule"), std::string::npos) << one[0];
}

TEST(PowerLaw, FitRecoversTheExponent) {
  const std::vector<double> n{4, 10, 18, 28};
  std::vector<double> y;
  for (double v : n) y.push_back(0.003 * std::pow(v, 2.5));
  const PowerLaw f = fit_power_law(n, y);
  EXPECT_NEAR(f.exponent, 2.5, 1e-12);
  EXPECT_NEAR(f.prefactor, 0.003, 1e-12);
  EXPECT_EQ(f.points, 4);
  EXPECT_NEAR(f.exponent_err, 0.0, 1e-10);  // on the line
  EXPECT_TRUE(std::isnan(fit_power_law({4}, {1.0}).exponent));
  EXPECT_TRUE(std::isnan(fit_power_law({4, 10}, {1.0, 2.0}).exponent_err));  // two points: none
  // log y = x + (+-0.1): slope 1 with the textbook standard error sqrt(SSR/(k-2) / Σ(x - x̄)²)
  const std::vector<double> x{1, 2, 3, 4};
  const std::vector<double> noise{0.1, -0.1, -0.1, 0.1};
  std::vector<double> nn, yy;
  for (size_t i = 0; i < x.size(); ++i) {
    nn.push_back(std::exp(x[i]));
    yy.push_back(std::exp(x[i] + noise[i]));
  }
  const PowerLaw g = fit_power_law(nn, yy);
  EXPECT_NEAR(g.exponent, 1.0, 1e-12);  // the noise is symmetric about the centre
  EXPECT_NEAR(g.exponent_err, std::sqrt(0.04 / 2 / 5.0), 1e-12);
}

// A profiler left running by an exception (or Ctrl-C) between start and stop is disabled when it
// goes out of scope, so the rest of the process is not recorded (a user audit found an
// interrupted profile recording until exit).
// Work is counted once: the LU factorisation owns its 2/3 k³ FLOPs per matrix although its
// only child operator copies its input (it was credited to the copy: linalg had 0 FLOPs in
// every profile), and matmul's FLOPs are counted once, at mm.
TEST(OpProfilerCosts, AnLuFactorisationAndAMatmulAreCountedOnceWithTheirFlops) {
  torch::set_num_threads(1);
  const auto a = torch::rand({16, 8, 8}, torch::kFloat64), x = torch::rand({64, 32}, torch::kFloat64),
             y = torch::rand({32, 16}, torch::kFloat64);
  nnvmc::profile::OpProfiler profiler(/*cuda=*/false, 8);
  profiler.start();
  (void)torch::linalg_lu_factor_ex(a);
  (void)x.matmul(y);
  const auto mix = profiler.stop().at(kOutsideStages).groups;
  EXPECT_DOUBLE_EQ(mix.at("linalg").flops, 16 * 2.0 / 3.0 * 8 * 8 * 8);
  EXPECT_GT(mix.at("linalg").bytes, 0);
  EXPECT_DOUBLE_EQ(mix.at("gemm").flops, 2.0 * 64 * 32 * 16);
}

TEST(OpProfilerLifetime, AProfilerLeftRunningByAnExceptionIsDisabledWhenItGoesOutOfScope) {
  try {
    nnvmc::profile::OpProfiler profiler(/*cuda=*/false, 8);
    profiler.start();
    ASSERT_TRUE(torch::autograd::profiler::isProfilerEnabledInMainThread());
    (void)torch::ones({4, 4}).matmul(torch::ones({4, 4}));
    throw nnvmc::Error("interrupted");
  } catch (const nnvmc::Error&) {
  }
  EXPECT_FALSE(torch::autograd::profiler::isProfilerEnabledInMainThread());
  nnvmc::profile::OpProfiler again(false, 8);  // and a new one starts
  again.start();
  EXPECT_TRUE(torch::autograd::profiler::isProfilerEnabledInMainThread());
  (void)again.stop();
  EXPECT_FALSE(torch::autograd::profiler::isProfilerEnabledInMainThread());
}
