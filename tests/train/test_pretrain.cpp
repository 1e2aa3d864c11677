#include <gtest/gtest.h>

#include "common/test_util.hpp"
#include "models/hf/hf_determinant.hpp"
#include "train/evaluate.hpp"
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
}  // namespace

TEST(HartreeFockDeterminant, VmcEnergyEqualsTheHartreeFockEnergyWithinErrorBar) {
  // Checks orbitals on electron positions, their Laplacians and the local energy together.
  Config c = base("he", "{type: hf, hf: {basis: cc-pvdz}}");
  c.hamiltonian.laplacian = "jvp";
  VmcSetup s = make_setup(c);
  s.sampler->initialize(s.logabs_fn());
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
  PretrainOptions p;
  p.steps = 60;
  p.basis = "sto-3g";
  p.lr = 3e-3;
  StageTimers timers;
  const auto r = pretrain(s, p, timers);
  EXPECT_EQ(r.steps, 60);
  EXPECT_LT(r.final_loss, 0.5 * r.initial_loss);
  EXPECT_TRUE(std::isfinite(r.e_hf));
}
