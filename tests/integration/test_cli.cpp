#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "common/run_files.hpp"
#include "common/text.hpp"
#include "io/directory_lock.hpp"
#include "io/hdf5_file.hpp"
#include "io/output_kind.hpp"

namespace fs = std::filesystem;
using nnvmc::test::read_bytes;

namespace {
struct Result {
  int code;
  std::string out;  ///< stdout and stderr
};

struct ShellResult {
  bool exited;  ///< false when a signal ended it
  int code;
  std::string out;  ///< stdout and stderr
};

/// Runs a shell command line (stdout and stderr captured).
ShellResult run_shell(const std::string& cmd) {
  std::unique_ptr<FILE, int (*)(FILE*)> p(popen((cmd + " 2>&1").c_str(), "r"), pclose);
  std::string out;
  std::array<char, 4096> buf;
  while (size_t n = fread(buf.data(), 1, buf.size(), p.get())) out.append(buf.data(), n);
  const int status = pclose(p.release());
  return {WIFEXITED(status), WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

Result run(const std::string& args) {
  auto r = run_shell(std::string(NNVMC_EXE) + " " + args);
  return {r.code, std::move(r.out)};
}

std::string write_config(const std::string& name, const std::string& text) {
  const auto path = (fs::temp_directory_path() / name).string();
  std::ofstream(path) << text;
  return path;
}

const std::string kTiny =
    "system: {molecule: he}\n"
    "model: {ferminet: {hidden_dims: [[8, 4]], determinants: 2}}\n"
    "sampler: {walkers: 8, steps_per_iteration: 2, burn_in: 2}\n"
    "optim: {iterations: 2}\n"
    "pretrain: {steps: 0}\n"
    "eval: {steps: 4, burn_in: 2}\n";

/// A fresh (removed) output directory <tmp>/<name> and a kTiny config writing there, one thread.
struct TinyRun {
  std::string dir, config;
};
TinyRun tiny_run(const std::string& name) {
  const auto dir = (fs::temp_directory_path() / name).string();
  fs::remove_all(dir);
  return {dir, write_config(name + ".yaml", kTiny + "run: {threads: 1, output: " + dir + "}\n")};
}

void expect_input_error(const std::string& args, const std::string& needle) {
  const auto r = run(args);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find(needle), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("terminate"), std::string::npos) << r.out;  // no crash
}
}  // namespace

// A pretraining that does not reduce the orbital loss, and a final energy above the Hartree–Fock
// energy of pretraining's target, are warned about (a user audit: a multi-geometry Orbformer
// pretrained to energies 4 Eh above E_HF, exit 0, no word).
TEST(Cli, APretrainingThatDoesNotFitAndAnEnergyAboveHartreeFockAreWarnedAbout) {
  const auto t = tiny_run("nnvmc_cli_stalled_pretraining");
  const auto r = run("train " + t.config + " pretrain.steps=50 pretrain.lr=1e-12 sampler.walkers=64 optim.iterations=0 "
                     "eval.steps=50 --log-level warn");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("pretraining hardly reduced the orbital loss of he ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Eh (UHF/sto-6g, pretraining's target): the wavefunction is worse than Hartree-Fock"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("is above the Hartree-Fock energy -2.8"), std::string::npos) << r.out;
  // a resumed run compares with its pretraining's E_HF (from result.h5)
  const auto resumed = run("train --resume " + t.dir + " optim.iterations=1 --log-level warn");
  ASSERT_EQ(resumed.code, 0) << resumed.out;
  EXPECT_NE(resumed.out.find("is above the Hartree-Fock energy -2.8"), std::string::npos) << resumed.out;
  EXPECT_NE(resumed.out.find("(UHF/sto-6g, pretraining's target)"), std::string::npos) << resumed.out;
  // summary.json gives the energy the result was checked against (a user audit found it only in the log)
  const auto summary = nlohmann::json::parse(std::ifstream(t.dir + "/summary.json"));
  EXPECT_NEAR(summary["molecules"][0]["e_hf"].get<double>(), -2.85, 0.05);
  EXPECT_EQ(summary["molecules"][0]["e_hf_source"], "UHF/sto-6g, pretraining's target");
}

// An anion pretrained on a basis without diffuse functions is warned about (a user audit: H- in
// STO-6G, E_HF -0.167 Eh; a Psiformer pretrained on it was not bound after 300 iterations).
TEST(Cli, AnAnionPretrainedWithoutDiffuseFunctionsIsWarnedAbout) {
  const auto t = tiny_run("nnvmc_cli_anion_pretraining");
  const std::string anion = " 'system.molecule={molecule: h, charge: -1}' pretrain.steps=1 optim.iterations=0 eval.steps=2";
  const auto r = run("train " + t.config + anion + " --log-level warn");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("is an anion, and pretrain.basis 'sto-6g' has no diffuse functions"), std::string::npos) << r.out;
  const auto aug = run("train " + t.config + anion + " pretrain.basis=aug-cc-pvdz --force --log-level warn");
  ASSERT_EQ(aug.code, 0) << aug.out;
  EXPECT_EQ(aug.out.find("is an anion"), std::string::npos) << aug.out;
}

