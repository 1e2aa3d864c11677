#include <gtest/gtest.h>

#include "common/test_util.hpp"
#include "models/hf/hf_determinant.hpp"
#include "models/system_tensors.hpp"
#include "scf/integrals.hpp"
#include "train/evaluate.hpp"
#include "train/checkpoint.hpp"
#include "train/pretrain.hpp"

using namespace nnvmc;

namespace {
Config base(const std::string& molecule, const std::string& model_yaml) {
  Config c = parse_config("system: {molecule: " + molecule + "}\nmodel: " + model_yaml +
                              "\nsampler: {walkers: 512, steps_per_iteration: 5, step_size: 0.3}\n"
                              "run: {seed: 4, threads: 1}\n",
                          {}, "test.yaml");
  return c;
}
/// 60 Adam steps (lr 3e-3) towards the STO-3G UHF orbitals.
PretrainOptions sixty_sto3g_steps() {
  PretrainOptions p;
  p.steps = 60;
  p.basis = "sto-3g";
  p.lr = 3e-3;
  return p;
}
}  // namespace

TEST(HartreeFockDeterminant, VmcEnergyEqualsTheHartreeFockEnergyWithinErrorBar) {
  // Checks orbitals on electron positions, their Laplacians and the local energy together.
  Config c = base("he", "{type: hf, hf: {basis: cc-pvdz}}");
  c.hamiltonian.laplacian = "jvp";
  VmcSetup s = make_setup(c);
  s.molecules[0].sampler->initialize(s.logabs_fn());
  StageTimers timers;
  EvalOptions eo;
  eo.steps = 300;
  eo.burn_in = 100;
  const EvalResult r = evaluate(s, eo, timers);
  const double e_hf = dynamic_cast<HartreeFockDeterminant&>(*s.wf).energy();
  EXPECT_NEAR(e_hf, -2.8551604772, 1e-7);  // He/cc-pVDZ RHF (= UHF for this closed shell)
  EXPECT_NEAR(r.stats.mean, e_hf, 4 * r.stats.error) << "±" << r.stats.error;
  EXPECT_LT(r.stats.error, 0.01);
}

TEST(Pretrain, FitsFermiNetOrbitalsToHartreeFock) {
  Config c = base("lih", "{type: ferminet, ferminet: {hidden_dims: [[16, 4], [16, 4]], determinants: 2}}");
  c.sampler.walkers = 64;
  VmcSetup s = make_setup(c);
  const PretrainOptions p = sixty_sto3g_steps();
  StageTimers timers;
  const auto r = pretrain(s, p, timers);
  EXPECT_EQ(r.steps, 60);
  EXPECT_LT(r.final_loss, 0.5 * r.initial_loss);
  ASSERT_EQ(r.molecules.size(), 1u);
  EXPECT_TRUE(std::isfinite(r.molecules[0].e_hf));
  EXPECT_EQ(r.molecules[0].final_loss, r.final_loss);
}

// The Orbformer's defaults and shipped configs pretrain it, and lih_orbformer_transfer.yaml
// pretrains several molecules at once: every step fits each molecule's orbitals to its own UHF
// orbitals, on its own walkers, and each molecule's mismatch falls.
TEST(Pretrain, FitsOrbformerOrbitalsOfSeveralMoleculesAtOnce) {
  Config c = parse_config(
      "system: {molecules: [h2, lih]}\n"
      "model: {type: orbformer}\n"
      "sampler: {walkers: 64, steps_per_iteration: 5, step_size: 0.3}\n"
      "run: {seed: 4, threads: 1}\n",
      {}, "orbformer_pretrain.yaml");
  c.model.orbformer = test::small_orbformer(2);
  VmcSetup s = make_setup(c);
  ASSERT_EQ(s.molecules.size(), 2u);
  const PretrainOptions p = sixty_sto3g_steps();
  StageTimers timers;
  const auto r = pretrain(s, p, timers);
  EXPECT_EQ(r.steps, 60);
  ASSERT_EQ(r.molecules.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_LT(r.molecules[i].final_loss, 0.5 * r.molecules[i].initial_loss) << s.molecules[i].name();
    EXPECT_TRUE(std::isfinite(r.molecules[i].e_hf));
  }
  EXPECT_NEAR(r.final_loss, 0.5 * (r.molecules[0].final_loss + r.molecules[1].final_loss), 1e-12);
  EXPECT_LT(r.molecules[0].e_hf, -1.0);  // H2/STO-3G UHF ≈ −1.117
  EXPECT_LT(r.molecules[1].e_hf, -7.8);  // LiH/STO-3G ≈ −7.86
  // The stage timers count one fit per molecule and step, one Adam step per step (the step was
  // counted as a second pretrain_fit call)
  const auto& stages = timers.stages();
  ASSERT_TRUE(stages.contains("pretrain_fit") && stages.contains("pretrain_optimizer"));
  EXPECT_EQ(stages.at("pretrain_fit").calls, 2 * 60);
  EXPECT_EQ(stages.at("pretrain_optimizer").calls, 60);
  EXPECT_EQ(stages.at("pretrain_sampling").calls, 2 * 60);
}

