/// PauliNet through the trainer: its Hartree–Fock limit samples the Hartree–Fock energy,
/// a short training lowers the energy, a resumed SPRING run is bit-identical, and the
/// per-sample gradients of the natural-gradient optimizers come from one recorded pass.
#include <gtest/gtest.h>

#include <cmath>

#include "common/run_files.hpp"
#include "core/errors.hpp"
#include "models/paulinet/paulinet.hpp"
#include "train/checkpoint.hpp"
#include "train/evaluate.hpp"
#include "train/per_sample_gradients.hpp"
#include "train/recorded_pass.hpp"
#include "train/setup.hpp"
#include "train/trainer.hpp"

using namespace nnvmc;
using test::column;
using test::fresh_dir;

namespace {
/// A small PauliNet run.
Config paulinet_config(const std::string& molecule, const std::string& out, int iterations,
                       const std::vector<std::string>& overrides = {}) {
  Config c = parse_config(
      "system: {molecule: " + molecule + "}\n"
      "model: {type: paulinet, paulinet: {embedding_dim: 16, kernel_dim: 8, distance_features: 8,"
      " interactions: 2}}\n"
      "sampler: {walkers: 32, steps_per_iteration: 3, burn_in: 20, step_size: 0.3}\n"
      "hamiltonian: {laplacian: forward}\n"
      "optim: {type: spring, lr: 0.05, log_every: 1000, sr: {damping: 0.001, norm: euclidean,"
      " norm_constraint: 0.001, chunk_walkers: 8}, spring: {momentum: 0.9}}\n"
      "eval: {steps: 3, burn_in: 2}\n"
      "run: {seed: 7, checkpoint_every: 2}\n",
      overrides, "paulinet.yaml");
  c.optim.iterations = iterations;
  c.run.output = out;
  c.run.threads = 1;
  return c;
}
}  // namespace

TEST(PauliNetTraining, HartreeFockLimitSamplesTheHartreeFockEnergy) {
  // No network, no cusp corrections: ψ is the RHF/6-311G determinant, whose VMC energy is E_HF.
  Config c = paulinet_config("lih", fresh_dir("nnvmc_pn_hf"), 0,
                             {"model.paulinet.jastrow=false", "model.paulinet.backflow=false",
                              "model.paulinet.cusp_correction=false", "model.paulinet.cusp_electrons=false",
                              "sampler.walkers=400", "sampler.steps_per_iteration=10", "sampler.burn_in=100"});
  auto s = make_setup(c);
  s.molecules[0].sampler->initialize(s.logabs_fn());
  StageTimers timers;
  EvalOptions e;
  e.steps = 200;
  e.burn_in = 100;
  const auto r = evaluate(s, e, timers);
  const double e_hf = dynamic_cast<PauliNet&>(*s.wf).hf_energy();
  EXPECT_LT(std::abs(r.stats.mean - e_hf), 4 * r.stats.error) << r.stats.mean << " ± " << r.stats.error << " vs " << e_hf;
  EXPECT_LT(r.stats.error, 0.02);
}

TEST(PauliNetTraining, ShortSpringTrainingLowersTheEnergy) {
  // He: the untrained network (random Jastrow and backflow on RHF/6-311G) evaluates near
  // -2.86 Eh; 40 SPRING iterations of 64 walkers bring it near the exact -2.9037 Eh.
  const std::vector<std::string> o = {"sampler.walkers=64", "sampler.steps_per_iteration=4", "sampler.burn_in=30",
                                      "optim.lr=0.1", "optim.sr.norm_constraint=0.01", "eval.steps=40",
                                      "eval.burn_in=10"};
  Config before = paulinet_config("he", fresh_dir("nnvmc_pn_he0"), 0, o);
  before.sampler.walkers = 256;
  before.eval.steps = 120;  // (the untrained network's local energies vary most)
  auto s = make_setup(before);
  s.molecules[0].sampler->initialize(s.logabs_fn());
  StageTimers timers;
  const auto e0 = evaluate(s, before.eval, timers).stats;
  Trainer t(paulinet_config("he", fresh_dir("nnvmc_pn_he"), 40, o));
  const auto e1 = t.run(true).final_eval.stats;  // 40 steps x 64 walkers
  const double sigma = std::sqrt(e0.error * e0.error + e1.error * e1.error);
  EXPECT_LT(e1.mean, e0.mean - 3 * sigma) << e0.mean << " ± " << e0.error << " -> " << e1.mean << " ± " << e1.error;
}

TEST(PauliNetTraining, ResumedSpringRunEqualsUninterruptedRun) {
  const auto dir_a = fresh_dir("nnvmc_pn_a"), dir_b = fresh_dir("nnvmc_pn_b");
  Trainer a(paulinet_config("lih", dir_a, 4));
  a.run(false);
  {
    Trainer b(paulinet_config("lih", dir_b, 2));
    b.run(false);
  }
  Trainer resumed(paulinet_config("lih", dir_b, 4), dir_b + "/checkpoint.h5");
  resumed.run(false);
  const auto pa = module_state(*a.setup().wf), pb = module_state(*resumed.setup().wf);
  ASSERT_FALSE(pa.empty());
  for (const auto& [k, v] : pa) EXPECT_TRUE(torch::equal(v, pb.at(k))) << k;
  const auto ea = column(dir_a + "/result.h5", "train/energy");
  const auto eb = column(dir_b + "/result.h5", "train/energy");
  ASSERT_EQ(ea.size(), 4u);
  EXPECT_EQ(ea, eb);
}