// A training whose energy falls below the lowest the Hamiltonian allows has diverged: it stops
// with an error instead of going on (a user audit: PauliNet at optim.lr=0.05 trained on to −1e25
// Eh and evaluated to −8e25 Eh, exit 0). PauliNet without pretraining is checked against its
// own baseline's E_HF (summary.json had none).
TEST(Cli, ADivergedTrainingStopsAndPauliNetIsCheckedAgainstItsBaseline) {
  const auto t = tiny_run("nnvmc_cli_diverged");
  const auto r = run("train " + t.config + " model.type=paulinet system.molecule=h2 sampler.walkers=64 "
                     "optim.iterations=20 optim.lr=0.05 --log-level warn");
  EXPECT_NE(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("training diverged at iteration"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("is below -3.285714 Eh, a rigorous lower bound on the energy of any wavefunction"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("terminate"), std::string::npos) << r.out;
  const auto ok = run("train " + t.config + " model.type=paulinet system.molecule=h2 sampler.walkers=32 "
                      "optim.iterations=2 eval.steps=20 --log-level warn");
  ASSERT_EQ(ok.code, 0) << ok.out;
  const auto summary = nlohmann::json::parse(std::ifstream(t.dir + "/summary.json"));
  EXPECT_NEAR(summary["e_hf"].get<double>(), -1.128, 0.001);  // RHF/6-311G
  EXPECT_EQ(summary["e_hf_source"], "RHF/6-311g, the PauliNet baseline");
  EXPECT_FALSE(summary["below_lower_bound"].get<bool>());
}

// A natural-gradient step keeps the Jacobian and kernel of all the molecules it trains at once:
// over the budget it is refused naming optim.molecules_per_step, which fits it (a user audit:
// 32 molecules peaked at 4x run.memory_budget, exit 0).
TEST(Cli, ANaturalGradientStepOverSeveralMoleculesIsBudgetedForAllOfThem) {
  const auto cfg = write_config("nnvmc_ng_molecules.yaml",
                                "model: {type: orbformer, orbformer: {elements: H-He, heads: 2, head_dim: 4, layers: 1, "
                                "featurization_heads: 2, determinants: 1, envelopes_per_nucleus: 1, nuclear_feature_dim: 4, "
                                "nuclear_layers: 1, nuclear_heads: 1, orbital_layers: 1, orbital_heads: 1, orbital_head_dim: 4}}\n"
                                "system: {molecules: [h2, {molecule: h2, geometry: [[0, 0, 0], [0, 0, 1.5]]},\n"
                                "  {molecule: h2, geometry: [[0, 0, 0], [0, 0, 1.6]]}, {molecule: h2, geometry: [[0, 0, 0], [0, 0, 1.7]]}]}\n"
                                "optim: {type: spring, iterations: 2}\npretrain: {steps: 0}\neval: {steps: 0}\n"
                                "sampler: {walkers: 256}\nrun: {threads: 1}\n");
  const auto out = (fs::temp_directory_path() / "nnvmc_ng_molecules").string();
  fs::remove_all(out);
  expect_input_error("train " + cfg + " run.memory_budget=2MiB run.output=" + out,
                     "keeps the Jacobian (1024 walkers x 1318 parameters) and a 1024 x 1024 kernel for the 4 molecule(s)");
  expect_input_error("train " + cfg + " run.memory_budget=2MiB run.output=" + out,
                     "train fewer molecules per step (optim.molecules_per_step)");
  EXPECT_FALSE(fs::exists(out));
  const auto fits = run("train " + cfg + " run.memory_budget=16MiB optim.molecules_per_step=1 run.output=" + out);
  EXPECT_EQ(fits.code, 0) << fits.out;
  fs::remove_all(out);
}

// model.init_from is a training setting: an evaluation names it and ignores it, also for a
// pretrained run (it failed there on the checkpoint's pretrain.steps, a user audit).
TEST(Cli, EvalIgnoresModelInitFromOfAPretrainedRunWithAWarning) {
  const auto t = tiny_run("nnvmc_cli_eval_init_from");
  ASSERT_EQ(run("train " + t.config + " pretrain.steps=2 --log-level warn").code, 0);
  const auto r = run("eval " + t.dir + " --steps 2 --log-level warn model.init_from=" + t.dir);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("eval: 'model.init_from=" + t.dir + "' has no effect on an evaluation"), std::string::npos)
      << r.out;
}

// A K-FAC damping far below the usual is named at the start (1e-12 threw LiH's energy up by 10 Eh
// without a word, a user audit); the usual one is not.
TEST(Cli, AKfacDampingFarBelowTheUsualIsWarnedOf) {
  const auto [dir, cfg] = tiny_run("nnvmc_cli_kfac_damping");
  const auto tiny = run("train " + cfg + " optim.type=kfac optim.kfac.damping=1e-9 optim.iterations=1 eval.steps=0");
  ASSERT_EQ(tiny.code, 0) << tiny.out;
  EXPECT_NE(tiny.out.find("optim.kfac.damping = 1e-09 is far below the usual"), std::string::npos) << tiny.out;
  const auto usual = run("train " + cfg + " optim.type=kfac optim.iterations=1 eval.steps=0 --force");
  ASSERT_EQ(usual.code, 0) << usual.out;
  EXPECT_EQ(usual.out.find("is far below the usual"), std::string::npos) << usual.out;
  fs::remove_all(dir);
}

// `nnvmc config` shows what a config resolves to (every setting, as the run's config.yaml records
// it) and checks it, molecules included, without running anything.
TEST(Cli, ConfigPrintsTheResolvedSettingsAndRefusesBadOnesWithoutRunning) {
  const auto out = (fs::temp_directory_path() / "nnvmc_cli_config").string();
  fs::remove_all(out);
  const auto cfg = write_config("nnvmc_config_cmd.yaml", kTiny + "run: {output: " + out + "}\n");
  const auto r = run("config " + cfg + " optim.iterations=7 optim.type=kfac");
  ASSERT_EQ(r.code, 0) << r.out;
  for (const char* line : {"lr_delay: 10000", "iterations: 7", "walkers: 8", "he: 2 electrons (1 up, 1 down)"})
    EXPECT_NE(r.out.find(line), std::string::npos) << line << "\n" << r.out;
  EXPECT_FALSE(fs::exists(out));  // nothing run, nothing written
  expect_input_error("config " + cfg + " sampler.walker=3", "sampler.walker");
  expect_input_error("config " + cfg + " system.molecule=nosuchmolecule", "nosuchmolecule");
  expect_input_error("config --markdown " + cfg, "takes no CONFIG");
  expect_input_error("config " + cfg + " model.type=foo", "'model.type': unknown ansatz 'foo'");  // (it printed it)
  // the basis sets the run builds (they used to pass here, and the run refused them)
  expect_input_error("config " + cfg + " pretrain.steps=3 pretrain.basis=nosuch", "'pretrain.basis': unknown basis 'nosuch'");
  expect_input_error("config " + cfg + " model.type=hf model.hf.basis=nosuch optim.iterations=0", "'model.hf.basis'");
  expect_input_error("config " + cfg + " model.type=paulinet 'system.molecule=[[Sc, 0, 0, 0]]' system.spin=1",
                     "'model.paulinet.basis': basis '6-311g' has no functions for element Sc");
  EXPECT_EQ(run("config " + cfg + " pretrain.basis=nosuch").code, 0);  // (pretrain.steps: 0, not used)
  // Orbformer's element range and anions, as the run refuses them (they passed here: a user audit)
  expect_input_error("config " + cfg + " model.type=orbformer system.molecule=n2 model.orbformer.elements=H-Li",
                     "molecule 'n2': orbformer supports elements H-Li (model.orbformer.elements); the molecule "
                     "contains N (Z = 7)");
  expect_input_error("config " + cfg + " model.type=orbformer system.molecule=h2 system.charge=-1 system.spin=1",
                     "an anion (a negative system.charge");
  // As a run records it: the default molecule named, FermiNet sizes left to the molecule filled in.
  const auto d = run("config");
  ASSERT_EQ(d.code, 0) << d.out;
  for (const char* line : {"walkers: 1024", "molecule: lih", "hidden_dims: [[64, 16], [64, 16], [64, 16]]",
                           "determinants: 8"})
    EXPECT_NE(d.out.find(line), std::string::npos) << line << "\n" << d.out;
  const auto he = run("config system.molecule=he");
  ASSERT_EQ(he.code, 0) << he.out;
  EXPECT_NE(he.out.find("hidden_dims: [[32, 8], [32, 8], [32, 8]]"), std::string::npos) << he.out;
  const auto m = run("config --markdown");
  ASSERT_EQ(m.code, 0) << m.out;
  EXPECT_NE(m.out.find("| `optim.lr_delay` | `1000` |"), std::string::npos) << m.out;
}

TEST(Cli, BadConfigsExitWithCode2AndNameTheKey) {
  const auto out = (fs::temp_directory_path() / "nnvmc_cli_bad").string();
  fs::remove_all(out);
  const auto cfg = write_config("nnvmc_bad_key.yaml", kTiny + "run: {output: " + out + "}\n");
  expect_input_error("train " + cfg + " sampler.walker=3", "sampler.walker");
  expect_input_error("train " + cfg + " sampler.walkers=0", "sampler.walkers");
  expect_input_error("train " + cfg + " sampler.walkers=many", "sampler.walkers");
  expect_input_error("train " + cfg + " system.spin=1", "parity");
  expect_input_error("train " + cfg + " system.spin=4", "spin");
  expect_input_error("train " + cfg + " system.molecule=nosuchmol", "nosuchmol");
  expect_input_error("train " + cfg + " 'system.molecule=[[Xx, 0, 0, 0]]'", "Xx");
  expect_input_error("train " + cfg + " system.molecule=he system.spin=2 pretrain.steps=5",
                     "pretrain.basis: 'sto-6g' has 1 functions for he");
  expect_input_error("train " + cfg + " sampler.walkers=1", "at least 2 to train");
  expect_input_error("train " + cfg + " system.molecule=h2 'system.molecules=[he]'",  // (the last one won)
                     "'system.molecule' and 'system.molecules' both choose the molecules");
  // sizes that passed and ended in the allocator (or the OOM killer): FermiNet's bounds for all
  expect_input_error("train " + cfg + " model.type=psiformer model.psiformer.heads=1000 model.psiformer.head_dim=1000",
                     "'model.psiformer.heads * head_dim' must be between 1 and 65536");
  expect_input_error("train " + cfg + " model.type=paulinet model.paulinet.embedding_dim=100000",
                     "model.paulinet.embedding_dim");
  expect_input_error("train " + cfg + " model.type=orbformer model.orbformer.heads=512 model.orbformer.head_dim=512",
                     "model.orbformer.heads * head_dim");
  const std::string no_run = (fs::temp_directory_path() / "nnvmc_init_from_no_run").string();
  fs::remove_all(no_run);
  fs::create_directories(no_run);
  expect_input_error("train " + cfg + " model.init_from=" + no_run + " pretrain.steps=0",
                     "'model.init_from': " + no_run + ": no checkpoint.h5 here");
  // an integer with a leading zero was read as octal (walkers=016 ran 14 walkers); an empty
  // run.output passed the config and failed in train with exit 1 (user audit)
  expect_input_error("train " + cfg + " sampler.walkers=016", "'sampler.walkers' = 016: an integer with a leading zero");
  expect_input_error("train " + cfg + " 'model.ferminet.hidden_dims=[[32, 08]]'", "'model.ferminet.hidden_dims' = 08");
  expect_input_error("train " + write_config("nnvmc_empty_output.yaml", kTiny + "run: {output: \"\"}\n"),
                     "nnvmc_empty_output.yaml:7: 'run.output' must name a directory (it is empty)");
  EXPECT_FALSE(fs::exists(out)) << "nothing is written for bad input";
  const auto bad_yaml = write_config("nnvmc_bad_yaml.yaml", "sampler: {walkers: 3\noptim: [\n");
  expect_input_error("train " + bad_yaml, "malformed YAML");
  expect_input_error("train /nonexistent/config.yaml", "cannot open");
}

TEST(Cli, CorruptCheckpointIsACleanError) {
  const auto bogus = write_config("nnvmc_bogus_ckpt.h5", "garbage");
  expect_input_error("eval " + bogus, "not an HDF5 file");
  expect_input_error("eval /nonexistent/checkpoint.h5", "no such file");
  expect_input_error("train --resume /nonexistent_dir", "checkpoint");
}

TEST(Cli, TrainThenEvalPrintsJsonWithEnergyAndErrorBar) {
  const auto out = (fs::temp_directory_path() / "nnvmc_cli_run").string();
  fs::remove_all(out);
  const auto cfg = write_config("nnvmc_tiny.yaml", kTiny + "run: {output: " + out + "}\n");
  const auto t = run("train " + cfg);
  ASSERT_EQ(t.code, 0) << t.out;
  ASSERT_TRUE(fs::exists(out + "/summary.json"));
  // The parts of the local energy count its evaluations (the memory calibration's probe
  // evaluations used to be counted too: "local_energy (6 calls)", "local_energy.laplacian (8 calls)").
  const auto calls = [&](const std::string& stage) {
    std::smatch m;
    const std::regex line("  " + std::regex_replace(stage, std::regex("\\."), "\\.") + R"( +[0-9.]+ s  \((\d+) calls\))");
    return std::regex_search(t.out, m, line) ? std::stoi(m[1]) : -1;
  };
  EXPECT_GT(calls("local_energy"), 0) << t.out;
  EXPECT_EQ(calls("local_energy.laplacian"), calls("local_energy")) << t.out;
  EXPECT_EQ(calls("local_energy.potential"), calls("local_energy")) << t.out;
  const auto e = run("eval " + out + "/checkpoint.h5 --steps 6 --seed 3 --json --log-level warn");
  ASSERT_EQ(e.code, 0) << e.out;
  const auto j = nlohmann::json::parse(e.out.substr(e.out.find('{')));
  for (const char* key : {"energy", "energy_err", "variance", "steps", "walkers"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["steps"], 6);
  EXPECT_LT(j["energy"].get<double>(), 0.0);
  // Same seed, same samples: the exact Laplacian methods agree (the checkpoint's is forward), also
  // when the walker chunks come from a small memory budget.
  for (const std::string extra : {"hamiltonian.laplacian=reverse", "hamiltonian.laplacian=jvp",
                                  "hamiltonian.laplacian=forward run.memory_budget=24KiB"}) {
    const auto r = run("eval " + out + "/checkpoint.h5 --steps 6 --seed 3 --json --log-level warn " + extra);
    ASSERT_EQ(r.code, 0) << extra << "\n" << r.out;
    const auto jr = nlohmann::json::parse(r.out.substr(r.out.find('{')));
    EXPECT_NEAR(jr["energy"].get<double>(), j["energy"].get<double>(), 1e-8) << extra;
    EXPECT_EQ(jr["dtype"], "float64");
  }
  // The Hutchinson estimator's variance is said to be its own (the probes' noise added), not the
  // local energy's (a user audit read 8.5 against 0.13 as the wavefunction's quality)
  const auto stochastic = run("eval " + out + " --steps 6 --seed 3 --log-level warn hamiltonian.laplacian=hutchinson");
  ASSERT_EQ(stochastic.code, 0) << stochastic.out;
  EXPECT_NE(stochastic.out.find("(of the Hutchinson estimates: the local energy's plus the probes' noise)"),
            std::string::npos) << stochastic.out;
  EXPECT_EQ(e.out.find("Hutchinson"), std::string::npos) << e.out;
  EXPECT_EQ(j["laplacian"], "forward");  // (the default)
  // the units of the run's numbers (a user audit found them only in compare's files)
  EXPECT_NE(nlohmann::json::parse(std::ifstream(out + "/summary.json"))["units"].get<std::string>().find("in Eh (hartree)"),
            std::string::npos);
  EXPECT_NE(nnvmc::io::H5File(out + "/result.h5", nnvmc::io::H5File::Mode::read).attr("units").find("variance in Eh^2"),
            std::string::npos);
  // the molecule file's reference and the distance from it (a user audit: never shown by train or eval)
  EXPECT_DOUBLE_EQ(j["e_ref"].get<double>(), -2.903724377);
  EXPECT_DOUBLE_EQ(j["error_vs_ref"].get<double>(), j["energy"].get<double>() + 2.903724377);
  EXPECT_NE(stochastic.out.find("reference -2.903724 Eh (exact nonrelativistic (Pekeris/Drake)): E − E_ref = "),
            std::string::npos)
      << stochastic.out;
  // A budget below one walker's working memory is a clear error.
  expect_input_error("eval " + out + "/checkpoint.h5 --steps 2 run.memory_budget=1KiB", "one walker");
  // The model is the checkpoint's: another one (loadable or not) is refused, not evaluated.
  for (const char* other : {"model.ferminet.determinants=1", "'model={type: psiformer}'",
                            "'model={init_from: \"\", ferminet: {envelope: isotropic}}'"})
    expect_input_error("eval " + out + "/checkpoint.h5 --steps 2 " + other, "the model is the one the checkpoint");
  // A flag and the key it sets, both given: refused (the flag used to win silently).
  expect_input_error("eval " + out + "/checkpoint.h5 --seed 3 run.seed=5", "--seed and 'run.seed=5' both set run.seed");
  expect_input_error("eval " + out + "/checkpoint.h5 --walkers 4 'sampler={walkers: 6}'", "both set sampler.walkers");
  // The run's directory names its checkpoint, as for train --resume (it was read as a file and
  // called "not an HDF5 file (corrupt or truncated?)").
  const auto from_dir = run("eval " + out + " --steps 6 --seed 3 --json --log-level warn");
  ASSERT_EQ(from_dir.code, 0) << from_dir.out;
  EXPECT_EQ(nlohmann::json::parse(from_dir.out.substr(from_dir.out.find('{')))["energy"], j["energy"]);
  fs::create_directories(out + "/empty");
  expect_input_error("eval " + out + "/empty --steps 2", "eval " + out + "/empty: no checkpoint.h5 here");
  // a run that ended before its first checkpoint (its config.yaml written) can start over, and is told how
  fs::copy_file(out + "/config.yaml", out + "/empty/config.yaml");
  expect_input_error("train --resume " + out + "/empty",
                     "ended before its first checkpoint; start it over with 'nnvmc train " + out +
                         "/empty/config.yaml run.output=" + out + "/empty'");
  // (a config.yaml of the user's own is not a run's: no start-over hint)
  fs::create_directories(out + "/mine");
  std::ofstream(out + "/mine/config.yaml") << "system: {molecule: he}\n";
  const auto mine = run("train --resume " + out + "/mine");
  EXPECT_EQ(mine.code, 2) << mine.out;
  EXPECT_NE(mine.out.find("no checkpoint.h5 here"), std::string::npos) << mine.out;
  EXPECT_EQ(mine.out.find("start it over"), std::string::npos) << mine.out;
  // A CUDA-only setting on the CPU runs, and says it does nothing there.
  const auto graphs = run("eval " + out + " --steps 2 run.cuda_graphs=true");
  ASSERT_EQ(graphs.code, 0) << graphs.out;
  EXPECT_NE(graphs.out.find("run.cuda_graphs = true has no effect with run.device = cpu"), std::string::npos)
      << graphs.out;
}

// A setting of one ansatz given to another trains, and says it does nothing there (a user audit:
// optim.determinant_balance on a FermiNet ran without a word).
TEST(Cli, SettingsOfAnotherAnsatzOrOptimizerAreNamedAsWithoutEffect) {
  const auto out = (fs::temp_directory_path() / "nnvmc_cli_balance").string();
  fs::remove_all(out);
  const auto cfg = write_config("nnvmc_balance.yaml", kTiny + "run: {output: " + out + "}\n");
  const auto t = run("train " + cfg + " optim.determinant_balance=0.5 eval.steps=0 optim.iterations=1 "
                     "optim.sr.damping=1 model.psiformer.layers=2 optim.sr.chunk_walkers=4");
  ASSERT_EQ(t.code, 0) << t.out;
  // so is an override of another optimizer's or ansatz's block (optim.sr.damping under adam
  // trained with adam without a word: a user audit)
  EXPECT_NE(t.out.find("'optim.sr.damping=1' has no effect with optim.type = adam"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("'model.psiformer.layers=2' has no effect with model.type = ferminet"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("'optim.sr.chunk_walkers=4' has no effect with optim.type = adam"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("optim.determinant_balance = 0.5 has no effect with model.type = ferminet"), std::string::npos)
      << t.out;
  // a profile that cannot create its output names --output (it blamed run.output, never given)
  expect_input_error("profile " + cfg + " --output /sys/nnvmc_no_profile --iterations 1",
                     "profile: --output /sys/nnvmc_no_profile: cannot create directory '/sys/nnvmc_no_profile/runs'");
  // Adam's own settings under another optimizer (optim.beta1 under spring: no word)
  const auto sr = run("train " + cfg + " eval.steps=0 optim.iterations=1 --force optim.type=sr optim.beta1=0.5 "
                      "optim.epsilon=1e-6 optim.sr.norm_constraint=0 optim.sr.norm=fisher");
  ASSERT_EQ(sr.code, 0) << sr.out;
  // the measure of a step that nothing bounds (bit-identical runs, a user audit)
  EXPECT_NE(sr.out.find("'optim.sr.norm=fisher' has no effect with optim.sr.norm_constraint = 0"), std::string::npos)
      << sr.out;
  EXPECT_EQ(sr.out.find("'optim.sr.norm_constraint=0' has no effect"), std::string::npos) << sr.out;
  // a mapping is judged by each setting it gives (it was said to have no effect as a whole, a review)
  const auto mapping = run("train " + cfg + " eval.steps=0 optim.iterations=1 --force optim.type=sr "
                           "'optim.sr={norm: fisher, norm_constraint: 0}'");
  ASSERT_EQ(mapping.code, 0) << mapping.out;
  EXPECT_NE(mapping.out.find("'optim.sr={norm: fisher, norm_constraint: 0}': optim.sr.norm has no effect with "
                             "optim.sr.norm_constraint = 0"),
            std::string::npos)
      << mapping.out;
  EXPECT_EQ(mapping.out.find("0}' has no effect"), std::string::npos) << mapping.out;
  EXPECT_NE(sr.out.find("'optim.beta1=0.5' has no effect with optim.type = sr (an Adam setting)"), std::string::npos) << sr.out;
  EXPECT_NE(sr.out.find("'optim.epsilon=1e-6' has no effect with optim.type = sr (an Adam setting)"), std::string::npos) << sr.out;
  // not the default weight every Adam run carries
  const auto plain = run("train " + cfg + " eval.steps=0 optim.iterations=1 --force hamiltonian.chunk_walkers=4");
  ASSERT_EQ(plain.code, 0) << plain.out;
  EXPECT_EQ(plain.out.find("determinant_balance"), std::string::npos) << plain.out;
  // a fixed chunk is said to take effect (the measured chunk's line just disappeared, a user audit)
  EXPECT_NE(plain.out.find("local energy: 4 walkers per chunk (hamiltonian.chunk_walkers)"), std::string::npos) << plain.out;
  // pretraining settings without pretraining, and optimizer settings without training (they had no
  // word, a user audit); the steps and budgets themselves are not named
  const auto none = run("train " + cfg + " eval.steps=0 optim.iterations=0 --force pretrain.steps=0 pretrain.lr=0.1 "
                        "optim.lr=0.2 optim.type=spring optim.sr.damping=0.1");
  ASSERT_EQ(none.code, 0) << none.out;
  EXPECT_NE(none.out.find("'pretrain.lr=0.1' has no effect with pretrain.steps = 0"), std::string::npos) << none.out;
  // (kept for a resume that trains: said so, a review)
  EXPECT_NE(none.out.find("'optim.lr=0.2' has no effect with optim.iterations = 0 (nothing is trained now; "
                          "config.yaml keeps it for a resume with more optim.iterations)"),
            std::string::npos) << none.out;
  EXPECT_NE(none.out.find("'optim.sr.damping=0.1' has no effect with optim.iterations = 0"), std::string::npos) << none.out;
  EXPECT_EQ(none.out.find("'pretrain.steps=0' has no effect"), std::string::npos) << none.out;
  EXPECT_EQ(none.out.find("'optim.iterations=0' has no effect"), std::string::npos) << none.out;
  const auto paulinet = run("train " + cfg + " eval.steps=0 optim.iterations=1 --force model.type=paulinet "
                            "pretrain.basis=cc-pvdz");
  ASSERT_EQ(paulinet.code, 0) << paulinet.out;
  EXPECT_NE(paulinet.out.find("'pretrain.basis=cc-pvdz' has no effect with pretrain.steps = 0 (paulinet's Hartree-Fock "
                              "baseline is built in)"),
            std::string::npos) << paulinet.out;
  fs::remove_all(out);
}

// A run.output so long that the files written in it would pass PATH_MAX is refused before
// anything is made (it trained, then failed to write its files with exit 1).
TEST(Cli, ARunOutputTooLongForItsFilesIsRefusedFirst) {
  std::string out = (fs::temp_directory_path() / "nnvmc_cli_long").string();
  const std::string top = out;
  while (out.size() < 4080) out += "/" + std::string(200, 'd');
  out.resize(4080);
  const auto cfg = write_config("nnvmc_long.yaml", kTiny);
  expect_input_error("train " + cfg + " run.output=" + out, "run.output: the path is 4080 characters long");
  EXPECT_FALSE(fs::exists(top));
}

// The filesystem's root directory is no command's output: a run with run.output '/' wrote its
// config.yaml, result.h5 and checkpoint.h5 into / (as root; a user audit). Nothing is written there.
TEST(Cli, TheRootDirectoryIsRefusedAsAnOutput) {
  const auto before = std::distance(fs::directory_iterator("/"), fs::directory_iterator());
  const auto cfg = write_config("nnvmc_root_output.yaml", kTiny);
  expect_input_error("train " + cfg + " run.output=/", "run.output: '/' is the filesystem's root directory");
  expect_input_error("train " + cfg + " run.output=/tmp/..", "is the filesystem's root directory");
  const auto spec = write_config("nnvmc_root_output_compare.yaml",
                                 "ansatze: [{type: ferminet}]\nmolecules: [h]\niterations: 1\noutput: /\n");
  expect_input_error("compare " + spec + " --no-plots", "output: '/' is the filesystem's root directory");
  expect_input_error("profile " + cfg + " --molecules h --iterations 1 --no-roofline --no-plots --output /",
                     "profile: --output / is the filesystem's root directory");
  EXPECT_EQ(std::distance(fs::directory_iterator("/"), fs::directory_iterator()), before);
  EXPECT_FALSE(fs::exists("/config.yaml"));
  EXPECT_FALSE(fs::exists("/cells"));
}

// A natural-gradient run that keeps failing is told to set a step limit when it has none
// (optim.sr.norm_constraint = 0 is no limit: "try a smaller" one made no sense), and to tighten
// the one it has otherwise.
TEST(Cli, AFailingNaturalGradientRunIsAdvisedOnItsStepLimit) {
  const auto out = (fs::temp_directory_path() / "nnvmc_cli_norm_advice").string();
  fs::remove_all(out);
  const auto cfg = write_config("nnvmc_norm_advice.yaml", kTiny + "run: {output: " + out + "}\n");
  const std::string failing = " optim.lr=1e300 optim.max_consecutive_failures=2 eval.steps=0 optim.iterations=3 --force";
  const auto none = run("train " + cfg + " optim.type=sr optim.sr.norm_constraint=0" + failing);
  EXPECT_EQ(none.code, 1) << none.out;
  EXPECT_NE(none.out.find("Try a smaller optim.lr, or set optim.sr.norm_constraint (0: no limit; its default 1e-2)"),
            std::string::npos) << none.out;
  const auto some = run("train " + cfg + " optim.type=kfac optim.kfac.norm_constraint=1e300" + failing);  // (a limit that limits nothing)
  EXPECT_EQ(some.code, 1) << some.out;
  EXPECT_NE(some.out.find("Try a smaller optim.lr or optim.kfac.norm_constraint"), std::string::npos) << some.out;
  fs::remove_all(out);
}

// ---- Geometry is system data (item 3 of issue 18), seen from the command line. ----

namespace {
/// Trains a tiny LiH FermiNet for two iterations into `out` (once per test binary run).
std::string trained_lih(const std::string& name) {
  const auto out = (fs::temp_directory_path() / name).string();
  fs::remove_all(out);
  const auto cfg = write_config(name + ".yaml",
                                "system: {molecule: lih}\n"
                                "model: {ferminet: {hidden_dims: [[8, 4]], determinants: 2}}\n"
                                "sampler: {walkers: 8, steps_per_iteration: 2, burn_in: 4}\n"
                                "optim: {iterations: 2}\n"
                                "eval: {steps: 0}\n"
                                "pretrain: {steps: 0}\n"
                                "run: {output: " + out + ", threads: 1}\n");
  const auto t = run("train " + cfg);
  EXPECT_EQ(t.code, 0) << t.out;
  return out;
}
std::string lih_file(const std::string& name, double dx, double dy, double dz, double bond) {
  return write_config(name, "units: bohr\natoms:\n  - [Li, " + std::to_string(dx) + ", " + std::to_string(dy) + ", " +
                                std::to_string(dz) + "]\n  - [H, " + std::to_string(dx) + ", " + std::to_string(dy) +
                                ", " + std::to_string(dz + bond) + "]\n");
}
/// The JSON object of a command's output: from the first line that starts with '{' (log lines
/// before it may quote overrides with braces).
nlohmann::json json_of(const std::string& out) {
  std::size_t at = 0;
  while (at < out.size() && out[at] != '{') {
    at = out.find('\n', at);
    at = at == std::string::npos ? out.size() : at + 1;
  }
  return nlohmann::json::parse(out.substr(at));
}
}  // namespace

// A trained molecule given turned (and moved) is evaluated where it was trained: no ansatz here is
// rotation invariant, and H2 along y with an orbformer trained along z came out 183 mEh high with
// its exact reference beside it, exit 0 (a user audit). Its evaluation is the trained molecule's.
TEST(Cli, EvalOfATrainedMoleculeTurnedIsTheEvaluationOfTheTrainedOne) {
  const auto out = trained_lih("nnvmc_cli_turned");
  const auto turned =
      write_config("nnvmc_lih_turned.yaml", "units: bohr\natoms:\n  - [Li, 1.0, 2.0, 3.0]\n  - [H, 1.0, 5.015, 3.0]\n");
  const auto as_trained = run("eval " + out + " --steps 4 --seed 1 --json --log-level warn");
  const auto t = run("eval " + out + " system.molecule=" + turned + " --steps 4 --seed 1 --json");
  ASSERT_EQ(as_trained.code, 0) << as_trained.out;
  ASSERT_EQ(t.code, 0) << t.out;
  EXPECT_NE(t.out.find("is trained molecule 'lih' turned, moved or mirrored: placed where it was trained"), std::string::npos)
      << t.out;
  EXPECT_NEAR(json_of(t.out)["energy"].get<double>(), json_of(as_trained.out)["energy"].get<double>(), 1e-12);
  // a fine-tuning from it likewise (turned, it started from a wavefunction trained for another
  // orientation: worse than from scratch, the audit)
  const auto tuned = (fs::temp_directory_path() / "nnvmc_cli_turned_tuned").string();
  fs::remove_all(tuned);
  const auto f = run("train system.molecule=" + turned + " model.ferminet.hidden_dims=[[8,4]] "
                     "model.ferminet.determinants=2 sampler.walkers=8 sampler.burn_in=2 optim.iterations=1 eval.steps=0 "
                     "run.threads=1 model.init_from=" + out + " run.output=" + tuned);
  EXPECT_EQ(f.code, 0) << f.out;
  EXPECT_NE(f.out.find("is trained molecule 'lih' turned, moved or mirrored: placed where it was trained"), std::string::npos)
      << f.out;
  // and its resume places it there again (config.yaml names the turned file: it was refused as
  // "other nuclei", a review)
  const auto resumed = run("train --resume " + tuned + " optim.iterations=2");
  EXPECT_EQ(resumed.code, 0) << resumed.out;
  fs::remove_all(tuned);
  fs::remove_all(out);
}

TEST(Cli, EvalAtAnotherGeometryOfTheSameAtomsWorksAndTheNetworkSeesTheNewNuclei) {
  const auto out = trained_lih("nnvmc_cli_geometry");
  const auto ckpt = out + "/checkpoint.h5";
  // Stretched LiH: accepted, evaluated around the new nuclei.
  const auto stretched = run("eval " + ckpt + " system.molecule=" + lih_file("nnvmc_lih_stretched.yaml", 0, 0, 0, 4.0) +
                             " --steps 4 --seed 1 --json");
  ASSERT_EQ(stretched.code, 0) << stretched.out;
  EXPECT_NE(stretched.out.find("nuclei moved by up to"), std::string::npos) << stretched.out;
  EXPECT_TRUE(std::isfinite(json_of(stretched.out)["energy"].get<double>()));
  // Walkers placed afresh get a new run's burn-in at least (found by a user audit: 50 steps left a
  // transient of 5 mEh in a shifted He atom); one the user gives is kept.
  EXPECT_NE(stretched.out.find("walkers start around its nuclei, with a burn-in of 500 steps (eval.burn_in=N for "
                               "another)"),
            std::string::npos)
      << stretched.out;
  const auto kept = run("eval " + ckpt + " system.molecule=" + lih_file("nnvmc_lih_stretched.yaml", 0, 0, 0, 4.0) +
                        " --steps 1 eval.burn_in=3");
  EXPECT_NE(kept.out.find("with a burn-in of 3 steps (eval.burn_in)"), std::string::npos) << kept.out;
  // The same stretched molecule translated as a whole: ψ and H move with the nuclei, so the
  // chain and its energies are the same (to rounding). A network that kept the trained nuclei
  // would see electrons several bohr from where it thinks the nuclei are.
  const auto a = run("eval " + ckpt + " system.molecule=" + lih_file("nnvmc_lih_a.yaml", 1.5, -0.7, 2.0, 4.0) +
                     " --steps 4 --seed 1 --json --log-level warn");
  const auto b = run("eval " + ckpt + " system.molecule=" + lih_file("nnvmc_lih_b.yaml", -2.0, 3.0, -1.0, 4.0) +
                     " --steps 4 --seed 1 --json --log-level warn");
  ASSERT_EQ(a.code, 0) << a.out;
  ASSERT_EQ(b.code, 0) << b.out;
  EXPECT_NEAR(json_of(a.out)["energy"].get<double>(), json_of(b.out)["energy"].get<double>(), 1e-8);
  EXPECT_NEAR(json_of(a.out)["energy"].get<double>(), json_of(stretched.out)["energy"].get<double>(), 1e-8);
  // Other atoms: refused, naming the key and both molecules.
  expect_input_error("eval " + ckpt + " system.molecule=h2 --steps 2", "system.molecule");
  expect_input_error("eval " + ckpt + " system.molecule=h2 --steps 2", "cannot describe");
  // --resume continues the same chain: another geometry is refused.
  expect_input_error("train --resume " + out + " system.molecule=" + lih_file("nnvmc_lih_c.yaml", 0, 0, 0, 4.0),
                     "--resume");
}

// `eval --molecule traj@1` finds that frame of a run through its checkpoint, whose molecules are
// written under their run names (traj_1): the name its list gave it is kept in the checkpoint (a
// review: the match by that name alone found nothing there).
TEST(Cli, EvalFindsAFrameOfTheRunByTheNameItsListGaveIt) {
  const auto out = (fs::temp_directory_path() / "nnvmc_cli_frame_name").string();
  fs::remove_all(out);
  const auto traj = write_config("nnvmc_cli_frames.xyz", "2\nA\nH 0 0 0\nH 0 0 0.74\n2\nB\nH 0 0 0\nH 0 0 0.80\n");
  const auto cfg = write_config("nnvmc_cli_frame_name.yaml", "system: {molecules: [" + traj + "@1]}\nmodel: {type: hf}\n"
                                "sampler: {walkers: 8, burn_in: 2}\noptim: {iterations: 0}\npretrain: {steps: 0}\n"
                                "eval: {steps: 2, burn_in: 2}\nrun: {threads: 1, output: " + out + "}\n");
  ASSERT_EQ(run("train " + cfg + " --log-level warn").code, 0);
  {  // nothing trained: the evaluation's walkers ran the start's burn-in (500 for fresh walkers) too
    const auto summary = nlohmann::json::parse(std::ifstream(out + "/summary.json"));
    EXPECT_EQ(summary["burn_in"].get<int>(), 502) << summary.dump();
    EXPECT_TRUE(summary["fresh_walkers"].get<bool>());
    EXPECT_FALSE(summary["burn_in_short"].get<bool>());
  }
  const auto by_frame = run("eval " + out + " --molecule nnvmc_cli_frames@1 --steps 2 --json --log-level error");
  ASSERT_EQ(by_frame.code, 0) << by_frame.out;
  EXPECT_EQ(json_of(by_frame.out)["molecule"], "nnvmc_cli_frames_1");
  EXPECT_EQ(run("eval " + out + " --molecule nnvmc_cli_frames_1 --steps 2 --log-level error").code, 0);
  expect_input_error("eval " + out + " --molecule nnvmc_cli_frames@0 --steps 2", "no molecule named");
  fs::remove_all(out);
  // and so does a resumed run's checkpoint (the resume's molecules come from the checkpoint too)
  const auto trained = (fs::temp_directory_path() / "nnvmc_cli_frame_name_resumed").string();
  fs::remove_all(trained);
  const auto tiny = write_config("nnvmc_cli_frame_name_resumed.yaml",
                                 "system: {molecules: [" + traj + "@1]}\n"
                                 "model: {ferminet: {hidden_dims: [[8, 4]], determinants: 2}}\n"
                                 "sampler: {walkers: 8, steps_per_iteration: 2, burn_in: 2}\noptim: {iterations: 2}\n"
                                 "pretrain: {steps: 0}\neval: {steps: 2, burn_in: 2}\n"
                                 "run: {threads: 1, output: " + trained + "}\n");
  ASSERT_EQ(run("train " + tiny + " --log-level warn").code, 0);
  ASSERT_EQ(run("train --resume " + trained + " optim.iterations=4 --log-level warn").code, 0);
  const auto resumed = run("eval " + trained + " --molecule nnvmc_cli_frames@1 --steps 2 --json --log-level error");
  ASSERT_EQ(resumed.code, 0) << resumed.out;
  EXPECT_EQ(json_of(resumed.out)["molecule"], "nnvmc_cli_frames_1");
  fs::remove_all(trained);
}

// An evaluation whose walkers were not in equilibrium is marked unreliable and says why (a user
// audit: Ar after the default burn-in was 0.6-0.8 Eh high, and one at a step size never adapted
// (acceptance 0.003) 4 Eh off, both reported as reliable). Here H2's Hartree-Fock state at 6
// bohr, its walkers started around the nuclei and measured at once, drifts by 0.1 Eh (its
// first fifth of steps against its last half: 4.4 combined errors); after a burn-in it does not.
TEST(Cli, AnEvaluationWhoseWalkersDriftOrHardlyMoveIsMarkedUnreliable) {
  const auto out = (fs::temp_directory_path() / "nnvmc_cli_drift").string();
  fs::remove_all(out);
  const auto cfg = write_config("nnvmc_cli_drift.yaml", "system: {molecule: h2}\nmodel: {type: hf}\n"
                                                        "sampler: {walkers: 256, burn_in: 200}\noptim: {iterations: 0}\n"
                                                        "pretrain: {steps: 0}\neval: {steps: 4}\n"
                                                        "run: {threads: 1, output: " + out + "}\n");
  ASSERT_EQ(run("train " + cfg + " --log-level warn").code, 0);
  const std::string stretched = " 'system.molecules=[{atoms: [[H, 0, 0, 0], [H, 0, 0, 6]], name: h2, units: bohr}]' "
                                "--steps 25 sampler.steps_per_iteration=1 --seed 1";
  const auto at_once = run("eval " + out + stretched + " eval.burn_in=0");
  ASSERT_EQ(at_once.code, 0) << at_once.out;
  EXPECT_NE(at_once.out.find("(UNRELIABLE: see below)"), std::string::npos) << at_once.out;
  EXPECT_NE(at_once.out.find("the energy drifts during the evaluation"), std::string::npos) << at_once.out;
  const auto drifted = json_of(run("eval " + out + stretched + " eval.burn_in=0 --json --log-level error").out);
  EXPECT_FALSE(drifted["error_reliable"].get<bool>());
  EXPECT_GT(std::fabs(drifted["drift_z"].get<double>()), 3.5);
  const auto burnt_in = json_of(run("eval " + out + stretched + " eval.burn_in=500 --json --log-level error").out);
  EXPECT_TRUE(burnt_in["error_reliable"].get<bool>());
  EXPECT_LT(std::fabs(burnt_in["drift_z"].get<double>()), 3.5);
  // walkers that hardly move (a step size never adapted) measure where they started
  const auto stuck = run("eval " + out + " eval.burn_in=0 sampler.step_size=30 --steps 5 --seed 1");
  ASSERT_EQ(stuck.code, 0) << stuck.out;
  EXPECT_NE(stuck.out.find("the walkers hardly moved while measuring"), std::string::npos) << stuck.out;
  EXPECT_NE(stuck.out.find("(UNRELIABLE: see below)"), std::string::npos) << stuck.out;
  fs::remove_all(out);
  // Fresh walkers of heavier atoms get a longer burn-in: 20 Z_max² steps (oxygen: 1280), as the
  // one step size adapts to the core electrons and the valence ones take ~Z² steps to spread out
  // (Ar, whose walkers start around the nucleus, measured 0.6-0.8 Eh high after 500-1000 steps)
  const auto water = (fs::temp_directory_path() / "nnvmc_cli_drift_h2o").string();
  fs::remove_all(water);
  const auto water_cfg = write_config("nnvmc_cli_drift_h2o.yaml",
                                      "system: {molecule: h2o}\nmodel: {type: hf}\nsampler: {walkers: 8, burn_in: 2}\n"
                                      "optim: {iterations: 0}\npretrain: {steps: 0}\neval: {steps: 2, burn_in: 2}\n"
                                      "run: {threads: 1, output: " + water + "}\n");
  const auto untrained = run("train " + water_cfg);  // (a run that trains nothing measures fresh walkers too)
  ASSERT_EQ(untrained.code, 0) << untrained.out;
  EXPECT_NE(untrained.out.find("h2o: no iteration to train, so the walkers placed at the start get a burn-in of 1280 "
                               "steps"),
            std::string::npos)
      << untrained.out;
  const auto moved = run("eval " + water + " 'system.molecules=[{atoms: [[O, 0, 0, 0], [H, 0, 1.43, 1.11], "
                         "[H, 0, -1.43, 1.2]], name: h2o, units: bohr}]' --steps 1");
  ASSERT_EQ(moved.code, 0) << moved.out;
  EXPECT_NE(moved.out.find("walkers start around its nuclei, with a burn-in of 1280 steps"), std::string::npos)
      << moved.out;
  fs::remove_all(water);
}

TEST(Cli, EvalStartsFromTheCheckpointsStepSizeAndReportsIt) {
  const auto out = trained_lih("nnvmc_cli_stepsize");
  const nnvmc::io::H5File results(out + "/result.h5", nnvmc::io::H5File::Mode::read);
  const auto steps = results.read("train/step_size");
  const double trained = steps.as<double>()[steps.numel() - 1];
  // No burn-in: measured with exactly the step size training ended with.
  const auto e = run("eval " + out + "/checkpoint.h5 --steps 3 eval.burn_in=0 --json --log-level warn");
  ASSERT_EQ(e.code, 0) << e.out;
  EXPECT_EQ(json_of(e.out)["step_size"].get<double>(), trained);
  // An explicit sampler.step_size still wins.
  const auto f = run("eval " + out + "/checkpoint.h5 --steps 3 eval.burn_in=0 sampler.step_size=0.0123 --json --log-level warn");
  ASSERT_EQ(f.code, 0) << f.out;
  EXPECT_EQ(json_of(f.out)["step_size"].get<double>(), 0.0123);
}

// ---- Several molecules in one run (issue 14): a transferable ansatz trains them together. ----

TEST(Cli, ARunOfTwoMoleculesEvaluatesEachAndPrintsAJsonList) {
  const auto out = (fs::temp_directory_path() / "nnvmc_cli_multi").string();
  fs::remove_all(out);
  const auto cfg = write_config("nnvmc_multi.yaml",
                                "system: {molecules: [h2, {molecule: h2, geometry: [[0, 0, 0], [0, 0, 2.0]], name: h2_long}]}\n"
                                "model: {type: orbformer, orbformer: {elements: H-O, heads: 2, head_dim: 4, layers: 1,\n"
                                "  featurization_heads: 2, determinants: 2, envelopes_per_nucleus: 2, nuclear_feature_dim: 8,\n"
                                "  nuclear_layers: 1, orbital_layers: 1, orbital_heads: 2, orbital_head_dim: 4}}\n"
                                "sampler: {walkers: 8, steps_per_iteration: 2, burn_in: 4}\n"
                                "optim: {type: adam, iterations: 2}\n"
                                "eval: {steps: 2, burn_in: 2}\n"
                                "pretrain: {steps: 0}\n"
                                "run: {output: " + out + ", threads: 1}\n");
  const auto t = run("train " + cfg);
  ASSERT_EQ(t.code, 0) << t.out;
  EXPECT_NE(t.out.find("2 molecules"), std::string::npos) << t.out;
  {  // each molecule's state in summary.json, as eval --json gives it (an H2+ read as H2 there)
    const auto summary = nlohmann::json::parse(std::ifstream(out + "/summary.json"));
    EXPECT_EQ(summary["molecules"][1]["charge"], 0);
    EXPECT_EQ(summary["molecules"][1]["spin"], 0);
    // ... and its geometry, which tells the two H2 apart (the points of a scan)
    const auto atoms = summary["molecules"][1]["atoms_bohr"];
    ASSERT_EQ(atoms.size(), 2u) << summary.dump();
    EXPECT_EQ(atoms[1][0], "H");
    EXPECT_DOUBLE_EQ(atoms[1][3].get<double>(), 2.0);
    EXPECT_DOUBLE_EQ(summary["molecules"][0]["atoms_bohr"][1][3].get<double>(), 1.4);
  }
  const auto e = run("eval " + out + "/checkpoint.h5 --steps 3 --json --log-level warn");
  ASSERT_EQ(e.code, 0) << e.out;
  const auto list = nlohmann::json::parse(e.out.substr(e.out.find('[')));
  ASSERT_TRUE(list.is_array());
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0]["molecule"], "h2");
  EXPECT_EQ(list[1]["molecule"], "h2_long");
  EXPECT_DOUBLE_EQ(list[1]["atoms_bohr"][1][3].get<double>(), 2.0);
  for (const auto& j : list) {
    EXPECT_EQ(j["steps"], 3);
    EXPECT_TRUE(std::isfinite(j["energy"].get<double>()));
  }
  // One molecule of the run: the one-molecule JSON object.
  const auto one = run("eval " + out + "/checkpoint.h5 --molecule h2_long --steps 3 --json --log-level warn");
  ASSERT_EQ(one.code, 0) << one.out;
  EXPECT_EQ(json_of(one.out)["molecule"], "h2_long");
  expect_input_error("eval " + out + "/checkpoint.h5 --molecule nosuch --steps 2", "h2_long");
  // The Orbformer evaluates molecules it was not trained on (other electrons and nuclei), and
  // says which of their elements it never trained on.
  const auto other = run("eval " + out + "/checkpoint.h5 system.molecule=lih --steps 2 --json --log-level warn");
  ASSERT_EQ(other.code, 0) << other.out;
  EXPECT_EQ(json_of(other.out)["molecule"], "lih");
  EXPECT_NE(other.out.find("lih: element Li in none of the checkpoint's molecules (h2, h2_long): unless a run it was "
                           "fine-tuned from had it, the parameters for it are untrained, as a new model's"),
            std::string::npos)
      << other.out;
  // Another spin at a trained geometry is said to be one (it was "not a geometry the checkpoint
  // was trained on"), and the JSON tells the state apart
  const auto triplet = run("eval " + out + "/checkpoint.h5 --molecule h2 system.spin=2 --steps 2 --json");
  ASSERT_EQ(triplet.code, 0) << triplet.out;
  EXPECT_NE(triplet.out.find("h2: a trained geometry ('h2') with other electrons (charge 0, spin 2; trained: charge 0, "
                             "spin 0); walkers start around its nuclei"),
            std::string::npos)
      << triplet.out;
  EXPECT_EQ(json_of(triplet.out)["spin"], 2);
  EXPECT_EQ(json_of(triplet.out)["charge"], 0);
  // Fine-tuning on LiH from these weights, the run named by its directory (as eval and --resume take it)
  const auto ft = (fs::temp_directory_path() / "nnvmc_cli_multi_ft").string();
  fs::remove_all(ft);
  const auto f = run("train " + cfg + " system.molecule=lih model.init_from=" + out + " run.output=" + ft +
                     " eval.steps=0");
  ASSERT_EQ(f.code, 0) << f.out;
  EXPECT_NE(f.out.find("parameters from " + out + "/checkpoint.h5"), std::string::npos) << f.out;
  // A resume with the list in another order says so (it blamed changed nuclei, a user audit)
  expect_input_error("train --resume " + out +
                         " 'system.molecules=[{molecule: h2, geometry: [[0, 0, 0], [0, 0, 2.0]], name: h2_long}, h2]'",
                     "the config lists the molecules in another order: its molecule 0 ('h2_long') is the checkpoint's "
                     "molecule 1; each molecule continues its own Markov chain, so list them in the order they were "
                     "trained in (h2, h2_long)");
  // (a molecule changed is not "another order", though another of the config's is trained)
  expect_input_error("train --resume " + out + " 'system.molecules=[{molecule: h2, name: h2_long}, h2]'",
                     "now has other nuclei or electrons");
}

// A CONFIG or run directory whose name holds '=' (a sweep's "lr=0.1") is the positional argument,
// not an override: it exists on disk (found by a user audit: `nnvmc eval 'lr=0.1'` said "give a
// CHECKPOINT file", `nnvmc config 'cfg_lr=0.1.yaml'` "unknown key 'cfg_lr'").
TEST(Cli, AConfigOrRunDirectoryNamedLikeKeyEqualsValueIsTheArgumentNotAnOverride) {
  const auto dir = fs::temp_directory_path() / "nnvmc_cli_sweep";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "cfg_lr=0.1.yaml") << kTiny << "run: {output: lr=0.1}\n";
  const std::string in_dir = "cd " + dir.string() + " && " + std::string(NNVMC_EXE);
  fs::create_directories(dir / "optim.iterations=1");  // after the CONFIG, an override all the same
  const auto c = run_shell(in_dir + " config 'cfg_lr=0.1.yaml' optim.iterations=1");
  ASSERT_EQ(c.code, 0) << c.out;
  const auto t = run_shell(in_dir + " train 'cfg_lr=0.1.yaml'");
  ASSERT_EQ(t.code, 0) << t.out;
  ASSERT_TRUE(fs::exists(dir / "lr=0.1" / "checkpoint.h5")) << t.out;
  const auto e = run_shell(in_dir + " eval 'lr=0.1' --steps 2 --json");
  ASSERT_EQ(e.code, 0) << e.out;
  // a text that names nothing on disk is still an override
  const auto o = run_shell(in_dir + " config 'cfg_lr=0.1.yaml' 'nosuch=1'");
  EXPECT_EQ(o.code, 2) << o.out;
  EXPECT_NE(o.out.find("unknown key 'nosuch'"), std::string::npos) << o.out;
  fs::remove_all(dir);
}

// A run trained with eval.steps = 0 is evaluated by the command its log suggests, with the
// default step count (found by a user audit: the run's own 0 refused that command).
TEST(Cli, ARunTrainedWithoutAnEvaluationIsEvaluatedByTheCommandItsLogSuggests) {
  const auto out = (fs::temp_directory_path() / "nnvmc_cli_no_eval").string();
  fs::remove_all(out);
  const auto cfg = write_config("nnvmc_no_eval.yaml", kTiny + "run: {output: " + out + "}\n");
  const auto t = run("train " + cfg + " eval.steps=0");
  ASSERT_EQ(t.code, 0) << t.out;
  const std::string suggested = "nnvmc eval " + out + "/checkpoint.h5";
  ASSERT_NE(t.out.find("'" + suggested + "' measures it"), std::string::npos) << t.out;
  const auto e = run(suggested.substr(6) + " --json");
  ASSERT_EQ(e.code, 0) << e.out;
  EXPECT_NE(e.out.find("evaluating 500 steps (--steps N for another count)"), std::string::npos) << e.out;
  EXPECT_EQ(json_of(e.out)["steps"], 500);
  expect_input_error("eval " + out + " eval.steps=0", "'eval.steps' must be at least 1");
}

TEST(Cli, AnAnsatzForOneMoleculeRefusesTwoWithExitCode2) {
  const auto out = (fs::temp_directory_path() / "nnvmc_cli_multi_refused").string();
  fs::remove_all(out);
  const auto cfg = write_config("nnvmc_multi_ferminet.yaml", kTiny + "run: {output: " + out + "}\n");
  expect_input_error("train " + cfg + " 'system.molecules=[h2, he]'", "system.molecules");
  EXPECT_FALSE(fs::exists(out));
}

// ---- Hostile input: one test per row of issue 18's catalogue (command line side). ----

TEST(Cli, AnOutputDirectoryHoldingARunIsRefusedUnlessForced) {
  const auto out = (fs::temp_directory_path() / "nnvmc_cli_overwrite").string();
  fs::remove_all(out);
  const auto cfg = write_config("nnvmc_overwrite.yaml", kTiny + "run: {output: " + out + "}\n");
  ASSERT_EQ(run("train " + cfg).code, 0);
  const auto before = fs::last_write_time(out + "/checkpoint.h5");
  expect_input_error("train " + cfg, "already holds a run");
  EXPECT_EQ(fs::last_write_time(out + "/checkpoint.h5"), before);
  const auto forced = run("train " + cfg + " --force optim.iterations=1");
  ASSERT_EQ(forced.code, 0) << forced.out;
  expect_input_error("train --resume " + out + " --force", "--force");
  expect_input_error("train " + cfg + " --resume " + out, "not the file");
}

// A file STOP in the run directory stops a run as Ctrl-C does, from outside the process (under
// mpirun Ctrl-C killed a large model's ranks before their checkpoint: a user audit), in every
// stage, and is removed: a start stops in its burn-in (nothing to resume), a resume before its
// first iteration keeps its checkpoint, and the next resume trains to the end.
TEST(Cli, AStopFileInTheRunDirectoryStopsTheRunAndIsRemoved) {
  const auto t = tiny_run("nnvmc_cli_stop_file");
  fs::create_directories(t.dir);
  std::ofstream(t.dir + "/STOP") << "";
  const auto start = run("train " + t.config);
  EXPECT_EQ(start.code, 1) << start.out;
  EXPECT_NE(start.out.find(t.dir + "/STOP asks the run to stop (the file is removed)"), std::string::npos) << start.out;
  EXPECT_NE(start.out.find("stopped by the STOP file during the burn-in"), std::string::npos) << start.out;
  EXPECT_FALSE(fs::exists(t.dir + "/STOP"));
  ASSERT_EQ(run("train " + t.config).code, 0);
  std::ofstream(t.dir + "/STOP") << "";
  const auto resumed = run("train --resume " + t.dir + " optim.iterations=4");
  EXPECT_EQ(resumed.code, 1) << resumed.out;
  EXPECT_NE(resumed.out.find("stop requested before the first iteration of this resume"), std::string::npos)
      << resumed.out;
  EXPECT_FALSE(fs::exists(t.dir + "/STOP"));
  const auto finished = run("train --resume " + t.dir + " optim.iterations=4");
  EXPECT_EQ(finished.code, 0) << finished.out;
  EXPECT_NE(finished.out.find("it      4/4"), std::string::npos) << finished.out;
  fs::remove_all(t.dir);
}

TEST(Cli, ResumeNeedsExactlyOneCheckpoint) {
  const auto root = (fs::temp_directory_path() / "nnvmc_cli_resume_dirs").string();
  fs::remove_all(root);
  fs::create_directories(root + "/empty");
  expect_input_error("train --resume " + root + "/empty", "no checkpoint.h5");
  std::ofstream(root + "/empty/checkpoint.h5.tmp") << "half written";
  expect_input_error("train --resume " + root + "/empty", "unfinished");
  for (const char* run_name : {"a", "b"}) {
    const auto cfg = write_config("nnvmc_resume_" + std::string(run_name) + ".yaml",
                                  kTiny + "run: {output: " + root + "/" + run_name + "}\n");
    ASSERT_EQ(run("train " + cfg).code, 0);
  }
  const auto r = run("train --resume " + root);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find(root + "/a"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(root + "/b"), std::string::npos) << r.out;
  // a run's checkpoint.h5 is its run; a checkpoint file of another name is not a run (it made its
  // folder one, replacing the user's config.yaml there: a user audit)
  EXPECT_EQ(run("train --resume " + root + "/a/checkpoint.h5 optim.iterations=3").code, 0);
  fs::create_directories(root + "/saved");
  fs::copy_file(root + "/b/checkpoint.h5", root + "/saved/he.h5");
  expect_input_error("train --resume " + root + "/saved/he.h5 optim.iterations=3",
                     "give a run's directory (or its checkpoint.h5)");
  EXPECT_EQ(std::distance(fs::directory_iterator(root + "/saved"), fs::directory_iterator()), 1);
}

TEST(Cli, UnwritableOutputIsRefusedNamingRunOutput) {
  const auto file = write_config("nnvmc_output_is_a_file", "not a directory");
  const auto cfg = write_config("nnvmc_unwritable.yaml", kTiny);
  expect_input_error("train " + cfg + " run.output=" + file + "/run", "run.output");
  expect_input_error("train " + cfg + " run.output=/proc/nnvmc_cannot_be_here", "run.output");
}

namespace {
/// Runs nnvmc as the file permissions it meets say: as root (CI containers) without the
/// capabilities that override them (setpriv, util-linux), so chmod means what it says.
Result run_unprivileged(const std::string& args) {
  const std::string drop = ::geteuid() == 0 ? "setpriv --inh-caps=-dac_override,-dac_read_search "
                                              "--bounding-set=-dac_override,-dac_read_search "
                                            : "";
  auto r = run_shell(drop + NNVMC_EXE + " " + args);
  return {r.code, std::move(r.out)};
}
}  // namespace

// Files the user may not write are input errors (exit 2) naming run.output, and change nothing:
// an existing read-only output directory was reported as "cannot create the lock file: No such
// file or directory" (exit 1); a read-only result.h5 on resume was taken for a damaged file and
// set aside, and the run went on in a new one without its history.
TEST(Cli, OutputsTheUserMayNotWriteAreRefusedNamingRunOutputAndKeepTheRun) {
  const auto root = (fs::temp_directory_path() / "nnvmc_cli_readonly").string();
  fs::remove_all(root);
  fs::create_directories(root + "/locked");
  fs::permissions(root + "/locked", fs::perms::owner_read | fs::perms::owner_exec);
  const auto cfg = write_config("nnvmc_readonly.yaml", kTiny);
  const auto locked = run_unprivileged("train " + cfg + " run.output=" + root + "/locked");
  EXPECT_EQ(locked.code, 2) << locked.out;
  EXPECT_NE(locked.out.find("run.output: cannot write to '" + root + "/locked': Permission denied"), std::string::npos)
      << locked.out;
  EXPECT_TRUE(fs::is_empty(root + "/locked"));

  const std::string run_dir = root + "/run";
  ASSERT_EQ(run("train " + cfg + " run.output=" + run_dir).code, 0);
  const auto rows_before = nnvmc::io::H5File(run_dir + "/result.h5", nnvmc::io::H5File::Mode::read).rows("train/energy");
  fs::permissions(run_dir + "/result.h5", fs::perms::owner_read);
  const auto before = fs::last_write_time(run_dir + "/config.yaml");
  const auto resumed = run_unprivileged("train --resume " + run_dir + " optim.iterations=4");
  EXPECT_EQ(resumed.code, 2) << resumed.out;
  EXPECT_NE(resumed.out.find("run.output: cannot write to '" + run_dir + "/result.h5'"), std::string::npos)
      << resumed.out;
  EXPECT_FALSE(fs::exists(run_dir + "/result.h5.damaged"));
  EXPECT_EQ(fs::last_write_time(run_dir + "/config.yaml"), before);
  EXPECT_EQ(nnvmc::io::H5File(run_dir + "/result.h5", nnvmc::io::H5File::Mode::read).rows("train/energy"), rows_before);
  fs::permissions(run_dir + "/result.h5", fs::perms::owner_write, fs::perm_options::add);
  fs::permissions(root + "/locked", fs::perms::owner_all);
  fs::remove_all(root);
}

// A molecule named like a run-level series of result.h5 is renamed there; the user is told
// (it was renamed silently, and eval --molecule energy was then refused).
TEST(Cli, AMoleculeNamedLikeARunLevelSeriesIsToldItsNewName) {
  const auto cfg = write_config("nnvmc_reserved_name.yaml", kTiny);
  const auto r = run("config " + cfg + " 'system.molecules=[{molecule: h2, name: energy}, he]'");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("molecule name 'energy' is the name of a run-level series in result.h5 and summary.json: the "
                       "molecule is called 'energy_2' there"),
            std::string::npos)
      << r.out;
}

// A comparison or molecule file given where a run config goes is named as such (it read only
// "unknown key 'ansatze'").
TEST(Cli, AComparisonOrMoleculeFileGivenAsARunConfigIsNamedAsSuch) {
  expect_input_error("config " + std::string(NNVMC_SOURCE_DIR) + "/configs/compare/lih_h2_ansatze.yaml",
                     "this looks like a comparison file: run it with 'nnvmc compare FILE'");
  expect_input_error("train " + std::string(NNVMC_SOURCE_DIR) + "/configs/molecules/h2o.yaml",
                     "this looks like a molecule file: give it as system.molecule=FILE");
  // (an xyz file was "a second YAML document (after '---')")
  const auto xyz = write_config("nnvmc_water.xyz", "3\nwater\nO 0 0 0\nH 0 0.757 0.587\nH 0 -0.757 0.587\n");
  expect_input_error("config " + xyz, "an xyz molecule file, not a run config: give it as system.molecule=");
  // a checkpoint given as the config (it was "malformed YAML: unknown escape character" and raw bytes)
  const auto [dir, cfg] = tiny_run("nnvmc_cli_binary_config");
  ASSERT_EQ(run("train " + cfg).code, 0);
  expect_input_error("train " + dir + "/checkpoint.h5",
                     "a binary file, not a run config (YAML text): an HDF5 file; evaluate a checkpoint with nnvmc eval");
  fs::remove_all(dir);
  // an unknown ansatz is located like every other setting (it alone named neither file nor line),
  // and an override is named without a line number (it was "override 'k=v':1:")
  const auto fermi = write_config("nnvmc_fermi.yaml", "system: {molecule: he}\nmodel: {type: fermi}\n");
  expect_input_error("train " + fermi, fermi + ":2: 'model.type': unknown ansatz 'fermi'");
  expect_input_error("config " + fermi, fermi + ":2: 'model.type': unknown ansatz 'fermi'");
  expect_input_error("config " + cfg + " model.type=fermi", "override 'model.type=fermi': 'model.type': unknown ansatz");
  expect_input_error("config " + cfg + " optim.iterations=abc",
                     "override 'optim.iterations=abc': 'optim.iterations' must be an integer, got 'abc'");
}

TEST(Cli, InputsRejectedAfterParsingStillWriteNothing) {
  const auto out = (fs::temp_directory_path() / "nnvmc_cli_nothing").string();
  fs::remove_all(out);
  const auto cfg = write_config("nnvmc_nothing.yaml", kTiny + "run: {output: " + out + "}\n");
  expect_input_error("train " + cfg + " pretrain.steps=2 pretrain.basis=no-such-basis", "pretrain.basis");
  expect_input_error("train " + cfg + " pretrain.steps=2 pretrain.basis=aug-cc-pvdz 'system.molecule=[[K, 0, 0, 0]]' system.spin=1",
                     "pretrain.basis");
  expect_input_error("train " + cfg + " model.type=hf hamiltonian.laplacian=jvp optim.iterations=0 pretrain.steps=2",
                     "pretrain.steps");
  expect_input_error("train " + cfg + " model.type=hf hamiltonian.laplacian=jvp", "optim.iterations");
  expect_input_error("train " + cfg + " model.type=hf hamiltonian.laplacian=jvp model.hf.basis=nosuch", "model.hf.basis");
  expect_input_error("train " + cfg + " run.memory_budget=100000TiB", "run.memory_budget");
  expect_input_error("train " + cfg + " sampler.walkers=2000000000 run.memory_budget=1GiB", "sampler.walkers");
  // (Molecules: tests/core/test_system.cpp, Hostile.*; their errors reach the CLI as above.)
  expect_input_error("train " + cfg + " system.molecule=" + fs::temp_directory_path().string() + "/", "not a molecule file");
  expect_input_error("train " + fs::temp_directory_path().string() + " run.output=" + out, "not a regular file");
  EXPECT_FALSE(fs::exists(out)) << "nothing is written for bad input";
  // A run of the parameterless 'hf' ansatz resumed with iterations is refused as a new one is,
  // and changes nothing (Adam failed inside libtorch; SPRING "trained" 2 iterations, exit 0).
  ASSERT_EQ(run("train " + cfg + " model.type=hf optim.iterations=0").code, 0);
  const auto before = fs::last_write_time(out + "/config.yaml");
  for (const char* optimizer : {"adam", "spring"}) {
    const auto r = run("train --resume " + out + " optim.iterations=2 optim.type=" + optimizer);
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_NE(r.out.find("optim.iterations: the 'hf' ansatz has no parameters to train"), std::string::npos) << r.out;
  }
  EXPECT_EQ(fs::last_write_time(out + "/config.yaml"), before);
  fs::remove_all(out);
}

TEST(Cli, DamagedOrForeignCheckpointsAreCleanErrors) {
  const auto out = (fs::temp_directory_path() / "nnvmc_cli_damaged").string();
  fs::remove_all(out);
  const auto cfg = write_config("nnvmc_damaged.yaml", kTiny + "run: {output: " + out + "}\n");
  ASSERT_EQ(run("train " + cfg).code, 0);
  const auto ckpt = out + "/checkpoint.h5";
  // Another program's HDF5 file (here: a results file).
  expect_input_error("eval " + out + "/result.h5", "not an nnvmc checkpoint");
  // Truncated.
  const auto truncated = out + "/truncated.h5";
  fs::copy_file(ckpt, truncated);
  fs::resize_file(truncated, fs::file_size(truncated) * 2 / 3);
  expect_input_error("eval " + truncated, truncated);
  // Bytes damaged in the middle (parameters, sampler state, ...): every 97th byte of the second
  // quarter flipped; the file still opens as HDF5 but must not load.
  const auto damaged = out + "/damaged.h5";
  fs::copy_file(ckpt, damaged);
  {
    std::fstream f(damaged, std::ios::in | std::ios::out | std::ios::binary);
    const auto size = static_cast<long>(fs::file_size(damaged));
    for (long i = size / 4; i < size / 2; i += 97) {
      f.seekg(i);
      const char c = static_cast<char>(f.get());
      f.seekp(i);
      f.put(static_cast<char>(c ^ 0x5a));
    }
  }
  expect_input_error("eval " + damaged, damaged);
  // Wrong format version.
  const auto old = out + "/old.h5";
  fs::copy_file(ckpt, old);
  {
    nnvmc::io::H5File f(old, nnvmc::io::H5File::Mode::append);
    f.set_attr("version", "1");
  }
  expect_input_error("eval " + old, "format version 1");
  expect_input_error("train --resume " + old, "format version 1");
}

// The allocator settings (src/app/allocator_tuning.hpp) change speed only: with glibc's defaults
// (NNVMC_MALLOC=default) a run gives the same numbers bit for bit.
TEST(Cli, AllocatorSettingsDoNotChangeResults) {
  const auto tuned = run("scf h2o --basis sto-3g --json --threads 1");
  setenv("NNVMC_MALLOC", "default", 1);
  const auto plain = run("scf h2o --basis sto-3g --json --threads 1");
  unsetenv("NNVMC_MALLOC");
  ASSERT_EQ(tuned.code, 0) << tuned.out;
  ASSERT_EQ(plain.code, 0) << plain.out;
  EXPECT_EQ(json_of(tuned.out)["e_hf"].get<double>(), json_of(plain.out)["e_hf"].get<double>());
}

// The SCF's convergence settings on the command line change the path, not the answer: the
// core guess, no Schwarz screening, damping with a later DIIS start and a level shift all reach
// the default run's RHF energy (H2O/STO-3G); the slower path takes more iterations.
TEST(Cli, ScfConvergenceSettingsChangeThePathNotTheEnergy) {
  const auto plain = run("scf h2o --basis sto-3g --json --threads 1");
  ASSERT_EQ(plain.code, 0) << plain.out;
  const double e = json_of(plain.out)["e_hf"].get<double>();
  // (the JSON states the molecule's charge, spin and units, as ccsd --json does: a user audit)
  EXPECT_EQ(json_of(plain.out)["charge"], 0);
  EXPECT_EQ(json_of(plain.out)["spin"], 0);
  EXPECT_EQ(json_of(plain.out)["energy_units"], "hartree");
  for (const char* settings : {"--guess core", "--guess sad", "--guess auto", "--schwarz 0",
                               "--guess core --damping 0.3 --diis-start 4 --level-shift 0.2 --max-iter 300"}) {
    const auto r = run(std::string("scf h2o --basis sto-3g --json --threads 1 ") + settings);
    ASSERT_EQ(r.code, 0) << settings << "\n" << r.out;
    const auto j = json_of(r.out);
    EXPECT_TRUE(j["converged"].get<bool>()) << settings;
    EXPECT_NEAR(j["e_hf"].get<double>(), e, 1e-9) << settings;
  }
  const auto slow = json_of(run("scf h2o --basis sto-3g --json --threads 1 --damping 0.3 --diis-start 4").out);
  EXPECT_GT(slow["iterations"].get<int>(), json_of(plain.out)["iterations"].get<int>());
  expect_input_error("scf h2o --guess huckel", "--guess");
  // An open shell's UHF from both guesses: which one gave the result, and where the other ended
  // (Fe, quintet, STO-3G: the core guess's solution 156 mEh below SAD's)
  const std::string fe = ::testing::TempDir() + "/nnvmc_fe_atom.yaml";
  std::ofstream(fe) << "units: bohr\nspin: 4\natoms: [[Fe, 0, 0, 0]]\n";
  const auto both = run("scf " + fe + " --uhf --basis sto-3g --threads 1");
  ASSERT_EQ(both.code, 0) << both.out;
  EXPECT_NE(both.out.find("guess      core Hamiltonian (the SAD guess converged to -1248.8857799"), std::string::npos)
      << both.out;
  const auto fe_json = json_of(run("scf " + fe + " --uhf --basis sto-3g --threads 1 --json --log-level error").out);
  EXPECT_EQ(fe_json["guess"], "core");
  EXPECT_NEAR(fe_json["e_other_guess"].get<double>() - fe_json["e_hf"].get<double>(), 0.1556, 1e-3);
  const auto sad_only = json_of(run("scf " + fe + " --uhf --basis sto-3g --threads 1 --json --guess sad").out);
  EXPECT_EQ(sad_only["guess"], "sad");
  EXPECT_FALSE(sad_only.contains("e_other_guess"));
  // settings that contradict each other, or a run that does not converge, name the flags to change
  // (they used to name scf.* keys that no config file has)
  expect_input_error("scf h2o --basis sto-3g --damping 1.5", "SCF: --damping must be in [0, 1)");
  expect_input_error("ccsd h2o --basis sto-3g --damping 1.5", "SCF: --damping must be in [0, 1)");  // (not "scf:" in ccsd)
  expect_input_error("scf h2o --basis sto-3g --damping 0.3", "set --diis-start to 3 or more");
  expect_input_error("scf h2o --basis sto-3g --lindep 0.1", "--lindep");
  expect_input_error("ccsd h2o --basis sto-3g --lindep 0", "--lindep");
  const auto stuck = run("scf h2o --basis sto-3g --max-iter 2");
  EXPECT_EQ(stuck.code, 1) << stuck.out;
  EXPECT_NE(stuck.out.find("raise --max-iter, or try --level-shift"), std::string::npos) << stuck.out;
  // The RHF inside ccsd takes the same settings, and its advice names ccsd's flags (it named
  // scf's, which ccsd refused: H2O with one hydrogen 5 Å out does not converge by default).
  const std::string far = write_config("nnvmc_far_h2o.xyz", "3\nfar\nO 0 0 0\nH 0 0.757 0.587\nH 0 -0.757 5.87\n");
  const auto refused = run("ccsd " + far + " --basis cc-pvdz");
  EXPECT_EQ(refused.code, 1) << refused.out;
  EXPECT_NE(refused.out.find("raise --scf-max-iter, or try --level-shift, or --damping with --diis-start 3 or later"),
            std::string::npos) << refused.out;
  const auto damped = run("ccsd " + far + " --basis cc-pvdz --damping 0.5 --diis-start 5 --max-iterations 2 "
                          "--allow-unconverged --json --log-level error");
  ASSERT_EQ(damped.code, 0) << damped.out;
  // a CCSD that does not converge says how far it got and what to change (it said only "did not converge")
  const auto short_cc = run("ccsd h2o --basis sto-3g --max-iterations 3");
  EXPECT_EQ(short_cc.code, 1) << short_cc.out;
  EXPECT_NE(short_cc.out.find("CCSD did not converge in 3 iterations (last |dE| = "), std::string::npos) << short_cc.out;
  EXPECT_NE(short_cc.out.find("raise --max-iterations, or give --allow-unconverged"), std::string::npos) << short_cc.out;
  // the convergence thresholds and the DIIS depth are the user's (a user audit: fixed in the code)
  const auto standard = json_of(run("ccsd h2o --basis sto-3g --json --log-level error").out);
  const auto loose = json_of(run("ccsd h2o --basis sto-3g --json --log-level error --energy-tolerance 1e-6 "
                                 "--residual-tolerance 1e-4").out);
  const auto jacobi = json_of(run("ccsd h2o --basis sto-3g --json --log-level error --diis-size 0").out);
  EXPECT_LT(loose["iterations"].get<int>(), standard["iterations"].get<int>());
  EXPECT_NEAR(loose["e_ccsd"].get<double>(), standard["e_ccsd"].get<double>(), 1e-5);
  EXPECT_GT(jacobi["iterations"].get<int>(), standard["iterations"].get<int>());
  EXPECT_NEAR(jacobi["e_ccsd"].get<double>(), standard["e_ccsd"].get<double>(), 1e-9);
  // --threads sets the integrals' and the tensors' threads (ccsd had none: it took every core)
  const auto one_thread = json_of(run("ccsd h2o --basis sto-3g --json --log-level error --threads 1").out);
  EXPECT_EQ(one_thread["tensor_threads"], 1);
  EXPECT_EQ(one_thread["integral_threads"], 1);
  EXPECT_NEAR(one_thread["e_ccsd"].get<double>(), standard["e_ccsd"].get<double>(), 1e-10);
  const auto one_thread_cd =
      json_of(run("ccsd h2o --basis sto-3g --json --log-level error --threads 1 --cholesky 1e-5").out);
  EXPECT_NEAR(one_thread_cd["e_ccsd"].get<double>(), standard["e_ccsd"].get<double>(), 1e-5);
  expect_input_error("ccsd h2o --basis sto-3g --threads -1", "--threads");
  expect_input_error("ccsd h2o --basis sto-3g --energy-tolerance 0", "--energy-tolerance");
  expect_input_error("ccsd h2o --basis sto-3g --diis-size -1", "--diis-size");
  expect_input_error("ccsd h2o --basis sto-3g --basis cc-pvdz", "--basis is given 2 times; it takes one value");
  // a threshold that costs tenths of a mEh or more is said to (it ran without a word)
  EXPECT_NE(run("ccsd h2o --basis sto-3g --cholesky 1e-3").out.find("--cholesky 0.001 is a loose threshold"),
            std::string::npos);
  EXPECT_EQ(run("ccsd h2o --basis sto-3g --cholesky 1e-5").out.find("loose threshold"), std::string::npos);
  // the other flags reach the RHF too: its own limit, and a guess and level shift that change
  // the path, not the energy
  EXPECT_NE(run("ccsd " + far + " --basis cc-pvdz --scf-max-iter 2").out.find("RHF did not converge in 2 iterations"),
            std::string::npos);
  const auto unshifted = json_of(run("ccsd h2o --basis sto-3g --json --log-level error").out);
  const auto shifted = json_of(run("ccsd h2o --basis sto-3g --json --log-level error --guess core --level-shift 0.2").out);
  EXPECT_NEAR(shifted["e_hf"].get<double>(), unshifted["e_hf"].get<double>(), 1e-9);
  EXPECT_NEAR(shifted["e_ccsd"].get<double>(), unshifted["e_ccsd"].get<double>(), 1e-8);
  const auto scf = json_of(run("scf " + far + " --basis cc-pvdz --damping 0.5 --diis-start 5 --json").out);
  EXPECT_NEAR(json_of(damped.out)["e_hf"].get<double>(), scf["e_hf"].get<double>(), 1e-8);
}

// A nearly linearly dependent basis (aug-cc-pVTZ on two protons 0.2 bohr apart) loses one
// combination to canonical orthogonalisation: said in the text, the log and the JSON (n_mo), not
// silently (a user audit: CCSD orbital counts differed from Psi4's without a word).
TEST(Cli, ScfSaysHowManyLinearlyDependentCombinationsItDrops) {
  const std::string mol = ::testing::TempDir() + "/nnvmc_h2_close.yaml";
  std::ofstream(mol) << "units: bohr\natoms: [[H, 0, 0, 0], [H, 0, 0, 0.2]]\n";
  const auto text = run("scf " + mol + " --basis aug-cc-pvtz --threads 1");
  ASSERT_EQ(text.code, 0) << text.out;
  EXPECT_NE(text.out.find("46 basis functions (45 orbitals: 1 linearly dependent combination dropped)"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("1 combination of its 46 functions, with overlap eigenvalues below 1e-07, dropped"),
            std::string::npos) << text.out;
  const auto j = json_of(run("scf " + mol + " --basis aug-cc-pvtz --threads 1 --json").out);
  EXPECT_EQ(j["n_basis"].get<int>(), 46);
  EXPECT_EQ(j["n_mo"].get<int>(), 45);
  const auto usual = run("scf h2 --basis aug-cc-pvtz --threads 1");
  EXPECT_EQ(usual.out.find("linearly dependent"), std::string::npos) << usual.out;
  EXPECT_EQ(json_of(run("scf h2 --basis aug-cc-pvtz --threads 1 --json").out)["n_mo"].get<int>(), 46);
}

// A stretched bond: UHF follows the instability of the RHF-like solution to the broken-symmetry
// one (Psi4 1.3.2, stability_analysis follow: −0.9990589141 Eh, <S²> 0.985), reported in the
// text and the JSON; --stability off keeps the saddle point, RHF's check warns, and RHF's follow
// (along RHF -> RHF instabilities only) keeps it too.
TEST(Cli, ScfUhfOfAStretchedBondFindsTheBrokenSymmetrySolution) {
  const std::string mol = ::testing::TempDir() + "/nnvmc_h2_5bohr.yaml";
  std::ofstream(mol) << "units: bohr\natoms: [[H, 0, 0, 0], [H, 0, 0, 5.0]]\n";
  const auto u = run("scf " + mol + " --basis cc-pvdz --uhf --json --threads 1");
  ASSERT_EQ(u.code, 0) << u.out;
  const auto j = json_of(u.out);
  EXPECT_NEAR(j["e_hf"].get<double>(), -0.9990589141, 1e-8);
  EXPECT_NEAR(j["s_squared"].get<double>(), 0.98544, 1e-4);
  EXPECT_EQ(j["stability_follows"].get<int>(), 1);
  EXPECT_NEAR(j["e_before_follow"].get<double>(), -0.8524243656, 1e-8);
  EXPECT_GT(j["stability_eigenvalue"].get<double>(), 0);
  const auto text = run("scf " + mol + " --basis cc-pvdz --uhf --threads 1");
  EXPECT_NE(text.out.find("<S^2>      0.98"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("followed 1 instability of the first solution (E -0.8524243656 Eh)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("(a minimum: stable)"), std::string::npos) << text.out;
  const auto off = json_of(run("scf " + mol + " --basis cc-pvdz --uhf --json --threads 1 --stability off").out);
  EXPECT_NEAR(off["e_hf"].get<double>(), -0.8524243656, 1e-8);
  EXPECT_FALSE(off.contains("stability_eigenvalue"));
  const auto rhf = run("scf " + mol + " --basis cc-pvdz --threads 1 --stability check");
  EXPECT_EQ(rhf.code, 0) << rhf.out;
  EXPECT_NE(rhf.out.find("a UHF solution is lower, not an RHF one (stretched bonds, diradicals; nnvmc scf --uhf finds it)"),
            std::string::npos)
      << rhf.out;
  EXPECT_NE(rhf.out.find("(unstable)"), std::string::npos) << rhf.out;
  // RHF follows only RHF -> RHF instabilities: this one's is RHF -> UHF, and it says so
  const auto rhf_follow = run("scf " + mol + " --basis cc-pvdz --threads 1 --stability follow");
  EXPECT_EQ(rhf_follow.code, 0) << rhf_follow.out;
  EXPECT_NE(rhf_follow.out.find("E_HF       -0.8524243656"), std::string::npos) << rhf_follow.out;
  EXPECT_NE(rhf_follow.out.find("a UHF solution is lower, not an RHF one"), std::string::npos) << rhf_follow.out;
  expect_input_error("scf " + mol + " --basis cc-pvdz --stability 2", "--stability must be auto, off, check or follow, got '2'");
  expect_input_error("ccsd " + mol + " --basis cc-pvdz --stability 2", "--stability must be auto, off, check or follow, got '2'");
  // ccsd's RHF check is in its report and its JSON, not only a log line
  const auto cc = run("ccsd " + mol + " --basis sto-3g --stability check --log-level error");
  EXPECT_NE(cc.out.find("RHF stability: lowest orbital-Hessian eigenvalue -0."), std::string::npos) << cc.out;
  EXPECT_NE(cc.out.find("RHF -> RHF 0.6"), std::string::npos) << cc.out;  // (the singlet rotations: stable)
  EXPECT_NE(cc.out.find("unstable towards a UHF solution, as at stretched bonds"), std::string::npos) << cc.out;
  EXPECT_LT(json_of(run("ccsd " + mol + " --basis sto-3g --stability check --json --log-level error").out)["stability_eigenvalue"]
                .get<double>(),
            -0.1);
  // a closed shell's <S^2> reads 0.000000, not -0.000000; a follow cut short by the iteration limit says so
  const auto closed = run("scf h2o --basis sto-3g --uhf --threads 1");
  EXPECT_NE(closed.out.find("<S^2>      0.000000"), std::string::npos) << closed.out;
  const auto cut = run("scf " + mol + " --basis cc-pvdz --uhf --threads 1 --max-iter 6");
  EXPECT_NE(cut.out.find("1 rad: did not converge in 6 iterations"), std::string::npos) << cut.out;
  EXPECT_NE(cut.out.find("0.25 rad: did not converge in 6 iterations"), std::string::npos) << cut.out;  // (each angle tried)
  EXPECT_NE(cut.out.find("raising the iteration limit may help"), std::string::npos) << cut.out;
  EXPECT_NE(text.out.find(" of them after following instabilities"), std::string::npos) << text.out;  // (the sum of both SCFs)
}

// `nnvmc scf --cholesky TAU`: J/K from Cholesky vectors, the energy within tau's reach of the
// exact-ERI one (H2O/cc-pVDZ: 8e-9 Eh at 1e-8), stated in the JSON.
TEST(Cli, ScfWithCholeskyJKAgreesWithExactIntegrals) {
  const auto exact = run("scf h2o --basis cc-pvdz --json --threads 1");
  const auto chol = run("scf h2o --basis cc-pvdz --json --threads 1 --cholesky 1e-8");
  ASSERT_EQ(exact.code, 0) << exact.out;
  ASSERT_EQ(chol.code, 0) << chol.out;
  EXPECT_EQ(json_of(chol.out)["cholesky_tau"].get<double>(), 1e-8);
  // the text says so too (it read like an exact-integral E_HF), and ccsd states tau in full
  EXPECT_NE(run("scf h2o --basis cc-pvdz --threads 1 --cholesky 1e-8").out.find("J/K from Cholesky vectors (tau 1e-08)"),
            std::string::npos);
  EXPECT_NE(run("ccsd h2o --basis sto-3g --cholesky 1.25e-5").out.find("Cholesky tau 1.25e-05"), std::string::npos);
  const auto cc = json_of(run("ccsd h2o --basis sto-3g --json").out);  // with the terms its text gives
  EXPECT_NEAR(cc["e_corr"].get<double>(), cc["e_ccsd"].get<double>() - cc["e_hf"].get<double>(), 1e-12);
  EXPECT_NEAR(cc["e_nuc"].get<double>(), json_of(exact.out)["e_nuc"].get<double>(), 1e-12);
  EXPECT_NEAR(json_of(chol.out)["e_hf"].get<double>(), json_of(exact.out)["e_hf"].get<double>(), 1e-7);
  expect_input_error("scf h2o --cholesky -1", "cholesky");
}

// `nnvmc scf --df`: density-fitted J/K with def2-universal-JKFIT (Psi4's df energy with the same
// functions, 32 µEh above the exact one for H2O/cc-pVDZ), said in the text and the JSON;
// --df-basis needs --df, and --df excludes --cholesky.
TEST(Cli, ScfWithDensityFittingStatesItsAuxiliaryBasis) {
  const auto df = run("scf h2o --basis cc-pvdz --json --threads 1 --df");
  ASSERT_EQ(df.code, 0) << df.out;
  const auto j = json_of(df.out);
  EXPECT_EQ(j["integrals"].get<std::string>(), "density_fitted");
  EXPECT_EQ(j["df_basis"].get<std::string>(), "def2-universal-jkfit");
  EXPECT_EQ(j["n_aux"].get<int>(), 113);
  EXPECT_NEAR(j["e_hf"].get<double>(), -76.02673318684172, 1e-8);
  EXPECT_NE(run("scf h2o --basis cc-pvdz --threads 1 --df").out.find(
                "J/K density-fitted (def2-universal-jkfit, 113 auxiliary functions)"),
            std::string::npos);
  EXPECT_EQ(json_of(run("scf h2o --basis sto-3g --json --threads 1").out)["integrals"].get<std::string>(), "exact");
  expect_input_error("scf h2o --df --cholesky 1e-6", "--df and --cholesky TAU > 0 exclude each other");
  EXPECT_EQ(run("scf h2o --basis sto-3g --threads 1 --df --cholesky 0").code, 0);  // (0: exact ERIs, no conflict)
  // an auxiliary basis given as a file: the shipped one's path gives the shipped one's energy
  const auto file = run("scf h2o --basis cc-pvdz --json --threads 1 --df --df-basis " + std::string(NNVMC_SOURCE_DIR) +
                        "/data/basis/fitting/def2-universal-jkfit.nw");
  ASSERT_EQ(file.code, 0) << file.out;
  EXPECT_NEAR(json_of(file.out)["e_hf"].get<double>(), j["e_hf"].get<double>(), 1e-12);
  expect_input_error("scf h2o --df-basis def2-universal-jkfit", "--df-basis requires --df");
  expect_input_error("scf h2o --df --df-basis nope", "auxiliary (fitting) basis, --df-basis: unknown basis 'nope'");
}

// `nnvmc ccsd --cholesky TAU` runs the RHF on the CCSD's Cholesky vectors and says so;
// `--exact-scf` keeps the exact-ERI RHF (the scf command's exact energy) and needs --cholesky.
TEST(Cli, CholeskyCcsdSharesItsVectorsWithTheRhfUnlessExactScfIsAsked) {
  const auto shared = run("ccsd h2o --basis sto-3g --cholesky 1e-6 --json");
  const auto exact = run("ccsd h2o --basis sto-3g --cholesky 1e-6 --exact-scf --json");
  const auto scf = run("scf h2o --basis sto-3g --json");
  ASSERT_EQ(shared.code, 0) << shared.out;
  ASSERT_EQ(exact.code, 0) << exact.out;
  ASSERT_EQ(scf.code, 0) << scf.out;
  EXPECT_EQ(json_of(shared.out)["scf_integrals"].get<std::string>(), "cholesky");
  EXPECT_EQ(json_of(exact.out)["scf_integrals"].get<std::string>(), "exact");
  EXPECT_NEAR(json_of(exact.out)["e_hf"].get<double>(), json_of(scf.out)["e_hf"].get<double>(), 1e-9);
  EXPECT_NEAR(json_of(shared.out)["e_hf"].get<double>(), json_of(scf.out)["e_hf"].get<double>(), 1e-5);
  const auto alone = run("ccsd h2o --basis sto-3g --exact-scf");
  EXPECT_EQ(alone.code, 2) << alone.out;
  EXPECT_NE(alone.out.find("--cholesky"), std::string::npos) << alone.out;
}

// `nnvmc ccsd --resident on|off|auto`: the run says where its tensors lived; on the CPU "on"
// charges them to the budget and gives the same energy; a bad value names the flag.
TEST(Cli, CcsdReportsResidencyAndRefusesAnUnknownValue) {
  const auto on = run("ccsd h2o --basis sto-3g --json --resident on");
  const auto off = run("ccsd h2o --basis sto-3g --json --resident off");
  ASSERT_EQ(on.code, 0) << on.out;
  ASSERT_EQ(off.code, 0) << off.out;
  EXPECT_TRUE(json_of(on.out)["resident"].get<bool>());
  EXPECT_FALSE(json_of(off.out)["resident"].get<bool>());
  EXPECT_NEAR(json_of(on.out)["e_ccsd"].get<double>(), json_of(off.out)["e_ccsd"].get<double>(), 1e-10);
  EXPECT_EQ(json_of(on.out)["seconds_iterations"].size(), json_of(on.out)["iterations"].get<std::size_t>());
  EXPECT_NE(on.out.find("ccsd iter"), std::string::npos) << on.out;  // per-iteration lines with --json too
  expect_input_error("ccsd h2o --basis sto-3g --resident maybe", "--resident");
  // --resident on that does not fit says so (it fell back without a word)
  const auto small = run("ccsd h2o --basis sto-3g --json --resident on --memory 100KiB");
  ASSERT_EQ(small.code, 0) << small.out;
  EXPECT_FALSE(json_of(small.out)["resident"].get<bool>());
  EXPECT_NE(small.out.find("--resident on, but the run is not resident"), std::string::npos) << small.out;
}

// --device cuda where there is no usable GPU (none, or a driver too old for the runtime) is a
// user error named after the flag, exit 2, before anything is computed; it used to reach the user
// as libtorch's CUDA runtime error at the first tensor (exit 1). On a machine with a GPU the
// run simply succeeds; an index past the device count is refused the same way.
TEST(Cli, CcsdOnACudaDeviceThatIsNotThereIsAnInputErrorNamingTheFlag) {
  const auto r = run("ccsd h2o --basis sto-3g --device cuda --memory 1GiB --json");
  if (r.code != 0) {
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_NE(r.out.find("nnvmc: error: --device: device 'cuda' requested but"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("frame #"), std::string::npos) << r.out;
  }
  const auto far = run("ccsd h2o --basis sto-3g --device cuda:63 --memory 1GiB --json");
  EXPECT_EQ(far.code, 2) << far.out;
  EXPECT_NE(far.out.find("--device: device 'cuda:63' requested but"), std::string::npos) << far.out;
}

// The text reports (what a user reads without --json) carry the same numbers as the JSON.
namespace {
double number_after(const std::string& out, const std::string& label) {
  const auto at = out.find(label);
  EXPECT_NE(at, std::string::npos) << label << " missing in\n" << out;
  return at == std::string::npos ? 0.0 : std::stod(out.substr(at + label.size()));
}
}  // namespace

TEST(Cli, TextReportsOfScfCcsdAndEvalShowTheJsonNumbers) {
  for (const std::string uhf : {"", " --uhf"}) {
    const auto text = run("scf h2o --basis sto-3g --threads 1" + uhf), json = run("scf h2o --basis sto-3g --threads 1 --json" + uhf);
    ASSERT_EQ(text.code, 0) << text.out;
    ASSERT_EQ(json.code, 0) << json.out;
    EXPECT_NEAR(number_after(text.out, "E_HF"), json_of(json.out)["e_hf"].get<double>(), 1e-9) << uhf;
    EXPECT_NE(text.out.find(uhf.empty() ? "ε (Eh)" : "ε_β (Eh)"), std::string::npos) << text.out;
  }
  // a small budget splits every term (--split c), and --explain prints the plans
  const auto text = run("ccsd h2o --basis sto-3g --split c --memory 200KiB --explain --log-level warn");
  const auto json = run("ccsd h2o --basis sto-3g --split c --memory 200KiB --json --log-level warn");
  ASSERT_EQ(text.code, 0) << text.out;
  ASSERT_EQ(json.code, 0) << json.out;
  EXPECT_NEAR(number_after(text.out, "E(CCSD)"), json_of(json.out)["e_ccsd"].get<double>(), 1e-9);
  EXPECT_NEAR(number_after(text.out, "E(HF)"), json_of(json.out)["e_hf"].get<double>(), 1e-9);
  EXPECT_NE(text.out.find("einsum "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("split c,"), std::string::npos) << text.out;
  EXPECT_EQ(json_of(json.out)["terms"]["ladder"]["split"], "c");
  // --explain gives each distinct plan of a term: the dressing's second contraction is the one
  // split here (only the first, unsplit one was shown, against "split c" in the table)
  const auto dressed = run("ccsd h2o --basis 6-31g --cholesky 1e-5 --no-cached-integrals --memory 100KiB --explain "
                           "--log-level warn");
  ASSERT_EQ(dressed.code, 0) << dressed.out;
  EXPECT_NE(dressed.out.find("dress: einsum Pp,Qq,pq->PQ"), std::string::npos) << dressed.out;
  EXPECT_NE(dressed.out.find("dress: einsum Pp,xpq,Qq->xPQ  extents P=13 Q=13 p=13 q=13 x=64\n"
                             "  budget 100.00 KiB, split c, 2 batch(es)"),
            std::string::npos)
      << dressed.out;
  // eval of a checkpoint, as text and as JSON
  const auto out = trained_lih("nnvmc_cli_text_eval");
  const auto et = run("eval " + out + "/checkpoint.h5 --steps 4 --seed 2 --log-level warn");
  const auto ej = run("eval " + out + "/checkpoint.h5 --steps 4 --seed 2 --json --log-level warn");
  ASSERT_EQ(et.code, 0) << et.out;
  ASSERT_EQ(ej.code, 0) << ej.out;
  EXPECT_NE(et.out.find(std::to_string(json_of(ej.out)["energy"].get<double>()).substr(0, 7)), std::string::npos)
      << et.out << "\n" << ej.out;
}

// The (T) step runs once: its terms are reported in all, below the per-iteration table.
TEST(Cli, CcsdTextReportGivesTheTriplesTermsInAllNotPerIteration) {
  const auto r = run("ccsd h2o --basis sto-3g --triples --log-level warn");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto block = r.out.find("(T), in all:");
  ASSERT_NE(block, std::string::npos) << r.out;
  for (const std::string term : {"\ntriples ", "\ntriples W ", "\ntriples energy "}) {
    const auto at = r.out.find(term);
    ASSERT_NE(at, std::string::npos) << term << r.out;
    EXPECT_GT(at, block) << term << " listed with the per-iteration terms\n" << r.out;
  }
  EXPECT_NE(r.out.find("\nladder "), std::string::npos) << r.out;
  EXPECT_LT(r.out.find("\nladder "), block) << r.out;
}

// model.type: hf with optim.iterations: 0 is a full run (no training): the checkpoint it writes
// evaluates to the Hartree–Fock energy of its basis.
TEST(Cli, TheHartreeFockAnsatzRunsWithoutTrainingAndItsCheckpointEvaluates) {
  const auto out = (fs::temp_directory_path() / "nnvmc_cli_hf").string();
  fs::remove_all(out);
  const auto cfg = write_config("nnvmc_hf.yaml",
                                "system: {molecule: he}\n"
                                "model: {type: hf, hf: {basis: sto-3g}}\n"
                                "sampler: {walkers: 32, steps_per_iteration: 5, burn_in: 20}\n"
                                "optim: {iterations: 0}\n"
                                "eval: {steps: 50, burn_in: 10}\n"
                                "run: {threads: 1, output: " + out + "}\n");
  const auto t = run("train " + cfg + " --log-level warn");
  ASSERT_EQ(t.code, 0) << t.out;
  ASSERT_TRUE(fs::exists(out + "/checkpoint.h5"));
  const auto e = run("eval " + out + "/checkpoint.h5 --steps 100 --seed 5 --json --log-level warn");
  ASSERT_EQ(e.code, 0) << e.out;
  const auto j = json_of(e.out);
  EXPECT_NEAR(j["energy"].get<double>(), -2.8077839575, 4 * j["energy_err"].get<double>() + 1e-9);  // He/STO-3G RHF
}

TEST(Cli, AnUnknownLogLevelIsRefusedInsteadOfSilencingTheLog) {
  expect_input_error("scf h2 --basis sto-3g --log-level verbose", "--log-level");
  const auto r = run("scf h2 --basis sto-3g --log-level debug");
  EXPECT_EQ(r.code, 0) << r.out;
}

// A checkpoint copied into another run's directory was resumed there: result.h5 then mixed
// the two runs' series (and config.yaml was rewritten). Each run carries a run id in its
// checkpoint and result.h5; a resume whose two disagree is refused before anything changes.
TEST(Cli, ACheckpointOfAnotherRunIsNotResumedIntoThisRunsResults) {
  const auto root = (fs::temp_directory_path() / "nnvmc_cli_foreign_checkpoint").string();
  fs::remove_all(root);
  const auto cfg = write_config("nnvmc_foreign.yaml", kTiny);
  for (const char* name : {"mine", "theirs"})
    ASSERT_EQ(run("train " + cfg + " run.output=" + root + "/" + name + " --log-level warn").code, 0);
  const auto id_of = [](const std::string& file) {
    return nnvmc::io::H5File(file, nnvmc::io::H5File::Mode::read).attr("run_id");
  };
  const std::string mine = root + "/mine";
  EXPECT_EQ(id_of(mine + "/checkpoint.h5"), id_of(mine + "/result.h5"));
  EXPECT_NE(id_of(mine + "/result.h5"), id_of(root + "/theirs/result.h5"));
  const auto resumed = run("train --resume " + mine + " optim.iterations=3 --log-level warn");  // its own: fine
  ASSERT_EQ(resumed.code, 0) << resumed.out;
  EXPECT_EQ(id_of(mine + "/checkpoint.h5"), id_of(mine + "/result.h5"));
  fs::copy_file(root + "/theirs/checkpoint.h5", mine + "/checkpoint.h5", fs::copy_options::overwrite_existing);
  const auto config_before = fs::last_write_time(mine + "/config.yaml");
  const auto rows_before = nnvmc::io::H5File(mine + "/result.h5", nnvmc::io::H5File::Mode::read).rows("train/energy");
  expect_input_error("train --resume " + mine + " optim.iterations=5", "belong to different runs");
  EXPECT_EQ(fs::last_write_time(mine + "/config.yaml"), config_before);
  EXPECT_EQ(nnvmc::io::H5File(mine + "/result.h5", nnvmc::io::H5File::Mode::read).rows("train/energy"), rows_before);
  // an HDF5 file that is no run's results (here a checkpoint) used to be taken over and written into
  const std::string theirs = root + "/theirs";
  fs::copy_file(theirs + "/checkpoint.h5", theirs + "/result.h5", fs::copy_options::overwrite_existing);
  const auto size_before = fs::file_size(theirs + "/result.h5");
  expect_input_error("train --resume " + theirs + " optim.iterations=5", "result.h5 there is not a run's results file");
  EXPECT_EQ(fs::file_size(theirs + "/result.h5"), size_before);
  fs::remove_all(root);
}

// A run directory copied elsewhere continues in the copy, and its config.yaml then names the
// copy (it kept naming the original, so `train CONFIG` from it wrote there); the original is
// untouched. An override that moves the run away from the copy is still refused.
TEST(Cli, ACopiedRunContinuesInTheCopyWhichItsConfigThenNames) {
  const auto root = (fs::temp_directory_path() / "nnvmc_cli_copied_run").string();
  fs::remove_all(root);
  const std::string original = root + "/original", copy = root + "/copy";
  const auto cfg = write_config("nnvmc_copied.yaml", kTiny);
  ASSERT_EQ(run("train " + cfg + " run.output=" + original + " --log-level warn").code, 0);
  fs::copy(original, copy, fs::copy_options::recursive);
  std::map<std::string, fs::file_time_type> before;
  for (const auto& e : fs::directory_iterator(original)) before[e.path().string()] = e.last_write_time();
  expect_input_error("train --resume " + copy + " run.output=" + original, "cannot be changed on resume");
  const auto r = run("train --resume " + copy + " optim.iterations=3");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("it continues in '" + copy + "'"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("changed settings"), std::string::npos) << r.out;
  for (const auto& e : fs::directory_iterator(original))
    EXPECT_EQ(e.last_write_time(), before[e.path().string()]) << e.path();
  EXPECT_EQ(nlohmann::json::parse(std::ifstream(copy + "/summary.json"))["iterations"], 3);
  EXPECT_EQ(YAML::LoadFile(copy + "/config.yaml")["run"]["output"].as<std::string>(), copy);
  EXPECT_EQ(YAML::LoadFile(original + "/config.yaml")["run"]["output"].as<std::string>(), original);
  // resumed again, it is where it was (no second notice), also from inside it as '.'
  const auto again = run("train --resume " + copy + " optim.iterations=4");
  ASSERT_EQ(again.code, 0) << again.out;
  EXPECT_EQ(again.out.find("it continues in"), std::string::npos) << again.out;
  const auto inside = run_shell("cd " + copy + " && " + NNVMC_EXE + " train --resume . optim.iterations=5");
  ASSERT_EQ(inside.code, 0) << inside.out;
  EXPECT_EQ(inside.out.find("it continues in"), std::string::npos) << inside.out;
  EXPECT_EQ(YAML::LoadFile(copy + "/config.yaml")["run"]["output"].as<std::string>(), copy);
  fs::remove_all(root);
}

// A run trained on a relative molecule file resumes from another directory, or after the file
// is gone, with the molecule its checkpoint holds, and ends where an uninterrupted run ends
// (found by a user audit: "system.molecule: mol/h2.yaml: no such molecule file").
TEST(Cli, ARunWhoseMoleculeFileIsOutOfReachResumesWithItsCheckpointsMolecule) {
  const auto root = (fs::temp_directory_path() / "nnvmc_cli_molecule_gone").string();
  fs::remove_all(root);
  fs::create_directories(root + "/mol");
  std::ofstream(root + "/mol/h2.yaml") << "units: bohr\natoms:\n  - [H, 0, 0, 0]\n  - [H, 0, 0, 1.4000000000000001]\n";
  const auto cfg = write_config("nnvmc_molecule_gone.yaml", kTiny + "run: {threads: 1}\n");
  const std::string exe = NNVMC_EXE;
  const auto train = [&](const std::string& out, int iterations) {
    return run_shell("cd " + root + " && " + exe + " train " + cfg + " system.molecule=mol/h2.yaml run.output=" + out +
                     " optim.iterations=" + std::to_string(iterations) + " --log-level warn");
  };
  ASSERT_EQ(train("straight", 4).code, 0);
  ASSERT_EQ(train("resumed", 2).code, 0);
  const auto elsewhere = run_shell("cd " + root + "/resumed && " + exe + " train --resume . optim.iterations=3");
  ASSERT_EQ(elsewhere.code, 0) << elsewhere.out;
  EXPECT_NE(elsewhere.out.find("mol/h2.yaml: no such molecule file: the run continues with the molecule(s) its "
                               "checkpoint holds, which config.yaml now states inline"),
            std::string::npos)
      << elsewhere.out;
  EXPECT_EQ(elsewhere.out.find("changed settings"), std::string::npos) << elsewhere.out;
  const YAML::Node system = YAML::LoadFile(root + "/resumed/config.yaml")["system"];
  ASSERT_TRUE(system["molecules"].IsSequence()) << YAML::Dump(system);
  EXPECT_EQ(system["molecules"][0]["name"].as<std::string>(), "h2");
  fs::remove_all(root + "/mol");  // the file gone: from its own directory too, and again with the inline molecule
  const auto gone = run_shell("cd " + root + " && " + exe + " train --resume resumed optim.iterations=4");
  ASSERT_EQ(gone.code, 0) << gone.out;
  EXPECT_EQ(gone.out.find("no such molecule file"), std::string::npos) << gone.out;
  const auto read = [&](const std::string& dir) {
    return nlohmann::json::parse(std::ifstream(root + "/" + dir + "/summary.json"));
  };
  EXPECT_EQ(read("resumed")["energy"].get<double>(), read("straight")["energy"].get<double>());
  // the molecule named again by an override (the file moved) is the user's answer, not the fallback
  fs::create_directories(root + "/moved");
  std::ofstream(root + "/moved/h2.yaml") << "units: bohr\natoms:\n  - [H, 0, 0, 0]\n  - [H, 0, 0, 1.4000000000000001]\n";
  const auto named = run_shell("cd " + root + " && " + exe +
                               " train --resume straight optim.iterations=5 system.molecule=moved/h2.yaml");
  ASSERT_EQ(named.code, 0) << named.out;
  EXPECT_EQ(named.out.find("its checkpoint holds"), std::string::npos) << named.out;
  // a molecule file changed since is said to be one (the message named only the trained molecule)
  std::ofstream(root + "/moved/h2.yaml") << "units: bohr\natoms:\n  - [H, 0, 0, 0]\n  - [H, 0, 0, 1.5]\n";
  const auto changed = run_shell("cd " + root + " && " + exe + " train --resume straight optim.iterations=6");
  EXPECT_EQ(changed.code, 2) << changed.out;
  EXPECT_NE(changed.out.find("now has other nuclei or electrons (an override, or a molecule file changed since)"),
            std::string::npos)
      << changed.out;
  // the same molecule under another name is refused: the results are kept by name (a user audit:
  // the renamed run split its result series in two)
  std::ofstream(root + "/moved/h2.yaml") << "units: bohr\natoms:\n  - [H, 0, 0, 0]\n  - [H, 0, 0, 1.4000000000000001]\n";
  const auto renamed = run_shell("cd " + root + " && " + exe + " train --resume straight optim.iterations=6 " +
                                 "'system.molecules=[{molecule: moved/h2.yaml, name: hh}]'");
  EXPECT_EQ(renamed.code, 2) << renamed.out;
  EXPECT_NE(renamed.out.find("--resume: the config's molecule 0 is named 'hh', the checkpoint's 'h2'; the run's "
                             "results are kept by molecule name, so names cannot change on resume"),
            std::string::npos)
      << renamed.out;
  fs::remove_all(root);
}

// `nnvmc train --resume DIR key=value`: the run continues from its checkpoint to the new
// iteration count and ends where an uninterrupted run of that length ends.
// HDF5 locks the files it opens: a result.h5 that another program has open (h5py in a
// notebook; here `flock -s`, the lock HDF5 takes for reading) cannot be appended to. A resume
// is refused naming that, and the file keeps its history (it was set aside as result.h5.damaged
// and the run went on in a new file whose earlier rows were NaN, exit 0).
TEST(Cli, AResumeWhileAnotherProgramHasResultH5OpenIsRefusedAndTheFileKept) {
  const auto [dir, cfg] = tiny_run("nnvmc_cli_result_open");
  ASSERT_EQ(run("train " + cfg).code, 0);
  const auto r = run_shell("flock -s " + dir + "/result.h5 " + std::string(NNVMC_EXE) + " train --resume " + dir +
                           " optim.iterations=4");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("result.h5: open in another program"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir + "/result.h5.damaged"));
  // a run directory in use by another nnvmc is refused before "resuming ..." is said
  const auto busy = run_shell("flock " + dir + "/.nnvmc.lock " + std::string(NNVMC_EXE) + " train --resume " + dir +
                              " optim.iterations=4");
  EXPECT_EQ(busy.code, 2) << busy.out;
  EXPECT_NE(busy.out.find("is in use by another nnvmc process"), std::string::npos) << busy.out;
  EXPECT_EQ(busy.out.find("resuming "), std::string::npos) << busy.out;
  const auto train = nlohmann::json::parse(std::ifstream(dir + "/summary.json"));
  EXPECT_EQ(train["iterations"], 2);  // the finished run as it was
  const auto again = run("train --resume " + dir + " optim.iterations=4");  // closed: it continues
  ASSERT_EQ(again.code, 0) << again.out;
  EXPECT_EQ(nlohmann::json::parse(std::ifstream(dir + "/summary.json"))["iterations"], 4);
  fs::remove_all(dir);
}

// A write refused by a file-size limit (prlimit --fsize) stops the run with a checkpoint, and the
// next resume keeps result.h5's history: HDF5 had allocated past the limit, left the file shorter
// than its recorded end and refused to open it, so the resume set it aside as result.h5.damaged
// and went on with NaN rows (a second such resume replaced that copy). The failed rows are NaN,
// never zeros (a full disk stored rows as 0.0 and trained on, exit 0).
TEST(Cli, AWriteRefusedByAFileSizeLimitKeepsResultH5sHistory) {
  const auto [dir, cfg] = tiny_run("nnvmc_cli_fsize_history");
  ASSERT_EQ(run("train " + cfg + " optim.iterations=300 eval.steps=0 --log-level warn").code, 0);
  const auto read = [&](const std::string& col) {
    const auto a = nnvmc::io::H5File(dir + "/result.h5", nnvmc::io::H5File::Mode::read).read(col);
    return std::vector<double>(a.as<double>(), a.as<double>() + a.numel());
  };
  const auto before = read("train/energy");
  // (120 KiB: room for a few hundred more rows: the failing write then lies past the limit, and leaves
  // the file shorter than its recorded end)
  const auto limit = fs::file_size(dir + "/result.h5") + 120 * 1024;
  const auto limited = run_shell("prlimit --fsize=" + std::to_string(limit) + " " + std::string(NNVMC_EXE) +
                                 " train --resume " + dir + " optim.iterations=2000");
  ASSERT_EQ(limited.code, 1) << limited.out;
  EXPECT_NE(limited.out.find("File too large"), std::string::npos) << limited.out;
  const auto resumed = run("train --resume " + dir + " optim.iterations=2000 --log-level warn");
  ASSERT_EQ(resumed.code, 0) << resumed.out;
  EXPECT_FALSE(fs::exists(dir + "/result.h5.damaged")) << resumed.out;
  EXPECT_NE(resumed.out.find("ended before its recorded end (a write that failed); extended to it"), std::string::npos)
      << resumed.out;
  const auto energy = read("train/energy"), seconds = read("train/seconds");
  ASSERT_EQ(energy.size(), 2000u);
  for (std::size_t i = 0; i < before.size(); ++i) EXPECT_EQ(energy[i], before[i]) << "row " << i;
  int nan = 0;
  for (std::size_t i = 0; i < energy.size(); ++i) {
    nan += std::isnan(energy[i]);
    EXPECT_NE(energy[i], 0.0) << "row " << i;
    EXPECT_NE(seconds[i], 0.0) << "row " << i;
  }
  EXPECT_LE(nan, 1) << resumed.out;  // the iteration whose write failed
  fs::remove_all(dir);
}

// A result.h5 cut short (a copy that stopped part-way, a crash of the file system) is set aside as
// result.h5.damaged on resume, and the run goes on in a new file every reader can open. Cut to a
// third, HDF5 opened it after the extension to its recorded end and listed no series; the resume
// wrote on into it, exit 0, and left a file that no reader (h5py, nnvmc) could open (a user audit).
// Cut near its end, the resume trained and then failed removing the old evaluation, exit 2, on
// every later resume too.
TEST(Cli, AResumeSetsATruncatedResultFileAsideAndWritesAReadableOne) {
  for (const double kept : {1.0 / 3, 0.97}) {
    const auto [dir, cfg] = tiny_run("nnvmc_cli_truncated_results");
    ASSERT_EQ(run("train " + cfg + " optim.iterations=40 --log-level warn").code, 0);
    const auto path = dir + "/result.h5";
    fs::resize_file(path, static_cast<std::uintmax_t>(static_cast<double>(fs::file_size(path)) * kept));
    const auto resumed = run("train --resume " + dir + " optim.iterations=42 --log-level warn");
    ASSERT_EQ(resumed.code, 0) << kept << ": " << resumed.out;
    // (cut near its end, the file may lose only what the resume rewrites: then it is read again)
    if (kept < 0.5) {
      EXPECT_TRUE(fs::exists(path + ".damaged")) << kept << ": " << resumed.out;
    }
    EXPECT_TRUE(fs::exists(dir + "/summary.json")) << kept;
    {
      const nnvmc::io::H5File results(path, nnvmc::io::H5File::Mode::read);
      EXPECT_NO_THROW(results.verify_readable()) << kept;
      EXPECT_EQ(results.rows("train/energy"), 42) << kept;  // (40 NaN rows where set aside) and the resume's two
      EXPECT_TRUE(results.exists("eval/energy")) << kept;
    }
    // and the next resume reads it
    const auto again = run("train --resume " + dir + " optim.iterations=43 --log-level warn");
    EXPECT_EQ(again.code, 0) << kept << ": " << again.out;
    EXPECT_FALSE(fs::exists(path + ".damaged.2")) << kept << ": " << again.out;
    fs::remove_all(dir);
  }
}

// A resume whose optim.minutes are spent trains nothing, as one whose iterations are done: it says
// so, and its changed settings are not recorded as part of the chain (a review: they were, and
// config.yaml was said to hold them)
TEST(Cli, AResumeWhoseMinutesAreSpentSaysItTrainsNothing) {
  const auto [dir, cfg] = tiny_run("nnvmc_cli_minutes_spent");
  ASSERT_EQ(run("train " + cfg + " optim.iterations=100000 optim.minutes=0.002 eval.steps=0 --log-level warn").code, 0);
  const auto r = run("train --resume " + dir + " optim.lr=0.002 eval.steps=2 --log-level warn");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("optim.minutes = 0.002, and the run has trained"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(with nothing to train they change nothing: config.yaml keeps the checkpoint's settings)"),
            std::string::npos)
      << r.out;
  EXPECT_TRUE(nlohmann::json::parse(std::ifstream(dir + "/summary.json"))["resumes_with_changes"].empty());
  fs::remove_all(dir);
}

// A final evaluation measured and then refused by result.h5 (a file-size limit; a full disk alike)
// is still said, in the error (a user audit: the energy was computed and then lost, stdout empty).
TEST(Cli, AFinalEvaluationThatCannotBeWrittenIsStillSaidInTheError) {
  const auto [dir, cfg] = tiny_run("nnvmc_cli_eval_unwritten");
  ASSERT_EQ(run("train " + cfg + " eval.steps=0 --log-level warn").code, 0);
  const auto limit = fs::file_size(dir + "/result.h5") + 8 * 1024;
  const auto r = run_shell("prlimit --fsize=" + std::to_string(limit) + " " + std::string(NNVMC_EXE) +
                           " train --resume " + dir + " eval.steps=3000 --log-level warn");
  ASSERT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("File too large; the final evaluation, not written: E = -"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" Eh; the trained state (iteration 2)"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir + "/summary.json"));
  fs::remove_all(dir);
  // a checkpoint that cannot be written says which one is kept (result.h5's failure said it, the
  // checkpoint's did not, a user audit)
  const auto [again, cfg_again] = tiny_run("nnvmc_cli_checkpoint_unwritten");
  // (wide enough that the checkpoint is larger than result.h5: the limit refuses the checkpoint alone;
  // result.h5's units attribute made its resume reach past the tiny model's limit first)
  ASSERT_EQ(run("train " + cfg_again + " eval.steps=0 'model.ferminet.hidden_dims=[[64, 16]]' --log-level warn").code, 0);
  const auto ckpt_limit = fs::file_size(again + "/checkpoint.h5") - 1000;
  const auto c = run_shell("prlimit --fsize=" + std::to_string(ckpt_limit) + " " + std::string(NNVMC_EXE) +
                           " train --resume " + again + " optim.iterations=4 eval.steps=0 --log-level warn");
  ASSERT_EQ(c.code, 1) << c.out;
  EXPECT_NE(c.out.find("the last checkpoint, of iteration 2, is kept in " + again + "/checkpoint.h5"), std::string::npos)
      << c.out;
  fs::remove_all(again);
}

// A resume that cannot write its first checkpoint (a file-size limit; a full disk alike) leaves
// the run's config.yaml, summary.json and final evaluation as they were: they describe the
// checkpoint still on disk (config.yaml already held the resume's settings, and the evaluation
// and its summary were gone, a user audit).
TEST(Cli, AResumeThatCannotWriteItsFirstCheckpointKeepsTheRunsEvaluationAndSettings) {
  const auto [dir, cfg] = tiny_run("nnvmc_cli_resume_unwritten");
  // (wide enough that the checkpoint is larger than result.h5: the limit refuses the checkpoint alone)
  ASSERT_EQ(run("train " + cfg + " 'model.ferminet.hidden_dims=[[64, 16]]' --log-level warn").code, 0);
  const auto eval_rows = [&] {
    const nnvmc::io::H5File results(dir + "/result.h5", nnvmc::io::H5File::Mode::read);
    return results.exists("eval/energy") ? results.rows("eval/energy") : 0;
  };
  const auto config = read_bytes(dir + "/config.yaml"), summary = read_bytes(dir + "/summary.json");
  ASSERT_EQ(eval_rows(), 4);
  const auto limit = fs::file_size(dir + "/checkpoint.h5") - 1000;
  const auto r = run_shell("prlimit --fsize=" + std::to_string(limit) + " " + std::string(NNVMC_EXE) +
                           " train --resume " + dir + " optim.iterations=4 optim.lr=0.002 --log-level warn");
  ASSERT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("the last checkpoint, of iteration 2, is kept in"), std::string::npos) << r.out;
  EXPECT_EQ(read_bytes(dir + "/config.yaml"), config);
  EXPECT_EQ(read_bytes(dir + "/summary.json"), summary);
  EXPECT_EQ(eval_rows(), 4);
  // and the resume, with room, goes on from that checkpoint with the new settings
  ASSERT_EQ(run("train --resume " + dir + " optim.iterations=4 optim.lr=0.002 --log-level warn").code, 0);
  EXPECT_NE(read_bytes(dir + "/config.yaml").find("lr: 0.002"), std::string::npos) << read_bytes(dir + "/config.yaml");
  EXPECT_EQ(nlohmann::json::parse(std::ifstream(dir + "/summary.json"))["iterations"], 4);
  EXPECT_EQ(eval_rows(), 4);
  fs::remove_all(dir);
}

// A --force start that cannot write its first checkpoint (here a file-size limit; a full disk
// alike) puts the run it was to replace back, and leaves none of its own files: it left *.previous
// files beside its own config.yaml and result.h5, and every later train or resume was refused.
TEST(Cli, AForceStartThatCannotWriteItsFirstCheckpointPutsThePreviousRunBack) {
  const auto [dir, cfg] = tiny_run("nnvmc_cli_force_fsize");
  ASSERT_EQ(run("train " + cfg + " --log-level warn").code, 0);
  const auto checkpoint = read_bytes(dir + "/checkpoint.h5"), results = read_bytes(dir + "/result.h5");
  const auto failed = run_shell("prlimit --fsize=12288 " + std::string(NNVMC_EXE) + " train " + cfg +
                                " --force optim.iterations=50");
  EXPECT_EQ(failed.code, 1) << failed.out;
  EXPECT_NE(failed.out.find("the run it was to replace (--force) is back in"), std::string::npos) << failed.out;
  EXPECT_EQ(read_bytes(dir + "/checkpoint.h5"), checkpoint);
  EXPECT_EQ(read_bytes(dir + "/result.h5"), results);
  for (const auto& e : fs::directory_iterator(dir))
    EXPECT_EQ(e.path().string().find(".previous"), std::string::npos) << e.path();
  EXPECT_EQ(run("train --resume " + dir + " optim.iterations=3 --log-level warn").code, 0);
  fs::remove_all(dir);
}

TEST(Cli, ResumeFromTheCommandLineEndsWhereAnUninterruptedRunEnds) {
  const auto straight = (fs::temp_directory_path() / "nnvmc_cli_straight").string();
  const auto resumed = (fs::temp_directory_path() / "nnvmc_cli_resumed").string();
  fs::remove_all(straight);
  fs::remove_all(resumed);
  const auto a = run("train " + write_config("nnvmc_straight.yaml", kTiny + "run: {threads: 1, output: " + straight + "}\n") +
                     " optim.iterations=4 --log-level warn");
  ASSERT_EQ(a.code, 0) << a.out;
  // The run's result is printed whatever the log level (it was an info log line, hidden here).
  EXPECT_NE(a.out.find("energy   -"), std::string::npos) << a.out;
  const auto b = run("train " + write_config("nnvmc_resumed.yaml", kTiny + "run: {threads: 1, output: " + resumed + "}\n") +
                     " --log-level warn");
  ASSERT_EQ(b.code, 0) << b.out;
  // a resumed run stays in its directory, however the override is spelled (run.output used to be
  // ignored, yet recorded in config.yaml)
  for (const char* moves : {"run.output=/tmp/elsewhere", "'run={output: /tmp/elsewhere}'", "run.overwrite=true"})
    expect_input_error("train --resume " + resumed + " " + moves, "cannot be changed on resume");
  expect_input_error("train --resume " + resumed + " run.name=../../etc", "'run.name' must be a plain name");
  const auto c = run("train --resume " + resumed + " optim.iterations=4 'run={threads: 1}' --log-level warn");
  ASSERT_EQ(c.code, 0) << c.out;
  const auto read = [](const std::string& dir) { return nlohmann::json::parse(std::ifstream(dir + "/summary.json")); };
  const auto js = read(straight), jr = read(resumed);
  EXPECT_EQ(jr["iterations"], 4);
  EXPECT_EQ(js["iterations"], 4);
  // the timings are the finishing process's, and say from which iteration (a user audit found a
  // resumed run's 1006 gradient calls beside 1500 iterations, unexplained)
  EXPECT_EQ(js["timings_from_iteration"], 0);
  EXPECT_EQ(jr["timings_from_iteration"], 2);
  EXPECT_EQ(jr["energy"].get<double>(), js["energy"].get<double>());
  EXPECT_EQ(c.out.find("changed settings"), std::string::npos) << c.out;  // an override to the same value
  // a budget is not a change to the chain (a new optim.minutes was warned about)
  const auto budget = run("train --resume " + resumed + " optim.minutes=30 --log-level warn");
  ASSERT_EQ(budget.code, 0) << budget.out;
  EXPECT_EQ(budget.out.find("changed settings"), std::string::npos) << budget.out;
  // nor is another optimizer's setting, named as without effect as a new run names it (it was
  // recorded as a change of the chain, a user audit)
  const auto other = run("train --resume " + resumed + " optim.kfac.damping=0.1 --log-level warn");
  ASSERT_EQ(other.code, 0) << other.out;
  EXPECT_NE(other.out.find("'optim.kfac.damping=0.1' has no effect with optim.type = adam"), std::string::npos)
      << other.out;
  EXPECT_EQ(other.out.find("changed settings"), std::string::npos) << other.out;
  // a resume that changes how the chain runs says so, and so does one with nothing left to train
  const auto d = run("train --resume " + resumed + " optim.lr=0.002 --log-level warn");
  ASSERT_EQ(d.code, 0) << d.out;
  EXPECT_NE(d.out.find("resuming with changed settings from iteration 4: optim.lr"), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("-> 0.002 (with nothing to train they change nothing: config.yaml keeps the checkpoint's"),
            std::string::npos)
      << d.out;
  EXPECT_NE(d.out.find("nothing to train"), std::string::npos) << d.out;
  // ... and summary.json keeps a change under which iterations ran (the result files described
  // only the last settings); this one trained none, so it is not part of the chain's history
  EXPECT_TRUE(read(resumed)["resumes_with_changes"].empty());
  // ... nor of config.yaml: the unchanged checkpoint was trained with the settings it holds (the new
  // ones were written, and every later resume warned that config.yaml differed from the checkpoint)
  std::ifstream kept(resumed + "/config.yaml");
  EXPECT_NE(std::string(std::istreambuf_iterator<char>(kept), {}).find("  lr: 0.003  #"), std::string::npos);
  const auto again = run("train --resume " + resumed + " --log-level warn");
  ASSERT_EQ(again.code, 0) << again.out;
  EXPECT_EQ(again.out.find("differs from the run's checkpoint"), std::string::npos) << again.out;
  const auto more = run("train --resume " + straight + " optim.lr=0.002 optim.iterations=5 --log-level warn");
  ASSERT_EQ(more.code, 0) << more.out;
  const auto jd = read(straight);
  ASSERT_EQ(jd["resumes_with_changes"].size(), 1u) << jd.dump();
  EXPECT_EQ(jd["resumes_with_changes"][0]["iteration"], 4);
  EXPECT_NE(jd["resumes_with_changes"][0]["changes"].get<std::string>().find("optim.lr"), std::string::npos) << jd.dump();
  EXPECT_TRUE(js["resumes_with_changes"].empty());
  EXPECT_EQ(js["stopped_by"], "optim.iterations");
  EXPECT_EQ(js["optimizer"], "adam");
  // how the run is executed (threads, checkpoint interval) is not a change of its settings
  // (nor are the progress interval and the walker chunks, which change no number: a user audit)
  const auto e = run("train --resume " + resumed +
                     " run.threads=2 run.checkpoint_every=3 optim.log_every=3 hamiltonian.chunk_walkers=3 "
                     "optim.sr.chunk_walkers=3 --log-level warn");
  ASSERT_EQ(e.code, 0) << e.out;
  EXPECT_EQ(e.out.find("changed settings"), std::string::npos) << e.out;
  // settings of the chains' start have no effect on resume, and config.yaml does not claim them
  // (found by a user audit: it recorded a step size the chains never used)
  const auto start = run("train --resume " + resumed + " sampler.step_size=2 sampler.burn_in=500 --log-level warn");
  ASSERT_EQ(start.code, 0) << start.out;
  EXPECT_NE(start.out.find("sampler.step_size has no effect on resume (the chains continue with the step size they "
                           "adapted); config.yaml keeps the run's value"),
            std::string::npos)
      << start.out;
  EXPECT_NE(start.out.find("sampler.burn_in has no effect on resume"), std::string::npos) << start.out;
  EXPECT_EQ(start.out.find("changed settings"), std::string::npos) << start.out;
  EXPECT_EQ(YAML::LoadFile(resumed + "/config.yaml")["sampler"]["burn_in"].as<int>(), 2);
  // config.yaml edited by hand: the resume says its edits are not what it runs (they were
  // discarded without a word)
  {
    YAML::Node edited = YAML::LoadFile(resumed + "/config.yaml");
    edited["optim"]["iterations"] = 150;
    std::ofstream(resumed + "/config.yaml") << edited;
  }
  const auto hand = run("train --resume " + resumed + " --log-level warn");
  ASSERT_EQ(hand.code, 0) << hand.out;
  EXPECT_NE(hand.out.find("config.yaml differs from the run's checkpoint (optim.iterations 4 -> 150): a resume takes its "
                          "settings from the checkpoint and key=value overrides"),
            std::string::npos)
      << hand.out;
  EXPECT_EQ(YAML::LoadFile(resumed + "/config.yaml")["optim"]["iterations"].as<int>(), 4);
  const auto quiet = run("train --resume " + resumed + " --log-level warn");
  EXPECT_EQ(quiet.out.find("differs from the run's checkpoint"), std::string::npos) << quiet.out;
  // the model and the run's start are fixed: refused before anything is written, whether the
  // parameters would load (a Jastrow option) or not (another size)
  for (const std::string fixed : {"model.ferminet.determinants=1", "model.type=psiformer", "pretrain.steps=5",
                                   "model.init_from=/tmp/x.h5", "run.seed=977", "sampler.walkers=16"})
    expect_input_error("train --resume " + resumed + " optim.iterations=6 " + fixed, "cannot change on resume");
  const auto read_iterations = [&] { return read(resumed)["iterations"].get<int>(); };
  EXPECT_EQ(read_iterations(), 4);
  // another optimizer takes its own learning rate, delay and determinant balance unless they are given
  const auto resume_logs = [&](const std::string& overrides, const std::string& line) {
    const auto r = run("train --resume " + resumed + " " + overrides + " --log-level info");
    EXPECT_EQ(r.code, 0) << overrides << "\n" << r.out;
    if (!line.empty()) {
      EXPECT_NE(r.out.find(line), std::string::npos) << overrides << "\n" << r.out;
    }
    return r.out;
  };
  resume_logs("optim.iterations=5 optim.type=spring",
              "optim.type adam -> spring with optim.lr = 0.1 (the new type's default), optim.lr_delay = 1000 (the new "
              "type's default); adam's state (its moment estimates) is not carried over");
  const std::string to_adam = resume_logs(
      "optim.iterations=6 optim.type=adam optim.lr=0.002",
      "optim.type spring -> adam with optim.lr = 0.002 (given), optim.lr_delay = 1000 (the new type's default)");
  // (the state named is the one the old optimizer kept; the note named every optimizer's, a user audit)
  EXPECT_NE(to_adam.find("; spring's state (its previous step) is not carried over"), std::string::npos) << to_adam;
  // (the determinant balance, which acts on an orbformer only, is not a change of this ferminet's settings)
  EXPECT_EQ(to_adam.find("determinant_balance 0 -> 0.001"), std::string::npos) << to_adam;
  {
    std::ifstream adam_recorded(resumed + "/config.yaml");
    const std::string adam_yaml((std::istreambuf_iterator<char>(adam_recorded)), {});
    EXPECT_NE(adam_yaml.find("lr: 0.002"), std::string::npos) << adam_yaml;
  }
  // ... and its learning-rate delay (kfac: 10000); a resume to kfac used to fail validating
  // adam's determinant balance under kfac
  resume_logs("optim.iterations=7 optim.type=kfac",
              "optim.type adam -> kfac with optim.lr = 0.05 (the new type's default), optim.lr_delay = 10000 (the new "
              "type's default)");
  // the type given again, in a mapping: nothing is reset; a value given with a new type is kept
  const std::string same = resume_logs("optim.iterations=8 'optim={type: kfac}'", "");
  EXPECT_EQ(same.find("resume: optim.type"), std::string::npos) << same;
  resume_logs("optim.iterations=9 'optim={type: spring, lr_delay: 500}'",
              "optim.type kfac -> spring with optim.lr = 0.1 (the new type's default), optim.lr_delay = 500 (given); "
              "kfac's state (its curvature statistics) is not carried over");
  std::ifstream recorded(resumed + "/config.yaml");
  const std::string yaml((std::istreambuf_iterator<char>(recorded)), {});
  EXPECT_NE(yaml.find("type: spring"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("lr_delay: 500"), std::string::npos) << yaml;
}

// `nnvmc eval --walkers N` with N other than the run's: the checkpoint's walkers are repeated
// (more) or cut (fewer) as the starting configurations.
TEST(Cli, EvalWithMoreOrFewerWalkersThanTheRunStartsFromItsWalkers) {
  const auto out = trained_lih("nnvmc_cli_eval_walkers");  // 8 walkers
  for (const int w : {20, 3, 1}) {  // (one walker: an evaluation, not a training; it was refused once)
    const auto r = run("eval " + out + "/checkpoint.h5 --steps 3 --walkers " + std::to_string(w) + " --json --log-level warn");
    ASSERT_EQ(r.code, 0) << r.out;
    const auto j = json_of(r.out);
    EXPECT_EQ(j["walkers"], w);
    EXPECT_TRUE(std::isfinite(j["energy"].get<double>()));
    // repeated walkers get a fresh walkers' burn-in, so that the copies decorrelate (with the
    // default 50 the error bar was 1.4-1.6x too small); fewer keep eval.burn_in
    EXPECT_EQ(j["burn_in"].get<int>(), w > 8 ? 500 : 50) << w;
  }
  const auto given_run = run("eval " + out + "/checkpoint.h5 --steps 3 --walkers 20 --json eval.burn_in=7");
  const auto given = json_of(given_run.out);
  EXPECT_EQ(given["burn_in"].get<int>(), 7);
  // a short burn-in given is not said to decorrelate the copies; the warning says they are not
  EXPECT_EQ(given_run.out.find("so the copies decorrelate"), std::string::npos) << given_run.out;
  EXPECT_NE(given_run.out.find("with the burn-in given, 7 steps"), std::string::npos) << given_run.out;
  EXPECT_NE(given_run.out.find("after eval.burn_in = 7 steps (500 by default for them) those copies may not yet be "
                               "independent chains"),
            std::string::npos)
      << given_run.out;
  EXPECT_EQ(given["seed"].get<int>(), 0);
  // ... and the result is not counted reliable: the walkers' spread counts every copy as one
  // chain (4096 copies of 256 after 0 steps gave a bar 4x too small, marked reliable: a user audit)
  EXPECT_FALSE(given["error_reliable"].get<bool>()) << given_run.out;
  EXPECT_TRUE(given["copies_not_apart"].get<bool>());
  EXPECT_EQ(given["walkers_copied_from"].get<int>(), 8);
  const auto text = run("eval " + out + "/checkpoint.h5 --steps 3 --walkers 20 eval.burn_in=7");
  EXPECT_NE(text.out.find("(UNRELIABLE: see below)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("the 20 walkers started as repeated copies of the checkpoint's 8, and after a burn-in of 7 "
                          "MH steps (500 by default for copies)"),
            std::string::npos) << text.out;
  const auto apart = json_of(run("eval " + out + "/checkpoint.h5 --steps 3 --walkers 20 --json --log-level warn").out);
  EXPECT_FALSE(apart["copies_not_apart"].get<bool>());
  EXPECT_EQ(apart["walkers_copied_from"].get<int>(), 8);
  EXPECT_TRUE(apart["walkers_copied_from"].is_number());
  EXPECT_TRUE(json_of(run("eval " + out + "/checkpoint.h5 --steps 3 --json --log-level warn").out)["walkers_copied_from"].is_null());
}

// Values that used to fail late (in libtorch, after the output was prepared) are refused before
// anything is written, and a --force start that still fails keeps the run it would replace
// (as *.previous) until it has written its own first checkpoint.
TEST(Cli, AForcedStartThatFailsKeepsThePreviousRunAndBadValuesFailFirst) {
  const auto out = (fs::temp_directory_path() / "nnvmc_cli_force_keep").string();
  fs::remove_all(out);
  const auto cfg = write_config("nnvmc_force_keep.yaml", kTiny + "run: {threads: 1, output: " + out + "}\n");
  ASSERT_EQ(run("train " + cfg + " --log-level warn").code, 0);
  const auto good = fs::file_size(out + "/checkpoint.h5");
  for (const auto& [bad, key] : std::vector<std::pair<std::string, std::string>>{
           {"pretrain.steps=2 pretrain.lr=-1", "pretrain.lr"},
           {"optim.beta1=1", "optim.beta1"},
           {"run.threads=100000", "run.threads"},
           {"hamiltonian.laplacian=hutchinson hamiltonian.hutchinson.probes=100000000", "probes"},
           {"system.molecule=", "no value"}}) {
    expect_input_error("train " + cfg + " --force " + bad, key);
    EXPECT_EQ(fs::file_size(out + "/checkpoint.h5"), good) << bad;  // refused before the output was touched
  }
  // found only while running (the walkers' working memory, measured when the sampler starts;
  // the forward Laplacian's is measured before anything is written): the previous run, kept
  // aside until the first checkpoint, is put back (it used to stay as *.previous, to be renamed
  // by hand), and the failed start's files go
  const auto summary_before = fs::last_write_time(out + "/summary.json");
  expect_input_error("train " + cfg + " --force run.memory_budget=1KiB hamiltonian.laplacian=jvp", "one walker");
  EXPECT_EQ(fs::file_size(out + "/checkpoint.h5"), good);
  EXPECT_EQ(fs::last_write_time(out + "/summary.json"), summary_before);
  for (const char* f : {"checkpoint.h5", "summary.json", "config.yaml", "result.h5"})
    EXPECT_FALSE(fs::exists(out + "/" + f + ".previous")) << f;
  const auto resumed = run("train --resume " + out + " optim.iterations=3 --log-level warn");  // (it is whole)
  ASSERT_EQ(resumed.code, 0) << resumed.out;
  // A start killed outright before its first checkpoint cannot put the run back: *.previous stay.
  // The run kept aside is still a run: a plain new start is refused (it used to delete it at its
  // first checkpoint) and --resume says where it is; a --force start retires it at its first checkpoint
  for (const char* f : {"checkpoint.h5", "checkpoint.h5.1", "summary.json", "config.yaml", "result.h5"})
    if (fs::exists(out + "/" + f)) fs::rename(out + "/" + f, out + "/" + f + ".previous");  // (as --force sets them aside)
  expect_input_error("train " + cfg, "*.previous");
  expect_input_error("train --resume " + out, "*.previous");
  EXPECT_TRUE(fs::exists(out + "/checkpoint.h5.previous"));
  const auto again = run("train " + cfg + " --force --log-level warn");
  ASSERT_EQ(again.code, 0) << again.out;
  EXPECT_TRUE(fs::exists(out + "/checkpoint.h5"));
  EXPECT_FALSE(fs::exists(out + "/checkpoint.h5.previous"));
  EXPECT_FALSE(fs::exists(out + "/summary.json.previous"));
}

// A new run refused once it has started (here by the per-sample gradients' memory, measured in
// its first iteration) takes back what it made: its files, the lock file and the directories it
// created; a directory that was there before stays, empty as it was.
TEST(Cli, ANewRunRefusedInItsFirstStepLeavesTheFileSystemAsItFoundIt) {
  const auto top = (fs::temp_directory_path() / "nnvmc_cli_refused_new").string();
  fs::remove_all(top);
  const auto cfg = write_config("nnvmc_refused_new.yaml", kTiny + "run: {threads: 1}\n");
  const std::string refused = " optim.type=sr run.memory_budget=20KB";
  expect_input_error("train " + cfg + " run.output=" + top + "/a/b" + refused, "per-sample gradients");
  EXPECT_FALSE(fs::exists(top));
  fs::create_directories(top);
  expect_input_error("train " + cfg + " run.output=" + top + refused, "per-sample gradients");
  ASSERT_TRUE(fs::is_directory(top));
  EXPECT_TRUE(fs::is_empty(top));  // (it kept .nnvmc.lock)
  fs::remove_all(top);
}

// A pretraining that diverges stops at once, naming pretrain.lr (it went on in NaN, and training
// then failed ten times before refusing to checkpoint: a user audit); the start is taken back.
TEST(Cli, ADivergedPretrainingStopsNamingItsLearningRate) {
  const auto [dir, cfg] = tiny_run("nnvmc_cli_pretrain_nan");
  const auto r = run("train " + cfg + " pretrain.steps=5 pretrain.lr=1e300");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("HF pretraining diverged: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("lower pretrain.lr (now 1e+300)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("refusing to checkpoint"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir));
}

// Output into a pipe whose reader has gone (`| head`) is lost, not the run (SIGPIPE killed it with
// no checkpoint), and a closed terminal (SIGHUP) stops training as SIGTERM does, checkpointed
// (it killed the run): a user audit.
TEST(Cli, AClosedPipeOrTerminalDoesNotLoseTheRun) {
  const auto [piped, cfg] = tiny_run("nnvmc_cli_closed_pipe");
  const auto head = run_shell("bash -c '" + std::string(NNVMC_EXE) + " train " + cfg +
                              " optim.iterations=30 optim.log_every=1 2>&1 | head -n 2 > /dev/null; "
                              "echo status=${PIPESTATUS[0]}'");
  // (not killed: 141; the result it could not print to the closed pipe makes the exit code 1)
  EXPECT_NE(head.out.find("status=1"), std::string::npos) << head.out;
  EXPECT_TRUE(fs::exists(piped + "/summary.json"));
  EXPECT_TRUE(fs::exists(piped + "/checkpoint.h5"));
  const auto [hung, cfg2] = tiny_run("nnvmc_cli_hangup");
  const std::string log = hung + "_hup.log";
  const auto stopped = run_shell("bash -c '" + std::string(NNVMC_EXE) + " train " + cfg2 +
                                 " optim.iterations=100000000 optim.log_every=1 > " + log +
                                 " 2>&1 & pid=$!; for i in $(seq 600); do grep -q \"it  *3/\" " + log +
                                 " && break; sleep 0.1; done; kill -HUP $pid; wait $pid; echo rc=$?; cat " + log + "'");
  EXPECT_NE(stopped.out.find("rc=1"), std::string::npos) << stopped.out;
  EXPECT_NE(stopped.out.find("interrupted; resume with: nnvmc train --resume"), std::string::npos) << stopped.out;
  EXPECT_TRUE(fs::exists(hung + "/checkpoint.h5"));
  fs::remove_all(piped);
  fs::remove_all(hung);
  fs::remove(log);
}

// A latest checkpoint damaged on disk loses one checkpoint interval, not the run: the one before
// it is kept (checkpoint.h5.1), and --resume continues from it to the uninterrupted run's result
// (a truncated checkpoint was the end of the run: a user audit); eval of the run uses it too.
TEST(Cli, ADamagedLatestCheckpointResumesFromTheOneBeforeIt) {
  const auto [straight, cfg] = tiny_run("nnvmc_cli_damaged_latest_a");
  ASSERT_EQ(run("train " + cfg + " optim.iterations=6 run.checkpoint_every=1").code, 0);
  const auto [dir, cfg2] = tiny_run("nnvmc_cli_damaged_latest_b");
  ASSERT_EQ(run("train " + cfg2 + " optim.iterations=4 run.checkpoint_every=1").code, 0);
  ASSERT_TRUE(fs::exists(dir + "/checkpoint.h5.1"));
  fs::resize_file(dir + "/checkpoint.h5", 3000);
  const auto healthy = run("eval " + straight + " --steps 2 --log-level error");  // (says which wavefunction)
  EXPECT_NE(healthy.out.find("checkpoint " + straight + "/checkpoint.h5 (iteration 6)\n"), std::string::npos) << healthy.out;
  EXPECT_EQ(json_of(run("eval " + straight + " --steps 2 --json --log-level error").out)["checkpoint_iteration"], 6);
  const auto e = run("eval " + dir + " --steps 2");
  EXPECT_EQ(e.code, 0) << e.out;
  EXPECT_NE(e.out.find("the checkpoint before it, " + dir + "/checkpoint.h5.1 of iteration 3, is used"),
            std::string::npos)
      << e.out;
  // (on stdout too: with --log-level error the warning is not there)
  const auto quiet = run("eval " + dir + " --steps 2 --log-level error");
  EXPECT_NE(quiet.out.find("checkpoint " + dir + "/checkpoint.h5.1 (iteration 3): the latest, checkpoint.h5, could not "
                           "be read"),
            std::string::npos)
      << quiet.out;
  // and a fine-tuning from the run (it was refused, exit 2, a user audit)
  const auto [tuned, cfg3] = tiny_run("nnvmc_cli_damaged_latest_tuned");
  const auto f = run("train " + cfg3 + " model.init_from=" + dir + " optim.iterations=1");
  EXPECT_EQ(f.code, 0) << f.out;
  EXPECT_NE(f.out.find("'model.init_from': " + dir + "/checkpoint.h5: cannot open HDF5 file"), std::string::npos)
      << f.out;
  EXPECT_NE(f.out.find("checkpoint.h5.1 of iteration 3, is used"), std::string::npos) << f.out;
  fs::remove_all(tuned);
  const auto r = run("train --resume " + dir + " optim.iterations=6");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("--resume " + dir + ": " + dir + "/checkpoint.h5: cannot open HDF5 file"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("checkpoint.h5.1 of iteration 3, is used"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the damaged checkpoint is kept as " + dir + "/checkpoint.h5.damaged"), std::string::npos)
      << r.out;
  EXPECT_TRUE(fs::exists(dir + "/checkpoint.h5.damaged"));
  EXPECT_EQ(nlohmann::json::parse(std::ifstream(dir + "/summary.json"))["energy"],
            nlohmann::json::parse(std::ifstream(straight + "/summary.json"))["energy"]);
  // the older checkpoint alone is still a run: resumed by renaming it, never replaced by a new start
  // (a new start deleted it: a review)
  fs::remove(dir + "/checkpoint.h5");
  ASSERT_TRUE(fs::exists(dir + "/checkpoint.h5.1"));
  expect_input_error("train --resume " + dir, "checkpoint.h5.1, is there: rename it to checkpoint.h5");
  expect_input_error("train " + cfg2, "already holds a run (checkpoint.h5.1)");
  // --force sets the older checkpoint aside with the rest of the run
  ASSERT_EQ(run("train " + cfg2 + " --force optim.iterations=1").code, 0);
  EXPECT_FALSE(fs::exists(dir + "/checkpoint.h5.1.previous"));
  EXPECT_FALSE(fs::exists(dir + "/checkpoint.h5.1"));  // (the new run's one checkpoint has none before it)
  fs::remove_all(straight);
  fs::remove_all(dir);
}

// A directory holding the user's own config.yaml or result.h5 (not written by a run) is refused:
// a run in it replaced them, and a start that failed before its first checkpoint deleted them,
// the config the user ran among them (a user audit). What a run writes is marked as its own, so
// a start killed before its first checkpoint is still replaced by the next one.
TEST(Cli, ARunNeverReplacesOrRemovesTheUsersOwnFilesNamedAsARunsFiles) {
  const auto dir = (fs::temp_directory_path() / "nnvmc_cli_users_files").string();
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string mine = "# my project's settings\n" + kTiny + "run: {threads: 1, output: .}\n";
  std::ofstream(dir + "/config.yaml") << mine;
  const auto r = run_shell("cd " + dir + " && " + NNVMC_EXE + " train config.yaml pretrain.lr=1e300");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("holds config.yaml that no nnvmc run wrote"), std::string::npos) << r.out;
  std::ifstream in(dir + "/config.yaml");
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(in)), {}), mine);
  EXPECT_FALSE(fs::exists(dir + "/result.h5"));
  fs::remove(dir + "/config.yaml");
  std::ofstream(dir + "/result.h5") << "my data\n";
  const auto cfg = write_config("nnvmc_users_files.yaml", kTiny + "run: {threads: 1}\n");
  expect_input_error("train " + cfg + " run.output=" + dir, "holds result.h5 that no nnvmc run wrote");
  EXPECT_EQ(fs::file_size(dir + "/result.h5"), 8u);
  // a run's own files: config.yaml starts with the mark, and a new start replaces an unfinished one's
  fs::remove_all(dir);
  ASSERT_EQ(run("train " + cfg + " run.output=" + dir).code, 0);
  std::ifstream written(dir + "/config.yaml");
  std::string first;
  std::getline(written, first);
  EXPECT_EQ(first, nnvmc::io::kRunConfigHeader);
  fs::remove(dir + "/checkpoint.h5");
  fs::remove(dir + "/summary.json");  // (as a start killed before its first checkpoint leaves it)
  EXPECT_EQ(run("train " + cfg + " run.output=" + dir).code, 0);
  fs::remove_all(dir);
}

// A resume refused by what its first iteration measures (here the per-sample gradients' memory
// under SR) used to have rewritten config.yaml, deleted summary.json and cut the final
// evaluation out of result.h5 already: the run's files are now changed at its first write.
TEST(Cli, AResumeRefusedInItsFirstIterationLeavesTheRunsFilesAsTheyWere) {
  const auto out = (fs::temp_directory_path() / "nnvmc_cli_refused_resume").string();
  fs::remove_all(out);
  const auto cfg = write_config("nnvmc_refused_resume.yaml", kTiny + "run: {threads: 1, output: " + out + "}\n");
  ASSERT_EQ(run("train " + cfg + " --log-level warn").code, 0);
  const auto contents = [&] { return nnvmc::test::file_bytes(out); };
  const auto before = contents();
  ASSERT_EQ(before.count("summary.json"), 1u);
  expect_input_error("train --resume " + out + " optim.iterations=4 optim.type=sr run.memory_budget=8KiB", "is too small for the sr step");
  EXPECT_TRUE(contents() == before);
  const auto r = run("train --resume " + out + " optim.iterations=4 optim.type=sr --log-level warn");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(std::ifstream(out + "/summary.json"))["iterations"], 4);
  EXPECT_NE(contents().at("config.yaml").find("type: sr"), std::string::npos);
  fs::remove_all(out);
}

// A path std::filesystem cannot follow (a symbolic link to itself) is named with the reason,
// exit 2; it read "filesystem error: status: Too many levels of symbolic links [loop]", exit 1.
TEST(Cli, APathThatCannotBeFollowedIsNamedWithTheReason) {
  const auto loop = (fs::temp_directory_path() / "nnvmc_cli_link_loop").string();
  fs::remove(loop);
  fs::create_symlink(loop, loop);
  expect_input_error("eval " + loop, "'" + loop + "': Too many levels of symbolic links");
  fs::remove(loop);
}

TEST(Cli, NumericOptionsOutsideTheirMeaningfulRangeAreRefused) {
  for (const auto& [args, key] : std::vector<std::pair<std::string, std::string>>{
           {"scf h2 --basis sto-3g --schwarz nan", "--schwarz"},
           {"scf h2 --basis sto-3g --schwarz 1e10", "--schwarz"},
           {"scf h2 --basis sto-3g --level-shift nan", "--level-shift"},
           {"scf h2 --basis sto-3g --threads -1", "--threads"},
           {"ccsd h2 --basis sto-3g --cholesky 1e10", "--cholesky"},
           {"ccsd h2 --basis sto-3g --cholesky nan", "--cholesky"},
           {"ccsd h2 --basis sto-3g --cholesky -1", "--cholesky"}}) {
    const auto r = run(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.out;
    EXPECT_NE(r.out.find(key), std::string::npos) << args << "\n" << r.out;
  }
  const auto out = trained_lih("nnvmc_cli_eval_ranges");
  for (const std::string bad : {"--steps 0", "--steps -1", "--walkers -5", "--seed -1", "--seed 1.5",
                                 "--seed 18446744073709551616"}) {
    const auto r = run("eval " + out + "/checkpoint.h5 " + bad);
    EXPECT_EQ(r.code, 2) << bad << "\n" << r.out;
  }
  // --seed takes what run.seed takes, 64-bit unsigned (it stopped at 2^63 - 1)
  const auto top = run("eval " + out + "/checkpoint.h5 --steps 1 --seed 18446744073709551615 --log-level warn");
  EXPECT_EQ(top.code, 0) << top.out;
}

TEST(Cli, DeviceNamesOutputsThatAreFilesAndOpenShellCcsdAreClearErrors) {
  expect_input_error("ccsd h2 --basis sto-3g --device cuda:abc", "--device");
  expect_input_error("ccsd h2 --basis sto-3g --device tpu", "--device");
  expect_input_error("ccsd h2 --basis sto-3g --split foo", "--split");
  expect_input_error("ccsd h2 --basis sto-3g --backend cudnn", "--backend");
  // --exact-scf needs Cholesky vectors to leave out of the RHF; with --cholesky 0 it did nothing
  expect_input_error("ccsd h2 --basis sto-3g --cholesky 0 --exact-scf", "--exact-scf");
  const auto cfg = write_config("nnvmc_bad_device.yaml", kTiny);
  expect_input_error("train " + cfg + " run.device=cudax", "run.device");
  expect_input_error("ccsd h --basis sto-3g", "closed-shell");
  const auto file = write_config("nnvmc_compare_output_file", "not a directory\n");
  const auto spec = write_config("nnvmc_compare_output_file.yaml",
                                 "ansatze: [{type: ferminet}]\nmolecules: [h]\niterations: 1\noutput: " + file + "\n");
  expect_input_error("compare " + spec + " --no-plots", "not a directory");
}

TEST(Cli, CommandLineErrorsCarryTheErrorPrefixAndReadableBounds) {
  // CLI11's own messages: now "nnvmc: error: ..." like every other error, and its numeric checks
  // no longer print DBL_MAX with 300 digits.
  for (const char* args : {"eval /nonexistent --steps 0", "ccsd h2 --max-iterations -3", "train --no-such-flag",
                           "compare x.yaml --max-cells -1", "scf h2 --diis-start -3",
                           "eval /nonexistent --seed 99999999999999999999"}) {
    const auto r = run(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.out;
    EXPECT_NE(r.out.find("nnvmc: error: "), std::string::npos) << args << "\n" << r.out;
    EXPECT_EQ(r.out.find("1797693134862315"), std::string::npos) << args << "\n" << r.out;
  }
  expect_input_error("eval /nonexistent --steps 0", "must be at least 1");
  // A bad config named twice in a run config and an extra document: errors naming the line.
  const auto dup = write_config("nnvmc_dup_key.yaml", kTiny + "optim: {lr: 0.1}\n");
  expect_input_error("train " + dup, "given twice");
  // ... and on the command line, as the README says (the last one used to win silently)
  expect_input_error("train " + write_config("nnvmc_dup_override.yaml", kTiny) + " optim.lr=1 optim.lr=2",
                     "override 'optim.lr' given twice");
  const auto profile_cfg = write_config("nnvmc_profile_mols.yaml", kTiny);
  expect_input_error("profile " + profile_cfg + " --molecules ,", "names no molecule");
  expect_input_error("profile " + profile_cfg + " --molecules ''", "names no molecule");
  expect_input_error("profile " + profile_cfg + " --output ''", "--output: is empty");
  expect_input_error("profile " + profile_cfg + " --molecules he,,h2", "has an empty entry between commas");
  expect_input_error("profile " + profile_cfg + " --molecules h,nosuchmol --no-roofline --no-plots", "nosuchmol");
}

TEST(Cli, CublasBackendWithoutAGpuIsAnInputError) {
  // Without a CUDA GPU (or a CUDA build) the staged cuBLAS backend is a user error (exit 2,
  // naming the backend), not a CUDA failure (exit 1); with one, it runs.
  const auto r = run("ccsd h2 --basis sto-3g --backend cublas");
  if (r.code != 0) {
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_NE(r.out.find("backend 'cublas'"), std::string::npos) << r.out;
  }
}

TEST(Cli, ProfilePrintsNoProfilerLibraryNoiseAndTakesInlineMolecules) {
  // libkineto's own start/stop lines (USDT, STAGE) and its "gpuGetDeviceCount failed" on a
  // machine without a GPU were printed between nnvmc's lines.
  const auto cfg = write_config("nnvmc_profile_quiet.yaml",
                                "model: {type: ferminet, ferminet: {hidden_dims: [[4, 2]], determinants: 1}}\n"
                                "sampler: {walkers: 8, steps_per_iteration: 1, burn_in: 1}\n"
                                "run: {threads: 1}\n");
  const auto out = (fs::temp_directory_path() / "nnvmc_profile_quiet").string();
  // (with an inline atom list among the molecules: its commas are not list separators)
  const auto r = run("profile " + cfg + " --molecules 'h, [[H, 0, 0, 0], [H, 0, 0, 1.4]]' --iterations 1 --warmup 1 "
                     "--profile-iterations 1 --no-roofline --no-plots --output " + out + " optim.iterations=50");
  EXPECT_EQ(r.code, 0) << r.out;
  // a key profile sets itself is named, not ignored silently
  EXPECT_NE(r.out.find("'optim.iterations=50' has no effect (use --warmup, --iterations"), std::string::npos) << r.out;
  for (const char* noise : {"USDT:", "STAGE:", "gpuGetDeviceCount"})
    EXPECT_EQ(r.out.find(noise), std::string::npos) << noise << "\n" << r.out;
  const auto j = nlohmann::json::parse(std::ifstream(out + "/profile.json"));
  ASSERT_EQ(j["molecules"].size(), 2u);
  EXPECT_EQ(j["molecules"][1]["n_electrons"], 2);
  fs::remove_all(out);
}

// profile's result goes to stdout, so --log-level warn still shows it (it printed nothing);
// what was not measured reads so: no operator table of zeros for --profile-iterations 0, a
// null roofline for --no-roofline; the memory table gives what each stage held from before
// (SPRING's per-walker gradients, which "allocated within the stage" left out).
TEST(Cli, ProfilePrintsItsResultOnStdoutAndMarksWhatItDidNotMeasure) {
  const auto cfg = write_config("nnvmc_profile_stdout.yaml",
                                "model: {type: ferminet, ferminet: {hidden_dims: [[4, 2]], determinants: 1}}\n"
                                "sampler: {walkers: 8, steps_per_iteration: 1, burn_in: 1}\n"
                                "optim: {type: spring}\n"
                                "run: {threads: 1}\n");
  const auto out = (fs::temp_directory_path() / "nnvmc_profile_stdout").string();
  fs::remove_all(out);
  const auto r = run("--log-level warn profile " + cfg + " --molecules he --iterations 1 --warmup 1 "
                     "--profile-iterations 0 --no-roofline --no-plots --output " + out);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("he       N=2   "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("of it in stages; of the stages' time: sampling "), std::string::npos) << r.out;
  {  // the stages' percentages are shares of the stages' time: they add up (a user audit read 79 %)
    const auto from = r.out.find("stages' time:");
    const std::string line = r.out.substr(from, r.out.find('\n', from) - from);
    const std::regex percent(" ([0-9]+)%");
    double sum = 0;
    for (auto it = std::sregex_iterator(line.begin(), line.end(), percent); it != std::sregex_iterator(); ++it)
      sum += std::stod((*it)[1]);
    EXPECT_NEAR(sum, 100.0, 3.0) << line;
  }
  EXPECT_NE(r.out.find("report: " + out + "/report.md"), std::string::npos) << r.out;
  std::ifstream md(out + "/report.md");
  const std::string report((std::istreambuf_iterator<char>(md)), std::istreambuf_iterator<char>());
  EXPECT_NE(report.find("not profiled (--profile-iterations 0)"), std::string::npos) << report;
  EXPECT_NE(report.find("(+ "), std::string::npos) << report;
  const auto j = nlohmann::json::parse(std::ifstream(out + "/profile.json"));
  EXPECT_TRUE(j["roofline"].is_null());
  const auto& grad = j["molecules"][0]["stages"]["optimizer"];
  EXPECT_GT(grad["held_bytes"].get<double>(), 0);
  fs::remove_all(out);
}

// A profile that fails on a later molecule, or is stopped by Ctrl-C, removes the scratch runs it
// made and keeps what was there; a new profile's report does not stand beside an old one's plots
// (found by a user audit: runs/h2 was left after an error, and old PNGs after a re-run).
TEST(Cli, AProfileThatFailsOrIsInterruptedLeavesWhatWasThereAndNothingElse) {
  const auto cfg = write_config("nnvmc_profile_fails.yaml",
                                "model: {type: ferminet, ferminet: {hidden_dims: [[4, 2]], determinants: 1}}\n"
                                "sampler: {walkers: 8, steps_per_iteration: 1, burn_in: 1}\n"
                                "run: {threads: 1}\n");
  const auto out = (fs::temp_directory_path() / "nnvmc_profile_fails").string();
  fs::remove_all(out);
  const std::string flags = " --iterations 1 --warmup 1 --profile-iterations 1 --no-roofline --no-plots --output " + out;
  const auto failed = run("profile " + cfg + " --molecules h,c4h4" + flags + " run.memory_budget=60KiB");
  EXPECT_EQ(failed.code, 2) << failed.out;
  EXPECT_NE(failed.out.find("profile h:"), std::string::npos) << failed.out;  // the first molecule ran
  EXPECT_FALSE(fs::exists(out)) << failed.out;
  fs::create_directories(out + "/runs/mine");
  // a directory's own files are not replaced (a user audit: its report.md was, exit 0)
  std::ofstream(out + "/report.md") << "my notes";
  expect_input_error("profile " + cfg + " --molecules h" + flags,
                     "holds report.md, not an earlier profile's (it has no profile.json)");
  EXPECT_FALSE(fs::exists(out + "/runs/h"));
  fs::remove(out + "/report.md");
  std::ofstream(out + "/profile.json") << "{}";  // an earlier profile's
  std::ofstream(out + "/roofline.png") << "an old plot";
  const auto stopped = run_shell("bash -c '" + std::string(NNVMC_EXE) + " profile " + cfg + " --molecules h --iterations "
                                 "1000000 --warmup 1 --profile-iterations 1 --no-roofline --no-plots --output " + out +
                                 " & pid=$!; for i in $(seq 300); do [ -d " + out + "/runs/h ] && break; sleep 0.1; done; "
                                 "sleep 1; kill -INT $pid; wait $pid; echo rc=$?'");
  EXPECT_NE(stopped.out.find("rc=1"), std::string::npos) << stopped.out;
  EXPECT_NE(stopped.out.find("profile: interrupted (no report written: profile.json and report.md are as they were"),
            std::string::npos)
      << stopped.out;
  EXPECT_FALSE(fs::exists(out + "/runs/h")) << stopped.out;
  EXPECT_TRUE(fs::exists(out + "/runs/mine"));
  // killed outright, its scratch run is still marked as such: the next profile replaces it (it
  // was refused as "not a profile's scratch run" for good, a user audit) ...
  const auto killed = run_shell("bash -c '" + std::string(NNVMC_EXE) + " profile " + cfg + " --molecules h --iterations "
                                "1000000 --warmup 1 --profile-iterations 1 --no-roofline --no-plots --output " + out +
                                " & pid=$!; for i in $(seq 300); do [ -f " + out + "/runs/h/result.h5 ] && break; sleep 0.1; "
                                "done; kill -KILL $pid; wait $pid; echo rc=$?'");
  EXPECT_NE(killed.out.find("rc=137"), std::string::npos) << killed.out;
  EXPECT_TRUE(fs::exists(out + "/runs/h/profile_scratch.txt")) << killed.out;
  {  // ... and a profile running into the --output is named as one (not as a run to remove by hand)
    const nnvmc::io::DirectoryLock running(out, "test");
    const auto refused = run("profile " + cfg + " --molecules h" + flags);
    EXPECT_EQ(refused.code, 2) << refused.out;
    EXPECT_EQ(refused.out.find("not a profile's scratch run"), std::string::npos) << refused.out;
    EXPECT_TRUE(fs::exists(out + "/runs/h")) << refused.out;
  }
  const auto again = run("profile " + cfg + " --molecules h" + flags);
  ASSERT_EQ(again.code, 0) << again.out;
  EXPECT_FALSE(fs::exists(out + "/roofline.png")) << "an old plot beside a report without one";
  EXPECT_TRUE(fs::exists(out + "/report.md"));
  {  // one timed iteration is warned about in the report and profile.json, not only on stdout
    EXPECT_NE(again.out.find("warning: only 1 timed iteration per molecule"), std::string::npos) << again.out;
    std::ifstream report_in(out + "/report.md");
    const std::string report((std::istreambuf_iterator<char>(report_in)), {});
    EXPECT_NE(report.find("**Warning:** only 1 timed iteration per molecule"), std::string::npos) << report;
    const auto j = nlohmann::json::parse(std::ifstream(out + "/profile.json"));
    EXPECT_NE(j["warnings"][0].get<std::string>().find("only 1 timed iteration"), std::string::npos);
    // the process's resident peak beside the tensors' (a user audit sized jobs from the tensors)
    EXPECT_GT(j["process_peak_bytes"].get<std::int64_t>(), 10 << 20);
    EXPECT_NE(report.find("Tensors only: the process as a whole peaked at "), std::string::npos) << report;
  }
  // another molecule's profile removes the scratch run of the last one, and nothing of the user's
  ASSERT_EQ(run("profile " + cfg + " --molecules he" + flags).code, 0);
  EXPECT_TRUE(fs::exists(out + "/runs/he"));
  EXPECT_FALSE(fs::exists(out + "/runs/h"));
  EXPECT_TRUE(fs::exists(out + "/runs/mine"));
  {  // ... but not one in use (a scratch run continued with train --resume keeps its mark at first: a review)
    const nnvmc::io::DirectoryLock in_use(out + "/runs/he", "test");
    ASSERT_EQ(run("profile " + cfg + " --molecules h" + flags).code, 0);
    EXPECT_TRUE(fs::exists(out + "/runs/he"));
  }
  ASSERT_EQ(run("profile " + cfg + " --molecules h" + flags).code, 0);
  EXPECT_FALSE(fs::exists(out + "/runs/he"));
  ASSERT_EQ(run("profile " + cfg + " --molecules h" + flags).code, 0);  // its own scratch run is replaced
  // a scratch run the user continues is the user's: the next profile refuses it (it was replaced)
  ASSERT_EQ(run("train --resume " + out + "/runs/h optim.iterations=5 eval.steps=2").code, 0);
  EXPECT_FALSE(fs::exists(out + "/runs/h/profile_scratch.txt"));
  EXPECT_EQ(run("profile " + cfg + " --molecules h" + flags).code, 2);
  EXPECT_TRUE(fs::exists(out + "/runs/h/summary.json"));
  // a training run started over a scratch run (--force) is the user's: the next profile refuses it
  ASSERT_EQ(run("train " + write_config("nnvmc_profile_users_run.yaml", kTiny) + " --force run.output=" + out +
                "/runs/h").code, 0);
  EXPECT_FALSE(fs::exists(out + "/runs/h/profile_scratch.txt"));
  EXPECT_EQ(run("profile " + cfg + " --molecules h" + flags).code, 2);
  // a user's training run where a scratch run would go is refused, not replaced
  fs::remove_all(out + "/runs/h");
  ASSERT_EQ(run("train " + write_config("nnvmc_profile_users_run.yaml", kTiny) + " run.output=" + out + "/runs/h").code, 0);
  const auto users = run("profile " + cfg + " --molecules h" + flags);
  EXPECT_EQ(users.code, 2) << users.out;
  EXPECT_NE(users.out.find("runs/h is not a profile's scratch run (profile_scratch.txt)"), std::string::npos) << users.out;
  EXPECT_TRUE(fs::exists(out + "/runs/h/summary.json"));
  // also one trained without pretraining, evaluation or intermediate checkpoints, as scratch
  // runs are (the audit: such a run was taken for scratch and replaced, exit 0)
  fs::remove_all(out + "/runs/h");
  ASSERT_EQ(run("train " + write_config("nnvmc_profile_users_run.yaml", kTiny) + " run.output=" + out +
                "/runs/h pretrain.steps=0 eval.steps=0 run.checkpoint_every=0").code, 0);
  const auto bare = run("profile " + cfg + " --molecules h" + flags);
  EXPECT_EQ(bare.code, 2) << bare.out;
  EXPECT_TRUE(fs::exists(out + "/runs/h/checkpoint.h5"));
  fs::remove_all(out);
}

// Under an address-space limit (ulimit -v; a cgroup limit is read the same way) an allocation
// that fails (here chunks sized for a run.memory_budget the limit does not leave; before the
// walkers' gradient pass was budgeted, 2 M walkers under 'auto' did it) is an "out of memory"
// error with advice and exit code 1: no crash, no kill.
TEST(Cli, AnAllocationRefusedByTheMemoryLimitIsAnOutOfMemoryErrorWithAdvice) {
  const auto out = (fs::temp_directory_path() / "nnvmc_cli_oom").string();
  const auto cfg = write_config("nnvmc_cli_oom.yaml", kTiny + "run: {threads: 1, output: " + out + ", overwrite: true}\n");
  const auto r = run_shell("sh -c 'ulimit -v 3000000 && exec " + std::string(NNVMC_EXE) + " train " + cfg +
                           " sampler.walkers=2000000 run.memory_budget=2GiB'");
  const std::string& text = r.out;
  ASSERT_TRUE(r.exited) << text;  // not killed by a signal
  EXPECT_EQ(r.code, 1) << text;
  EXPECT_NE(text.find("nnvmc: error: out of memory: "), std::string::npos) << text;
  EXPECT_EQ(text.find("frame #"), std::string::npos) << text;  // libtorch's message without its C++ backtrace
  EXPECT_NE(text.find("use fewer sampler.walkers"), std::string::npos) << text;
  EXPECT_NE(text.find("(run.memory_budget = 2.00 GiB)"), std::string::npos) << text;  // the chunks' budget, logged
  fs::remove_all(out);
}

// The advice names what the command that ran can change: a ccsd has no sampler.walkers (it
// was told to use fewer). H2O/cc-pVQZ's CCSD cannot hold its Cholesky vectors and amplitudes
// under a 1.6 GB address-space limit (about 0.5 GB past what the libraries map).
TEST(Cli, AnOutOfMemoryErrorAdvisesWhatTheCommandThatRanCanChange) {
  const auto r = run_shell("sh -c 'ulimit -v 1600000 && OMP_NUM_THREADS=1 exec " + std::string(NNVMC_EXE) +
                           " ccsd h2o --basis cc-pvqz --cholesky 1e-5'");
  ASSERT_TRUE(r.exited) << r.out;
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("nnvmc: error: out of memory: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--frozen-core"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("sampler.walkers"), std::string::npos) << r.out;
}

// Conventional integrals are refused before the SCF when the host cannot hold the AO integrals
// and their MO transform at once (2 × 8·n⁴ bytes: 2.6 GiB for H2O/cc-pVQZ, 115 functions);
// they ended in std::bad_alloc, or the OOM killer, after it.
TEST(Cli, ConventionalIntegralsTheHostCannotHoldAreRefusedAdvisingCholesky) {
  const auto r = run_shell("sh -c 'ulimit -v 2000000 && exec " + std::string(NNVMC_EXE) + " ccsd h2o --basis cc-pvqz'");
  ASSERT_TRUE(r.exited) << r.out;
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("conventional integrals for 115 basis functions need about 3.91 GiB (three times the AO "
                       "integrals, while they are transformed), more than 90 % of the "),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("(limited by this process's address-space limit (ulimit -v)); use Cholesky-decomposed integrals "
                       "(--cholesky 1e-5)"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("E(HF)"), std::string::npos) << r.out;  // refused before the SCF
  // (found by a user audit: counting two AO tensors, N2/aug-cc-pVTZ passed the check under a
  // 3 GB limit and ran out of memory after the SCF; it peaks at about three)
  // (2.67 GiB: the process holds about 1.2 GiB of address space before the check, so three AO
  // tensors, 1.60 GiB, do not fit 90 % of what is left, and two, 1.07 GiB, would, by about
  // 0.3 GiB either way)
  const auto n2 = run_shell("sh -c 'ulimit -v 2800000 && exec " + std::string(NNVMC_EXE) + " ccsd n2 --basis aug-cc-pvtz'");
  ASSERT_TRUE(n2.exited) << n2.out;
  EXPECT_EQ(n2.code, 2) << n2.out;
  EXPECT_NE(n2.out.find("conventional integrals for 92 basis functions need about"), std::string::npos) << n2.out;
  // Without cached blocks each iteration dresses the ~n⁴ vvvv block beside the MO integrals
  // (measured 4.1–4.4 AO tensors above the SCF; counting three, N2/aug-cc-pVTZ passed the check
  // under limits it then exceeded). Under 3.5 GiB: five AO tensors, 2.67 GiB, do not fit 90 % of
  // the ~2.3 GiB left; three, 1.60 GiB, would.
  const auto dressed = run_shell("sh -c 'ulimit -v 3700000 && exec " + std::string(NNVMC_EXE) +
                                 " ccsd n2 --basis aug-cc-pvtz --no-cached-integrals'");
  ASSERT_TRUE(dressed.exited) << dressed.out;
  EXPECT_EQ(dressed.code, 2) << dressed.out;
  EXPECT_NE(dressed.out.find("conventional integrals for 92 basis functions need about 2.67 GiB (five times the AO "
                             "integrals, with --no-cached-integrals)"),
            std::string::npos)
      << dressed.out;
  EXPECT_EQ(dressed.out.find("E(HF)"), std::string::npos) << dressed.out;
}

// An SCF whose list of screened ERI shell quartets alone would not fit what the process may
// allocate is refused with advice (exit 2); it ended in std::bad_alloc, or the OOM killer.
TEST(Cli, AnScfWhoseIntegralListCannotFitIsRefusedAdvisingCholesky) {
  std::string chain = "atoms:\n";  // H400 in STO-3G: about 10 M quartets, 0.7 GB
  for (int i = 0; i < 400; ++i) chain += "  - [H, 0, 0, " + std::to_string(1.4 * i) + "]\n";
  const auto file = write_config("nnvmc_cli_h400.yaml", chain);
  const auto r = run_shell("sh -c 'ulimit -v 1800000 && exec " + std::string(NNVMC_EXE) + " scf " + file +
                           " --basis sto-3g --max-iter 1 --threads 2'");
  ASSERT_TRUE(r.exited) << r.out;
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("ERI quartets (of shells, or of generally contracted shells together) of this molecule and basis pass the Schwarz screening"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("scf --cholesky 1e-6"), std::string::npos) << r.out;
  // density-fitted: n(n+1)/2 pairs x 7200 auxiliary functions, 4.6 GB, refused before any is computed
  const auto df = run_shell("sh -c 'ulimit -v 1800000 && exec " + std::string(NNVMC_EXE) + " scf " + file +
                            " --basis sto-3g --max-iter 1 --threads 2 --df'");
  ASSERT_TRUE(df.exited) << df.out;
  EXPECT_EQ(df.code, 2) << df.out;
  EXPECT_NE(df.out.find("the density-fitted integrals of this molecule take 4.62 GB (80200 pairs x 7200 auxiliary"),
            std::string::npos) << df.out;
}

// A model too large for the memory this process may use is refused before it is trained, with
// exit code 2, an error naming model.<type>, and no run directory: one whose parameters cannot
// be built (stopped by the allocation cap at the limit, not by the kernel's OOM killer), and one
// whose parameters fit but whose gradient and optimizer state would not. (ulimit -v stands in
// for the machine's memory; host_memory reads both the same way.)
TEST(Cli, AModelTooLargeForThisMachineIsRefusedNamingItsKeysBeforeAnythingIsWritten) {
  const auto out = (fs::temp_directory_path() / "nnvmc_cli_big_model").string();
  fs::remove_all(out);
  const auto cfg = write_config("nnvmc_cli_big_model.yaml",
                                "system: {molecule: he}\n"
                                "model: {type: psiformer, psiformer: {head_dim: 256, layers: 4, determinants: 4}}\n"
                                "sampler: {walkers: 8, steps_per_iteration: 2, burn_in: 2}\n"
                                "optim: {iterations: 2}\n"
                                "pretrain: {steps: 0}\n"
                                "run: {threads: 1, output: " + out + "}\n");
  const auto train = [&](const std::string& sizes) {
    return run_shell("sh -c 'ulimit -v 4000000 && exec " + std::string(NNVMC_EXE) + " train " + cfg + " " + sizes + "'");
  };
  // 400 M parameters: 1.6 GB as built in float32, 3.2 GB more in float64
  auto r = train("model.psiformer.heads=16 model.psiformer.mlp_hidden_dims=[4096]");
  ASSERT_TRUE(r.exited) << r.out;
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("'model.psiformer': this model is too large for this machine: building its parameters would "
                       "take more than "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ulimit -v"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(out));
  // 100 M parameters (0.8 GB in float64) build; training with Adam would take 15 × that more
  // (gradient, two moments, and copies of parameters and moments to undo a step and to checkpoint)
  r = train("model.psiformer.heads=8 model.psiformer.mlp_hidden_dims=[2048] optim.type=adam");
  ASSERT_TRUE(r.exited) << r.out;
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("'model.psiformer': this model is too large to train here: its 100755490 parameters take "
                       "768.70 MiB, and training them with optim.type = adam needs about 11.26 GiB more"),
            std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(out));
}

// Walkers whose own state (positions, proposals, saved copies: about 8 × the positions) cannot fit
// the process are refused naming sampler.walkers before anything is written; 10⁸ He walkers were
// killed by the kernel (24 GB) after their positions had passed the budget check.
TEST(Cli, WalkersWhoseStateCannotFitTheProcessAreRefusedBeforeAnythingIsWritten) {
  const auto out = (fs::temp_directory_path() / "nnvmc_cli_many_walkers").string();
  fs::remove_all(out);
  const auto cfg = write_config("nnvmc_cli_many_walkers.yaml", kTiny + "run: {threads: 1, output: " + out + "}\n");
  const auto r = run_shell("sh -c 'ulimit -v 4000000 && exec " + std::string(NNVMC_EXE) + " train " + cfg +
                           " sampler.walkers=20000000'");
  ASSERT_TRUE(r.exited) << r.out;
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("'sampler.walkers': 20000000 walkers hold about 9.54 GiB"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("use fewer walkers"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(out));
}

// A result.h5 that cannot grow (here a file-size limit, as a full disk would) stops training with
// a WriteError (exit 1, no kill by SIGXFSZ, no crash in HDF5's exit handler) after writing the
// checkpoint; the resumed run sets the damaged file aside and its series keep one row per
// iteration, NaN where nothing could be written.
TEST(Cli, AResultFileThatCannotGrowStopsTrainingCheckpointedAndTheResumedSeriesKeepTheirRows) {
  const auto out = (fs::temp_directory_path() / "nnvmc_cli_fsize").string();
  fs::remove_all(out);
  const auto cfg = write_config("nnvmc_cli_fsize.yaml",
                                "system: {molecule: he}\n"
                                "model: {ferminet: {hidden_dims: [[4, 2]], determinants: 1}}\n"
                                "sampler: {walkers: 8, steps_per_iteration: 2, burn_in: 2}\n"
                                "optim: {iterations: 6}\n"
                                "pretrain: {steps: 0}\n"
                                "eval: {steps: 4, burn_in: 2}\n"
                                "run: {threads: 1, checkpoint_every: 1000, output: " + out + "}\n");
  // 50 KiB: the checkpoint (about 38 KiB) fits, result.h5 outgrows it in its first rows.
  const auto limited = run_shell("prlimit --fsize=51200 " + std::string(NNVMC_EXE) + " train " + cfg);
  ASSERT_TRUE(limited.exited) << limited.out;
  EXPECT_EQ(limited.code, 1) << limited.out;
  EXPECT_NE(limited.out.find("File too large; training stopped at iteration "),
            std::string::npos) << limited.out;
  EXPECT_NE(limited.out.find("whose checkpoint was written"), std::string::npos) << limited.out;
  ASSERT_TRUE(fs::exists(out + "/checkpoint.h5"));
  EXPECT_FALSE(fs::exists(out + "/summary.json"));

  const auto resumed = run("train --resume " + out);
  ASSERT_EQ(resumed.code, 0) << resumed.out;
  // (HDF5 allocated past the limit: the file is extended to its recorded end and read again, or,
  // where that cannot be read either, set aside)
  EXPECT_TRUE(fs::exists(out + "/result.h5.damaged") || resumed.out.find("extended to it") != std::string::npos)
      << resumed.out;
  // the missing rows are counted in iterations, not summed over the series (a user audit: 1200
  // for 100 iterations of 12 series)
  const auto lack = resumed.out.find("result.h5: the training series lack ");
  ASSERT_NE(lack, std::string::npos) << resumed.out;
  const long lacking = std::stol(resumed.out.substr(lack + std::string("result.h5: the training series lack ").size()));
  EXPECT_GE(lacking, 1);
  EXPECT_LE(lacking, 6) << resumed.out;
  nnvmc::io::H5File results(out + "/result.h5", nnvmc::io::H5File::Mode::read);
  for (const char* series : {"train/energy", "train/seconds", "train/he/energy"}) {
    const auto column = results.read(series);
    ASSERT_EQ(column.numel(), 6) << series;
    int missing = 0;
    for (std::int64_t t = 0; t < 6; ++t) missing += std::isnan(column.as<double>()[t]) ? 1 : 0;
    EXPECT_GE(missing, 1) << series;  // the rows before the checkpoint
    EXPECT_LT(missing, 6) << series;  // the resumed rows
    for (std::int64_t t = 0; t < missing; ++t) EXPECT_TRUE(std::isnan(column.as<double>()[t])) << series << " " << t;
  }
  fs::remove_all(out);
}

// CCSD stopped before convergence (--allow-unconverged) has no (T): it is reported as not
// computed (JSON null), never as a (T) of 0 added to E(CCSD); --explain's plans reach the JSON.
TEST(Cli, TriplesOfAnUnconvergedCcsdAreNotComputedRatherThanZero) {
  const auto json = run("ccsd h2o --basis sto-3g --max-iterations 2 --allow-unconverged --triples --explain --json "
                        "--log-level warn");
  ASSERT_EQ(json.code, 0) << json.out;
  const auto j = json_of(json.out);
  EXPECT_FALSE(j["converged"].get<bool>());
  EXPECT_TRUE(j["e_t"].is_null()) << j["e_t"];
  EXPECT_TRUE(j["e_ccsd_t"].is_null()) << j["e_ccsd_t"];
  ASSERT_TRUE(j["plans"].is_array());
  EXPECT_FALSE(j["plans"].empty());
  const auto text = run("ccsd h2o --basis sto-3g --max-iterations 2 --allow-unconverged --triples");
  ASSERT_EQ(text.code, 0) << text.out;
  EXPECT_NE(text.out.find("E(CCSD(T))  not computed"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("(T) was not computed"), std::string::npos) << text.out;
  // the energy itself says it is not final, on stdout with it (the warning goes to stderr)
  const auto quiet = run_shell(std::string(NNVMC_EXE) + " ccsd h2o --basis sto-3g --max-iterations 2 --allow-unconverged 2>/dev/null");
  EXPECT_NE(quiet.out.find("NOT CONVERGED: the iterate after 2 iterations"), std::string::npos) << quiet.out;
}

// scf and ccsd take --charge and --spin (an .xyz file holds neither: an ion needed a YAML file),
// the same as the molecule file's charge: and spin:, and name them where they are impossible.
// The frame a negative FILE.xyz@K picked is named in scf's and ccsd's output (it said "@-1" alone).
TEST(Cli, ScfAndCcsdNameTheFrameANegativeIndexPicked) {
  const std::string traj = ::testing::TempDir() + "/nnvmc_frames.xyz";
  std::ofstream(traj) << "2\nf0\nH 0 0 0\nH 0 0 0.74\n2\nf1\nH 0 0 0\nH 0 0 0.80\n";
  for (const std::string cmd : {"scf", "ccsd"}) {
    const auto text = run(cmd + " " + traj + "@-1 --basis sto-3g --log-level error");
    ASSERT_EQ(text.code, 0) << text.out;
    EXPECT_NE(text.out.find(traj + "@-1 (frame 1)"), std::string::npos) << text.out;
    const auto json = run(cmd + " " + traj + "@-1 --basis sto-3g --json --log-level error");
    ASSERT_EQ(json.code, 0) << json.out;
    EXPECT_EQ(json_of(json.out)["frame"].get<int>(), 1) << json.out;
  }
}

TEST(Cli, ScfAndCcsdTakeTheChargeAndSpinOnTheCommandLine) {
  const auto xyz = write_config("nnvmc_h3o.xyz", "4\nH3O+\nO 0 0 0.1\nH 0.95 0 -0.2\nH -0.47 0.82 -0.2\nH -0.47 -0.82 -0.2\n");
  const auto yaml = write_config("nnvmc_h3o.yaml", "units: angstrom\ncharge: 1\natoms: [[O, 0, 0, 0.1], [H, 0.95, 0, -0.2], "
                                                   "[H, -0.47, 0.82, -0.2], [H, -0.47, -0.82, -0.2]]\n");
  const auto flag = run("ccsd " + xyz + " --charge 1 --basis sto-3g --json --log-level error");
  const auto file = run("ccsd " + yaml + " --basis sto-3g --json --log-level error");
  ASSERT_EQ(flag.code, 0) << flag.out;
  ASSERT_EQ(file.code, 0) << file.out;
  EXPECT_EQ(json_of(flag.out)["charge"], 1);
  EXPECT_EQ(json_of(flag.out)["n_electrons"], 10);
  EXPECT_NEAR(json_of(flag.out)["e_ccsd"].get<double>(), json_of(file.out)["e_ccsd"].get<double>(), 1e-10);
  const auto uhf = run("scf " + xyz + " --uhf --charge 2 --basis sto-3g --json");  // (spin: the lowest, 1)
  ASSERT_EQ(uhf.code, 0) << uhf.out;
  EXPECT_EQ(json_of(uhf.out)["n_alpha"], 5);
  EXPECT_EQ(json_of(uhf.out)["n_beta"], 4);
  expect_input_error("scf " + xyz + " --charge 1 --spin 1 --basis sto-3g", "(with --charge 1, --spin 1)");
}

// N2 at 3 Å from the SAD guess: the RHF is a saddle point on which CCSD does not converge, and
// with plain Jacobi updates it blows up. The blow-up stops at the first non-finite iterate (it ran
// its iteration limit in NaN and advised raising it: a user audit); the non-convergence advises
// the stability check; --stability follow reaches the lower RHF, on which CCSD converges and
// its T1/D1 diagnostics warn.
TEST(Cli, CcsdOnAnUnstableRhfStopsAtBlowUpAndFollowingTheInstabilityConverges) {
  const std::string mol = ::testing::TempDir() + "/nnvmc_n2_3A.yaml";
  std::ofstream(mol) << "units: angstrom\natoms: [[N, 0, 0, 0], [N, 0, 0, 3.0]]\n";
  const auto jacobi = run("ccsd " + mol + " --diis-size 0 --max-iterations 300");
  EXPECT_EQ(jacobi.code, 1) << jacobi.out;
  EXPECT_NE(jacobi.out.find("CCSD diverged: iteration "), std::string::npos) << jacobi.out;
  EXPECT_NE(jacobi.out.find("check the RHF (--stability check or follow), and keep DIIS on"), std::string::npos)
      << jacobi.out;
  EXPECT_EQ(jacobi.out.find("ccsd iter  30 "), std::string::npos) << jacobi.out;  // (it stopped early)
  const auto stuck = run("ccsd " + mol + " --max-iterations 40");
  EXPECT_EQ(stuck.code, 1) << stuck.out;
  EXPECT_NE(stuck.out.find("check the RHF with --stability check"), std::string::npos) << stuck.out;
  const auto followed = run("ccsd " + mol + " --stability follow --json");
  ASSERT_EQ(followed.code, 0) << followed.out;
  const auto j = json_of(followed.out);
  EXPECT_NEAR(j["e_hf"].get<double>(), -108.3100200655, 1e-8);
  EXPECT_NEAR(j["e_before_follow"].get<double>(), -107.9940787744, 1e-8);
  EXPECT_EQ(j["stability_follows"].get<int>(), 1);
  // a minimum among RHF solutions: its lowest eigenvalue is a zero mode (a symmetry the followed
  // solution breaks), zero up to the SCF's convergence (4e-12 or -9e-11, as the integrals round)
  EXPECT_GT(j["singlet_stability_eigenvalue"].get<double>(), -1e-8);
  EXPECT_LT(j["stability_eigenvalue"].get<double>(), -0.1);  // (a UHF solution is lower still)
  EXPECT_TRUE(j["converged"].get<bool>());
  EXPECT_GT(j["t1_diagnostic"].get<double>(), 0.02);
  EXPECT_NE(followed.out.find("CCSD diagnostics T1 0.0"), std::string::npos) << followed.out;
  const auto text = run("ccsd " + mol + " --stability follow --log-level error");
  EXPECT_NE(text.out.find("RHF followed 1 RHF -> RHF instability of the first solution (E -107.9940787744 Eh)"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("charge 0  spin 0  14 electrons (7 occupied, 0 frozen)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("converged in "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("HIGH (above 0.02 or 0.05)"), std::string::npos) << text.out;
}

// scf/ccsd: the molecule's charge and spin are checked before the closed-shell test (which used
// to advise --uhf for a charge leaving -1 electrons); conventional CCSD too large for its
// integrals is refused before the SCF, pointing to --cholesky; a molecule path that is not
// UTF-8 still gives valid JSON; an output that cannot be written is exit 1, not a silent 0.
TEST(Cli, ScfAndCcsdCheckTheirInputsFirstAndTheirOutputLast) {
  const auto h2 = write_config("nnvmc_h2_charge3.yaml", "units: bohr\ncharge: 3\natoms: [[H, 0, 0, 0], [H, 0, 0, 1.4]]\n");
  for (const char* cmd : {"scf ", "ccsd "}) {
    const auto r = run(std::string(cmd) + h2 + " --basis sto-3g");
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_NE(r.out.find("charge 3 leaves -1 electrons"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("--uhf"), std::string::npos) << r.out;
  }
  std::string chain = "31\nHe chain, 155 cc-pVDZ functions\n";  // 8 n^4 = 4.6 GB of AO integrals
  for (int i = 0; i < 31; ++i) chain += "He 0 0 " + std::to_string(3.0 * i) + "\n";
  // (under a limit: a machine with the memory runs it, as there is no fixed cap)
  const auto big = run_shell("sh -c 'ulimit -v 8000000 && exec " + std::string(NNVMC_EXE) + " ccsd " +
                             write_config("nnvmc_he31.xyz", chain) + " --basis cc-pvdz'");
  EXPECT_EQ(big.code, 2) << big.out;
  EXPECT_NE(big.out.find("155 basis functions"), std::string::npos) << big.out;
  EXPECT_NE(big.out.find("--cholesky"), std::string::npos) << big.out;
  EXPECT_EQ(big.out.find("SCF"), std::string::npos) << big.out;  // refused before it
  // a working-memory budget below one doubles-amplitude block is refused before the SCF (it ran
  // for minutes in batches of a few bytes, or failed after the SCF naming an einsum); one below
  // four of them is run with a warning
  const auto tiny = run("ccsd h2o --basis cc-pvdz --memory 10KiB");
  EXPECT_EQ(tiny.code, 2) << tiny.out;
  EXPECT_NE(tiny.out.find("the largest of one doubles-amplitude block, 70.51 KiB; an AO matrix, 4.50 KiB; and the "
                          "least any CCSD is given, 64.00 KiB"), std::string::npos) << tiny.out;
  EXPECT_NE(tiny.out.find("--memory 282.04 KiB or more"), std::string::npos) << tiny.out;
  EXPECT_EQ(tiny.out.find("SCF"), std::string::npos) << tiny.out;
  const auto small = run("ccsd h2o --basis sto-3g --memory 100KiB --json");
  ASSERT_EQ(small.code, 0) << small.out;
  EXPECT_NE(small.out.find("many small batches"), std::string::npos) << small.out;
  // --split none splits nothing: no such warning, and a contraction that does not fit is named
  // without a "smallest batch" it will never use
  const auto whole = run("ccsd h2o --basis cc-pvdz --split none --memory 100KiB");
  EXPECT_EQ(whole.code, 2) << whole.out;
  EXPECT_EQ(whole.out.find("many small batches"), std::string::npos) << whole.out;
  EXPECT_NE(whole.out.find("split=none runs every contraction whole"), std::string::npos) << whole.out;
  // numbers are read whole, in range, with the reason
  expect_input_error("ccsd h2o --memory 0x10MiB", "--memory");
  expect_input_error("ccsd h2o --memory 5Mb", "reads as bits");
  expect_input_error("ccsd h2o --cholesky 5e-324", "outside the range of double-precision numbers");
  expect_input_error("ccsd h2o --max-iterations 99999999999", "'99999999999' must be at most 2147483647");
  expect_input_error("scf h2o --max-iter 2.5", "--max-iter: '2.5' is not a whole number");
  expect_input_error("scf h2o --max-iter 010", "without leading zeros");  // CLI11 would read octal 8
  expect_input_error("scf nosuchmolecule", "h2o");  // the names it knows
  const auto odd = write_config("nnvmc_h2_\xff.xyz", "2\nH2\nH 0 0 0\nH 0 0 0.74\n");
  const auto j = run("scf " + odd + " --basis sto-3g --json");
  ASSERT_EQ(j.code, 0) << j.out;
  EXPECT_NO_THROW(json_of(j.out)) << j.out;
  const auto full = run_shell("sh -c '" + std::string(NNVMC_EXE) + " scf h2 --basis sto-3g --json > /dev/full'");
  EXPECT_EQ(full.code, 1) << full.out;
  EXPECT_NE(full.out.find("cannot write the result to standard output"), std::string::npos) << full.out;
}

// profile refuses, before it writes anything: an ansatz without parameters, a molecule the
// ansatz cannot describe (found before the first molecule is profiled), and an output directory
// that holds a training run. Blanks around --molecules entries are trimmed.
TEST(Cli, ProfileRefusesWhatItCannotTimeBeforeWritingAnything) {
  const auto out = (fs::temp_directory_path() / "nnvmc_profile_refusals").string();
  fs::remove_all(out);
  const std::string flags = " --iterations 1 --warmup 1 --profile-iterations 0 --no-roofline --no-plots --output " + out;
  const auto orb = write_config("nnvmc_profile_orb.yaml",
                                "model: {type: orbformer, orbformer: {elements: H-He, heads: 2, head_dim: 4, layers: 1, "
                                "featurization_heads: 2, determinants: 1, envelopes_per_nucleus: 1, nuclear_feature_dim: 4, "
                                "nuclear_layers: 1, nuclear_heads: 1, orbital_layers: 1, orbital_heads: 1, orbital_head_dim: 4}}\n"
                                "sampler: {walkers: 8, steps_per_iteration: 1, burn_in: 1}\nrun: {threads: 1}\n");
  expect_input_error("profile " + orb + " --molecules 'he, lih'" + flags, "Z = 3");
  EXPECT_FALSE(fs::exists(out + "/runs/he")) << "He was profiled before LiH was refused";
  expect_input_error("profile " + orb + " --molecules he 'system.molecules=[h2]'" + flags,
                     "'system.molecules=[h2]' and --molecules both choose the molecules");
  const auto hf = write_config("nnvmc_profile_hf.yaml", "model: {type: hf}\noptim: {iterations: 0}\n");
  expect_input_error("profile " + hf + " --molecules he" + flags, "has no parameters");
  const auto run_dir = trained_lih("nnvmc_profile_into_run");
  expect_input_error("profile " + orb + " --molecules he --iterations 1 --warmup 1 --profile-iterations 0 "
                     "--no-roofline --no-plots --output " + run_dir, "holds a training run");
  EXPECT_FALSE(fs::exists(run_dir + "/profile.json"));
  // An --output that is a file is named as --output (it was run.output, of a scratch run below it).
  const auto file = write_config("nnvmc_profile_output_file", "a file");
  expect_input_error("profile " + orb + " --molecules he" + std::string(flags).replace(flags.find(out), out.size(), file),
                     "--output " + file + " exists and is not a directory");
  // A missing config is named as such, also where its default --output would lie in a profile
  // (it was "--output runs/profile_nonexist lies in a profile", a user audit)
  fs::create_directories(out);
  std::ofstream(out + "/profile.json") << "{}";
  const auto missing = run_shell("cd " + out + " && " + std::string(NNVMC_EXE) + " profile nonexist.yaml");
  EXPECT_NE(missing.out.find("nonexist.yaml: cannot open config file"), std::string::npos) << missing.out;
  fs::remove_all(out);
}

// Command words and comparison files that are not what they should be are named as such.
TEST(Cli, AnUnknownCommandAndADirectoryAsComparisonFileAreNamed) {
  const auto unknown = run("trian x.yaml");
  EXPECT_EQ(unknown.code, 2) << unknown.out;
  EXPECT_NE(unknown.out.find("unknown command 'trian' (commands: train, eval, scf, ccsd, compare, profile, config)"),
            std::string::npos) << unknown.out;
  const auto global = run("--log-level warn nosuch");
  EXPECT_NE(global.out.find("unknown command 'nosuch'"), std::string::npos) << global.out;
  // with --help too (it showed the main help, exit 0)
  const auto help = run("sample --help");
  EXPECT_EQ(help.code, 2) << help.out;
  EXPECT_NE(help.out.find("unknown command 'sample'"), std::string::npos) << help.out;
  EXPECT_EQ(run("train --help").code, 0);
  // a YAML file given where a checkpoint belongs is named as one (it was "corrupt or truncated?")
  const auto cfg = write_config("nnvmc_eval_a_config.yaml", kTiny);
  expect_input_error("eval " + cfg, "a yaml file, not an HDF5 file (a run's config or report");
  expect_input_error("compare " + fs::temp_directory_path().string(), "not a regular file");
}

// One evaluation step leaves the reblocking nothing to compare: the error is the one over the
// walkers (it was exactly 0), and the cross-checks that need a longer series are null.
TEST(Cli, AnEvaluationOfOneStepHasTheErrorOverItsWalkers) {
  const auto out = trained_lih("nnvmc_cli_one_step");
  const auto r = run("eval " + out + "/checkpoint.h5 --steps 1 --seed 3 --json --log-level warn optim.lr=1");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("eval: 'optim.lr=1' has no effect on an evaluation"), std::string::npos) << r.out;
  const auto j = json_of(r.out);
  const double expected = std::sqrt(j["variance"].get<double>() / (j["walkers"].get<double>() - 1));
  EXPECT_NEAR(j["energy_err"].get<double>(), expected, 1e-9 * expected);
  EXPECT_GT(j["energy_err"].get<double>(), 0);
  EXPECT_TRUE(j["energy_err_batch_means"].is_null());
  EXPECT_TRUE(j["energy_err_autocorr"].is_null());
  EXPECT_TRUE(j["energy_err_reblocking"].is_null());
  EXPECT_FALSE(j["error_plateau"].get<bool>());
  EXPECT_EQ(j["error_method"].get<std::string>(), "walker chains");
  // overrides given as mappings count as well: the step size is the user's, not the checkpoint's,
  // and a training key inside a mapping is named
  const auto m = run("eval " + out + "/checkpoint.h5 --steps 2 --json --log-level warn "
                     "'sampler={step_size: 0.0123}' eval.burn_in=0 'run={output: elsewhere}'");
  ASSERT_EQ(m.code, 0) << m.out;
  EXPECT_EQ(json_of(m.out)["step_size"].get<double>(), 0.0123) << m.out;
  EXPECT_NE(m.out.find("has no effect on an evaluation"), std::string::npos) << m.out;
  // another optimizer is only a training setting too (it failed validation against the run's
  // adam settings, blamed on the checkpoint)
  const auto k = run("eval " + out + " --steps 1 --log-level warn optim.type=kfac");
  ASSERT_EQ(k.code, 0) << k.out;
  EXPECT_NE(k.out.find("eval: 'optim.type=kfac' has no effect on an evaluation"), std::string::npos) << k.out;
  // another precision than training's is said (the text output shows none)
  const auto f32 = run("eval " + out + " --steps 1 run.dtype=float32");
  ASSERT_EQ(f32.code, 0) << f32.out;
  EXPECT_NE(f32.out.find("eval: the checkpoint was trained in float64; evaluating in float32 (run.dtype)"),
            std::string::npos)
      << f32.out;
  EXPECT_EQ(k.out.find("the checkpoint was trained in"), std::string::npos) << k.out;
  // Ctrl-C stops an evaluation with a message and exit code 1 (it killed the process: 130, silent)
  const std::string log = out + "_eval_stopped.log";  // (the signal once the evaluation runs)
  const auto stopped = run_shell("bash -c '" + std::string(NNVMC_EXE) + " eval " + out + " --steps 100000000 > " + log +
                                 " 2>&1 & pid=$!; for i in $(seq 600); do grep -q \"local energy:\" " + log +
                                 " && break; sleep 0.1; done; sleep 0.5; kill -INT $pid; wait $pid; echo rc=$?; cat " +
                                 log + "'");
  EXPECT_NE(stopped.out.find("rc=1"), std::string::npos) << stopped.out;
  EXPECT_NE(stopped.out.find("stopped by a signal during the evaluation"), std::string::npos) << stopped.out;
}

// A run from key=value settings alone (no config file): the defaults and the settings, named
// MOLECULE_MODEL. A bare `nnvmc train`, without any setting, is still refused (the default LiH was
// never asked for).
TEST(Cli, TrainRunsFromSettingsAloneAndNamesTheRunAfterMoleculeAndModel) {
  const auto root = (fs::temp_directory_path() / "nnvmc_cli_settings_only").string();
  fs::remove_all(root);
  const auto r = run("train system.molecule=he 'model.ferminet={hidden_dims: [[8, 4]], determinants: 2}' "
                     "sampler.walkers=8 sampler.burn_in=2 optim.iterations=2 pretrain.steps=0 eval.steps=4 "
                     "run.threads=1 run.output=" + root + "/'<name>' --log-level warn");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(fs::exists(root + "/he_ferminet/summary.json")) << r.out;
  // the same again: the run is there, and the message says how to continue it
  const auto again = run("train system.molecule=he run.output=" + root + "/'<name>'");
  EXPECT_EQ(again.code, 2) << again.out;
  EXPECT_NE(again.out.find("nnvmc train --resume " + root + "/he_ferminet"), std::string::npos) << again.out;
  // the name: the default molecule's without one, a file's stem, the charge when given (`nnvmc
  // config` resolves it as train does)
  const auto name_of = [](const std::string& settings) {
    const auto r = run("config " + settings);
    EXPECT_EQ(r.code, 0) << r.out;
    const auto at = r.out.find("  name: ");
    return at == std::string::npos ? std::string() : r.out.substr(at + 8, r.out.find_first_of(" \n", at + 8) - at - 8);
  };
  EXPECT_EQ(name_of("optim.iterations=5"), "lih_ferminet");
  EXPECT_EQ(name_of("system.molecule=h2 system.charge=1 model.type=psiformer"), "h2_charge+1_psiformer");
  std::ofstream(fs::temp_directory_path() / "nnvmc_named.xyz") << "2\n\nH 0 0 0\nH 0 0 0.74\n";
  EXPECT_EQ(name_of("system.molecule=" + (fs::temp_directory_path() / "nnvmc_named.xyz").string()), "nnvmc_named_ferminet");
  EXPECT_EQ(name_of("'system.molecule=[[H, 0, 0, 0], [H, 0, 0, 1.4]]'"), "ferminet");
  EXPECT_EQ(name_of("system.molecule=h2 run.name=mine"), "mine");
  expect_input_error("train", "give a CONFIG file, key=value settings (e.g. nnvmc train system.molecule=h2");
  expect_input_error("train --force", "give a CONFIG file, key=value settings");
  expect_input_error("train sampler.walkrs=8", "sampler.walkrs");
  fs::remove_all(root);
}

// Under a minutes budget that ends training before its iterations, the progress line says the ETA
// is the minutes' ("it 50/3000" read as a total that was never reached, a user audit).
TEST(Cli, AProgressLineSaysWhenTheMinutesBudgetEndsTrainingFirst) {
  const auto t = tiny_run("nnvmc_cli_minutes_eta");
  const auto r = run("train " + t.config + " optim.iterations=1000000 optim.minutes=0.01 optim.log_every=1 eval.steps=0");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("/1000000"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" (optim.minutes)"), std::string::npos) << r.out;
  const auto plain = run("train " + t.config + " --force optim.log_every=1 eval.steps=0");
  ASSERT_EQ(plain.code, 0) << plain.out;
  EXPECT_EQ(plain.out.find("(optim.minutes)"), std::string::npos) << plain.out;
  fs::remove_all(t.dir);
}