namespace {
/// LiH at bond length r with the centre of its nuclei at the origin (alignment places the
/// centres together: here the overlap it maximises is the plain one).
System lih_at(double r) {
  System s = load_molecule("lih", test::molecules_dir());
  s.atoms[0].position = {0, 0, -r / 2};
  s.atoms[1].position = {0, 0, r / 2};
  return s;
}
}  // namespace

// The SCF fixes each orbital up to its sign: aligned to another geometry's, the occupied
// orbitals overlap those best (C_refᵀ S C symmetric, positive definite: the orthogonal
// Procrustes optimum) and are the same state (|det Φ| and E_HF unchanged).
TEST(HartreeFockDeterminant, AlignedOrbitalsOverlapTheOtherGeometrysPositivelyAndKeepTheState) {
  HartreeFockDeterminant ref(lih_at(3.015), "sto-6g"), hf(lih_at(3.2), "sto-6g");
  const double e_hf = hf.energy();
  torch::manual_seed(3);
  const auto r = torch::randn({16, 4, 3}, torch::kFloat64);
  const SystemTensors sys = system_tensors(lih_at(3.2), torch::kFloat64);
  const auto before = hf.forward(r, sys).logabs;
  const double match = hf.align_orbitals_to(ref);
  EXPECT_GT(match, 0.9);  // the occupied spaces of nearby geometries nearly coincide
  EXPECT_LE(match, 1.0 + 1e-12);
  EXPECT_TRUE(torch::allclose(hf.forward(r, sys).logabs, before, 1e-12, 1e-12));
  EXPECT_EQ(hf.energy(), e_hf);
  const Eigen::MatrixXd s = scf::cross_overlap_matrix(ref.basis(), hf.basis());
  for (int spin = 0; spin < 2; ++spin) {
    const Eigen::MatrixXd m = ref.coefficients(spin).transpose() * s * hf.coefficients(spin);
    EXPECT_NEAR((m - m.transpose()).cwiseAbs().maxCoeff(), 0.0, 1e-10) << spin;
    EXPECT_GT(Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(0.5 * (m + m.transpose())).eigenvalues().minCoeff(), 0.9)
        << spin;
  }
  // the same geometry moved as a whole: its occupied space coincides with the reference's once the
  // centres are placed together (uncentred, 4 bohr apart, the overlap was about 0)
  System moved = lih_at(3.015);
  for (auto& atom : moved.atoms) atom.position[0] += 4.0;
  HartreeFockDeterminant away(moved, "sto-6g");
  EXPECT_GT(away.align_orbitals_to(ref), 1 - 1e-8);
  // the same geometry turned by 90 degrees: in one frame the overlap mixes its orbitals; with the
  // reference's turned with it, the occupied spaces coincide again (6-31G*: p and d shells turn)
  System along_x = lih_at(3.015);
  for (auto& atom : along_x.atoms) atom.position = {atom.position[2] + 1.0, -2.0, 0.5};
  HartreeFockDeterminant ref_d(lih_at(3.015), "6-31g*"), unturned(along_x, "6-31g*"), aligned(along_x, "6-31g*");
  const Eigen::Matrix3d quarter = Eigen::AngleAxisd(M_PI / 2, Eigen::Vector3d::UnitY()).toRotationMatrix();  // z → x
  EXPECT_LT(unturned.align_orbitals_to(ref_d), 0.5);
  EXPECT_GT(aligned.align_orbitals_to(ref_d, quarter), 1 - 1e-8);
  // another electron count: nothing to align
  HartreeFockDeterminant h2(load_molecule("h2", test::molecules_dir()), "sto-6g");
  EXPECT_TRUE(std::isnan(h2.align_orbitals_to(ref)));
}

namespace {
/// A small Orbformer on LiH at 3.015 bohr (named a) and on `second` (a system.molecules entry).
VmcSetup lih_and_second(const std::string& second, int walkers, int steps_per_iteration) {
  Config c = parse_config("system: {molecules: [{molecule: lih, geometry: [[0, 0, 0], [0, 0, 3.015]], name: a}, " +
                              second + "]}\nmodel: {type: orbformer}\nsampler: {walkers: " + std::to_string(walkers) +
                              ", steps_per_iteration: " + std::to_string(steps_per_iteration) +
                              ", step_size: 0.3}\nrun: {seed: 4, threads: 1}\n",
                          {}, "orbformer_geometries.yaml");
  c.model.orbformer = test::small_orbformer(2);
  return make_setup(c);
}

/// Pretrains lih_and_second(second) and expects both orbital losses to fall tenfold.
void expect_lih_and_second_fit(const std::string& second) {
  VmcSetup s = lih_and_second(second, 64, 5);
  PretrainOptions p = sixty_sto3g_steps();
  p.basis = "sto-6g";
  StageTimers timers;
  const auto r = pretrain(s, p, timers);
  for (std::size_t i = 0; i < 2; ++i)
    EXPECT_LT(r.molecules[i].final_loss, 0.1 * r.molecules[i].initial_loss) << second << " " << s.molecules[i].name();
}
}  // namespace