// The frozen Hartree–Fock orbitals are part of the checkpoint: a resumed run, an evaluation and
// a fine-tuning (model.init_from) at the trained geometry use the trained ones, not the orbitals of a new SCF, which on
// other cores may come out rotated within degenerate orbitals (the backflow and cusp shifts
// belong to each orbital, so ψ would change). Here the checkpoint's orbitals are swapped to
// stand for such a rotation; a checkpoint without them (earlier nnvmc) keeps the SCF's.
TEST(PauliNetTraining, ResumeEvaluationAndFineTuningTakeTheFrozenOrbitalsFromTheCheckpoint) {
  const auto dir = fresh_dir("nnvmc_pn_frozen");
  {
    Trainer t(paulinet_config("lih", dir, 2));
    t.run(false);
  }
  const std::string path = dir + "/checkpoint.h5";
  Checkpoint c = load_checkpoint(path);
  ASSERT_EQ(c.frozen.count("mo_coefficients"), 1u);
  const auto scf = c.frozen.at("mo_coefficients").clone();  // [basis functions, 2]
  const auto swapped = scf.flip(1).contiguous();
  c.frozen["mo_coefficients"] = swapped;
  save_checkpoint(path, c);
  const auto frozen_of = [](Trainer& t) { return t.setup().wf->frozen_state().at("mo_coefficients"); };
  {
    Trainer resumed(paulinet_config("lih", dir, 2), path);
    EXPECT_TRUE(torch::equal(frozen_of(resumed), swapped));
  }
  {
    Trainer tuned(paulinet_config("lih", fresh_dir("nnvmc_pn_frozen_tuned"), 1, {"model.init_from=" + path}));
    EXPECT_TRUE(torch::equal(frozen_of(tuned), swapped));
  }
  // An evaluation (nnvmc eval loads through load_trained_state) takes them at the trained
  // geometry; at another one the orbitals are those of its own SCF.
  for (const char* molecule : {"lih", "{units: bohr, atoms: [[Li, 0, 0, 0], [H, 0, 0, 3.1]]}"}) {
    auto s = make_setup(paulinet_config(molecule, fresh_dir("nnvmc_pn_frozen_eval"), 0));
    const auto own = s.wf->frozen_state().at("mo_coefficients").clone();
    const bool trained_geometry = std::string(molecule) == "lih";
    EXPECT_EQ(load_trained_state(*s.wf, c, {&s.molecules[0].system}), trained_geometry) << molecule;
    EXPECT_TRUE(torch::equal(s.wf->frozen_state().at("mo_coefficients"), trained_geometry ? swapped : own)) << molecule;
    EXPECT_TRUE(torch::equal(module_state(*s.wf).begin()->second, c.parameters.begin()->second)) << molecule;
  }
  c.frozen.clear();
  save_checkpoint(path, c);
  Trainer old(paulinet_config("lih", dir, 2), path);
  EXPECT_TRUE(torch::equal(frozen_of(old), scf));
}

// With the baseline frozen (default) and trained: every parameter (SchNet's electron
// embedding, the cusp shifts, the MO coefficients) goes through the building blocks, so one
// recorded pass gives all per-sample gradients without the vmapped fallback.
TEST(PauliNetTraining, PerSampleGradientsEqualSingleWalkerGradients) {
  for (const char* freeze : {"true", "false"}) {
    Config c = paulinet_config("lih", fresh_dir("nnvmc_pn_psg"), 0,
                               {std::string("model.paulinet.freeze_baseline=") + freeze});
    auto s = make_setup(c);
    torch::manual_seed(3);
    const auto r = 1.5 * torch::randn({3, 4, 3}, torch::kFloat64);
    const auto rows = per_sample_log_gradients(*s.wf, s.molecules[0].tensors, r, 3);  // [3, P]
    const auto params = trainable_parameters(*s.wf);
    const auto pass = record_pass(*s.wf, s.molecules[0].tensors, r, params);
    const auto names = s.wf->named_parameters().keys();
    for (size_t k = 0; k < params.size(); ++k) EXPECT_FALSE(pass.fallback[k]) << names[k] << " freeze " << freeze;
    for (int64_t w = 0; w < 3; ++w) {
      const auto out = s.wf->forward(r.narrow(0, w, 1), s.molecules[0].tensors).logabs.sum();
      const auto g = torch::autograd::grad({out}, params, {}, false, false, true);
      std::vector<torch::Tensor> flat;
      for (size_t k = 0; k < g.size(); ++k)
        flat.push_back(g[k].defined() ? g[k].reshape({-1}) : torch::zeros({params[k].numel()}, torch::kFloat64));
      EXPECT_TRUE(torch::allclose(rows[w], torch::cat(flat), 1e-10, 1e-12)) << "walker " << w << " freeze " << freeze;
    }
  }
}

TEST(PauliNetTraining, EveryOptimizerTrainsFinitely) {
  for (const char* type : {"adam", "sr", "minsr", "spring", "kfac"}) {
    const auto dir = fresh_dir(std::string("nnvmc_pn_opt_") + type);
    Trainer t(paulinet_config("lih", dir, 2, {std::string("optim.type=") + type, "optim.lr=0.01"}));
    EXPECT_EQ(t.run(false).iterations, 2) << type;
    for (double e : column(dir + "/result.h5", "train/energy")) EXPECT_TRUE(std::isfinite(e)) << type;
    for (const auto& p : t.setup().wf->parameters()) EXPECT_TRUE(torch::isfinite(p).all().item<bool>()) << type;
  }
}