// One Orbformer pretrained on two LiH bond lengths fits both (a user audit: R = 3.015 and 3.2
// bohr, whose canonical SCF orbitals differ in sign, stayed at loss 0.10 → 0.10, energies −1.2
// Eh against E_HF −7.95).
TEST(Pretrain, FitsOneOrbformerToTwoGeometriesOfOneMolecule) {
  expect_lih_and_second_fit("{molecule: lih, geometry: [[0, 0, 0], [0, 0, 3.2]], name: b}");
}

// ... also when the second is moved or turned as a whole: the orbitals are aligned with the
// centres placed together and the reference's turned with it (a user audit: a copy moved 4 bohr
// overlapped nothing, and the rotation scrambled both molecules' targets, 1.5-3 Eh above E_HF;
// a copy turned by 90 degrees was 0.4 Eh above E_HF, its orbitals not aligned). A molecule with
// its atoms listed in another order is said and not aligned (reordered atoms reorder
// Orbformer's orbitals).
TEST(Pretrain, AlignsAMoleculeMovedOrTurnedAsAWholeAndSaysWhenOneIsReordered) {
  for (const std::string second : {"{name: b, atoms: [[Li, 4, 0, 0], [H, 4, 0, 3.2]]}",
                                   "{name: b, atoms: [[Li, 0, -3, 1], [H, 0, -3, 4.2]]}",
                                   "{name: b, atoms: [[Li, 0, 0, 0], [H, 3.015, 0, 0]]}"})
    expect_lih_and_second_fit(second);
  // one pretraining step of LiH with a second entry, and what it logged
  const auto pretraining_log = [](const std::string& second) {
    VmcSetup s = lih_and_second(second, 16, 2);
    PretrainOptions p = sixty_sto3g_steps();
    p.steps = 1;
    StageTimers timers;
    testing::internal::CaptureStdout();  // (the log's sink: stdout in tests)
    testing::internal::CaptureStderr();
    (void)pretrain(s, p, timers);
    return testing::internal::GetCapturedStderr() + testing::internal::GetCapturedStdout();
  };
  const std::string turned = pretraining_log("{name: b, atoms: [[Li, 0, 0, 0], [H, 3.015, 0, 0]]}");
  EXPECT_NE(turned.find("pretraining: orbitals of 'b' aligned to those of 'a' turned by 90.0 degrees"), std::string::npos)
      << turned;
  const std::string reordered = pretraining_log("{name: b, atoms: [[H, 0, 0, 3.2], [Li, 0, 0, 0]]}");
  EXPECT_NE(reordered.find("pretraining: 'b' has the elements of 'a' with its atoms listed in another order"),
            std::string::npos)
      << reordered;
}

// With a run.memory_budget too small for all walkers at once, pretraining's log|ψ| passes and
// its orbital fit run in chunks (the fit as sums over chunks, each chunk's backward
// accumulating) and reach the parameters of one pass to rounding.
TEST(Pretrain, ChunksWithinTheMemoryBudgetGiveTheParametersOfOnePass) {
  Config c = base("he", "{type: ferminet, ferminet: {hidden_dims: [[8, 4]], determinants: 2}}");
  PretrainOptions p = sixty_sto3g_steps();
  p.steps = 5;
  std::vector<TensorMap> states;
  std::vector<PretrainResult> results;
  std::vector<std::int64_t> chunks;
  for (const char* budget : {"auto", "192KiB"}) {
    c.run.memory_budget = budget;
    VmcSetup s = make_setup(c);
    StageTimers timers;
    results.push_back(pretrain(s, p, timers));
    states.push_back(module_state(*s.wf));
    chunks.push_back(s.molecules[0].logabs_chunk->walkers);
  }
  EXPECT_GE(chunks[0], 512);
  EXPECT_LT(chunks[1], 512);  // the sampler's passes were chunked
  EXPECT_NEAR(results[1].final_loss, results[0].final_loss, 1e-10 * std::abs(results[0].final_loss));
  for (const auto& [k, v] : states[0])
    EXPECT_TRUE(torch::allclose(states[1].at(k), v, 1e-9, 1e-11)) << k;
}
