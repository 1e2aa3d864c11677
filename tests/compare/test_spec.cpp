// The comparison file: matrix expansion, budget, labels, errors naming the key; references.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "scf/basis.hpp"
#include "compare/reference.hpp"
#include "compare/runner.hpp"
#include "compare/spec.hpp"
#include "core/errors.hpp"
#include "core/molecule_list.hpp"
#include "core/system.hpp"
#include "core/molecule_list.hpp"
#include "models/registry.hpp"

namespace fs = std::filesystem;
using namespace nnvmc;
using namespace nnvmc::compare;

namespace {

const std::string kTwoSizes =
    "ansatze:\n"
    "  - {label: small, type: ferminet, ferminet: {hidden_dims: [[8, 4]], determinants: 1}}\n"
    "  - {label: large, type: ferminet, ferminet: {hidden_dims: [[16, 4], [16, 4]], determinants: 2}}\n"
    "molecules: [h, he]\n"
    "iterations: 5\n"
    "walkers: 16\n"
    "eval_steps: 7\n"
    "seed: 3\n"
    "output: /tmp/nnvmc_spec_out\n";

std::string error_of(const std::string& text, const std::vector<std::string>& overrides = {}) {
  try {
    parse_compare_spec(text, overrides, "cmp.yaml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

// A baseline cell of the 'hf' ansatz is not trained: an override of the optimizer or the
// pretraining leaves its identity, so its done result is kept (it was refused as a cell run with
// "a different configuration"); a trained ansatz's cell changes with them.
TEST(CompareSpec, OptimizerSettingsDoNotChangeTheIdentityOfAnUntrainedBaselineCell) {
  const std::string text = "ansatze: [{type: hf}, {type: ferminet}]\nmolecules: [h2]\noutput: /tmp/nnvmc_spec_hf\n";
  const auto plain = parse_compare_spec(text, {}, "cmp.yaml");
  const auto changed = parse_compare_spec(text + "overrides: [optim.lr=0.5, pretrain.steps=7]\n", {}, "cmp.yaml");
  EXPECT_EQ(cell_identity(plain.cells.at(0).config), cell_identity(changed.cells.at(0).config));  // hf
  EXPECT_NE(cell_identity(plain.cells.at(1).config), cell_identity(changed.cells.at(1).config));  // ferminet
}

// A label with characters a directory name cannot hold is rewritten, and the rewrite is said (a
// user audit found "hf, baseline | x" silently as hf__baseline___x).
TEST(CompareSpec, ARewrittenLabelIsWarnedAbout) {
  testing::internal::CaptureStdout();  // (the log's sink: stdout in tests)
  testing::internal::CaptureStderr();
  const auto spec = parse_compare_spec(
      "ansatze: [{label: 'hf, baseline | x', type: hf}]\nmolecules: [h]\neval_steps: 2\noutput: /tmp/nnvmc_spec_label\n",
      {}, "cmp.yaml");
  const std::string err = testing::internal::GetCapturedStderr() + testing::internal::GetCapturedStdout();
  ASSERT_EQ(spec.cells.size(), 1u);
  EXPECT_EQ(spec.cells[0].ansatz, "hf__baseline___x");
  EXPECT_NE(err.find("label 'hf, baseline | x' is 'hf__baseline___x' in cell names"), std::string::npos) << err;
}

TEST(CompareSpec, ExpandsAnsatzeTimesMoleculesTimesAxesWithTheCommonBudget) {
  const auto spec = parse_compare_spec(kTwoSizes + "laplacian: [forward, reverse]\n", {}, "cmp.yaml");
  ASSERT_EQ(spec.cells.size(), 8u);  // 2 ansätze × 2 molecules × 2 Laplacians
  EXPECT_EQ(spec.cells[0].id, "small__h__forward");
  EXPECT_EQ(spec.cells[7].id, "large__he__reverse");
  for (const auto& c : spec.cells) {
    EXPECT_EQ(c.config.optim.iterations, 5);
    EXPECT_EQ(c.config.sampler.walkers, 16);
    EXPECT_EQ(c.config.eval.steps, 7);
    EXPECT_EQ(c.config.run.seed, 3u);
    EXPECT_EQ(c.config.run.output, "/tmp/nnvmc_spec_out/cells/" + c.id);
    EXPECT_EQ(c.config.run.name, c.id);
  }
  EXPECT_EQ(spec.cells[0].config.model.ferminet.hidden_dims->size(), 1u);
  EXPECT_EQ(spec.cells[4].config.model.ferminet.hidden_dims->size(), 2u);
  EXPECT_EQ(spec.cells[1].config.hamiltonian.laplacian, "reverse");
  EXPECT_EQ(spec.cells[2].molecule, "he");
  ASSERT_EQ(spec.molecules.size(), 2u);
  ASSERT_TRUE(spec.molecules[1].system.e_ref.has_value());
  EXPECT_DOUBLE_EQ(*spec.molecules[1].system.e_ref, -2.903724377);
}

// The bare HF determinant has nothing to train: its cells are evaluated as built under a common
// iterations or minutes budget (each such cell used to fail when it started); the model
// registry says which ansätze have parameters.
TEST(CompareSpec, AnAnsatzWithoutParametersIsEvaluatedWithoutTraining) {
  const std::string text =
      "ansatze:\n"
      "  - {type: hf}\n"
      "  - {label: small, type: ferminet, ferminet: {hidden_dims: [[8, 4]], determinants: 1}}\n"
      "molecules: [h2]\n"
      "output: /tmp/nnvmc_spec_out\n";
  for (const char* budget : {"iterations: 5\n", "minutes: 2\n"}) {
    const auto spec = parse_compare_spec(text + budget, {}, "cmp.yaml");
    ASSERT_EQ(spec.cells.size(), 2u);
    EXPECT_EQ(spec.cells[0].config.model.type, "hf");
    EXPECT_EQ(spec.cells[0].config.optim.iterations, 0) << budget;
    EXPECT_EQ(spec.cells[0].config.pretrain.steps, 0) << budget;
    EXPECT_GT(spec.cells[1].config.optim.iterations, 0) << budget;
  }
  EXPECT_FALSE(ansatz_is_trainable("hf"));
  for (const char* type : {"ferminet", "psiformer", "paulinet", "orbformer"}) EXPECT_TRUE(ansatz_is_trainable(type));
  EXPECT_THROW(ansatz_is_trainable("nosuch"), ConfigError);
}

// ... nor is it run once per optimizer: with an optim axis the HF baseline is one cell per
// molecule and Laplacian (it used to be repeated, identical, under every optimizer's label).
TEST(CompareSpec, AnAnsatzWithoutParametersIsOneCellWhateverTheOptimAxis) {
  const std::string text =
      "ansatze:\n"
      "  - {type: hf}\n"
      "  - {label: small, type: ferminet, ferminet: {hidden_dims: [[8, 4]], determinants: 1}}\n"
      "molecules: [h2]\n"
      "laplacian: [forward, jvp]\n"
      "optim: [adam, spring]\n"
      "iterations: 5\n"
      "output: /tmp/nnvmc_spec_out\n";
  const auto spec = parse_compare_spec(text, {}, "cmp.yaml");
  std::vector<std::string> ids;
  for (const auto& c : spec.cells) ids.push_back(c.id);
  EXPECT_EQ(ids, (std::vector<std::string>{"hf__h2__forward", "hf__h2__jvp", "small__h2__forward__adam",
                                           "small__h2__forward__spring", "small__h2__jvp__adam",
                                           "small__h2__jvp__spring"}));
  EXPECT_EQ(spec.cells[0].optim, "none");
  EXPECT_EQ(spec.cells[1].config.hamiltonian.laplacian, "jvp");
  for (int i : {0, 1}) {
    EXPECT_EQ(spec.cells[i].config.run.output, "/tmp/nnvmc_spec_out/cells/" + spec.cells[i].id);
    EXPECT_EQ(spec.cells[i].config.run.name, spec.cells[i].id);
  }
  EXPECT_EQ(spec.cells[3].optim, "spring");
  // The axis does not reach its config either: reordering it leaves the cell's run as it was
  // (a finished comparison would otherwise refuse to continue: "run with a different configuration").
  std::string reordered = text;
  reordered.replace(reordered.find("[adam, spring]"), 14, "[spring, adam]");
  const auto again = parse_compare_spec(reordered, {}, "cmp.yaml");
  EXPECT_EQ(to_yaml(again.cells[0].config), to_yaml(spec.cells[0].config));
}

TEST(CompareSpec, RunConfigPathsInlineMoleculesOptimBlocksAndOverrides) {
  const std::string src = NNVMC_SOURCE_DIR;
  const std::string text =
      "ansatze: [" + src + "/configs/runs/he_ferminet_small.yaml]\n"
      "molecules: [{name: h2x, units: bohr, atoms: [[H, 0, 0, 0], [H, 0, 0, 1.5]]}]\n"
      "optim: [adam, {label: spring_fast, type: spring, lr: 0.05}]\n"
      "minutes: 2\n"
      "overrides: [sampler.steps_per_iteration=3]\n";
  const auto spec = parse_compare_spec(text, {"output=/tmp/x"}, "cmp.yaml");
  ASSERT_EQ(spec.cells.size(), 2u);
  EXPECT_EQ(spec.cells[0].id, "he_ferminet_small__h2x__adam");
  EXPECT_EQ(spec.cells[1].optim, "spring_fast");
  EXPECT_EQ(spec.cells[1].config.optim.type, "spring");
  EXPECT_DOUBLE_EQ(spec.cells[1].config.optim.lr, 0.05);
  EXPECT_EQ(spec.cells[0].config.sampler.steps_per_iteration, 3);
  EXPECT_EQ(spec.cells[0].config.sampler.walkers, 256);  // from the run config
  // ... and so is its model (a run-config entry's model block used to be replaced by the defaults)
  for (const auto& cell : spec.cells) {
    ASSERT_TRUE(cell.config.model.ferminet.hidden_dims.has_value()) << cell.id;
    EXPECT_EQ(*cell.config.model.ferminet.hidden_dims, (std::vector<std::array<int, 2>>{{32, 8}, {32, 8}, {32, 8}})) << cell.id;
    EXPECT_EQ(*cell.config.model.ferminet.determinants, 4) << cell.id;
  }
  EXPECT_GT(spec.cells[0].config.optim.iterations, 1000000);  // minutes only: training ends on the clock
  EXPECT_EQ(spec.molecules[0].system.n_electrons(), 2);
  EXPECT_FALSE(spec.molecules[0].system.e_ref.has_value());
  EXPECT_EQ(spec.output, "/tmp/x");
}

TEST(CompareSpec, BaseSettingsHoldWhereNoAxisOrBudgetReplacesThem) {
  const auto spec = parse_compare_spec(
      kTwoSizes + "base: {hamiltonian: {laplacian: forward}, run: {dtype: float32}, optim: {type: spring}}\n", {},
      "cmp.yaml");
  for (const auto& c : spec.cells) {
    EXPECT_EQ(c.config.hamiltonian.laplacian, "forward") << c.id;
    EXPECT_EQ(c.config.run.dtype, "float32") << c.id;
    EXPECT_EQ(c.config.optim.type, "spring") << c.id;
    EXPECT_EQ(c.config.sampler.walkers, 16) << c.id;  // the budget still applies
  }
  const auto axis = parse_compare_spec(kTwoSizes + "base: {hamiltonian: {laplacian: forward}}\nlaplacian: [jvp]\n",
                                       {}, "cmp.yaml");
  EXPECT_EQ(axis.cells[0].config.hamiltonian.laplacian, "jvp");  // an axis overrides the base
}

// `base:` may be a run-config path (relative to the comparison file), and `molecules:` may be
// one molecule written as a bare list of atoms.
TEST(CompareSpec, BaseAsARunConfigPathAndABareAtomListAsTheOneMolecule) {
  const auto dir = fs::temp_directory_path() / "nnvmc_spec_base";
  fs::create_directories(dir);
  std::ofstream(dir / "base.yaml") << "hamiltonian: {laplacian: jvp}\nsampler: {steps_per_iteration: 7}\n";
  const std::string file = (dir / "cmp.yaml").string();  // names it in messages
  const auto spec = parse_compare_spec(
      "ansatze: [{type: ferminet}]\n"
      "molecules: [[H, 0, 0, 0], [H, 0, 0, 1.4]]\n"
      "base: base.yaml\n"
      "iterations: 2\n",
      {"output=/tmp/x"}, file, dir.string());
  ASSERT_EQ(spec.cells.size(), 1u);
  EXPECT_EQ(spec.molecules.size(), 1u);
  EXPECT_EQ(spec.molecules[0].system.n_electrons(), 2);
  EXPECT_EQ(spec.cells[0].config.hamiltonian.laplacian, "jvp");
  EXPECT_EQ(spec.cells[0].config.sampler.steps_per_iteration, 7);
}

// Cells that share an optim-axis entry each get their own copy of it: one ansatz's override of
// a key inside the entry's mappings reaches neither the other ansatz's cell nor the file.
TEST(CompareSpec, OneAnsatzsOverrideOfASharedAxisMappingStaysInItsCells) {
  const auto spec = parse_compare_spec(
      "ansatze:\n"
      "  - {label: a, type: ferminet, overrides: [optim.sr.damping=0.5, optim.sr.norm=euclidean]}\n"
      "  - {label: b, type: ferminet}\n"
      "molecules: [h]\n"
      "optim: [{type: sr, sr: {damping: 0.001}}]\n",
      {"output=/tmp/x"}, "cmp.yaml");
  ASSERT_EQ(spec.cells.size(), 2u);
  EXPECT_DOUBLE_EQ(spec.cells[0].config.optim.sr.damping, 0.5);
  EXPECT_EQ(spec.cells[0].config.optim.sr.norm, "euclidean");
  EXPECT_DOUBLE_EQ(spec.cells[1].config.optim.sr.damping, 0.001);
  EXPECT_EQ(spec.cells[1].config.optim.sr.norm, SrOptions{}.norm);
}

// A cell is the run `nnvmc train` would make of the same config: the defaults that depend on
// another key (the learning rate of the optimizer, HF pretraining of the ansatz) apply to it.
TEST(CompareSpec, CellsTakeTheDefaultsThatDependOnTheOptimizerAndTheAnsatz) {
  const std::string text =
      "ansatze:\n"
      "  - {label: fn, type: ferminet, ferminet: {hidden_dims: [[8, 4]], determinants: 1}}\n"
      "  - {label: pn, type: paulinet}\n"
      "  - {label: tuned, type: ferminet, overrides: [pretrain.steps=7, optim.lr=0.02]}\n"
      "molecules: [h2]\n"
      "optim: [adam, spring, kfac]\n"
      "iterations: 5\n"
      "output: /tmp/nnvmc_spec_out\n";
  const auto spec = parse_compare_spec(text, {}, "cmp.yaml");
  ASSERT_EQ(spec.cells.size(), 9u);
  for (const auto& cell : spec.cells) {
    const Config run = parse_config(to_yaml(cell.config), {}, "resolved.yaml");
    EXPECT_EQ(to_yaml(run), to_yaml(cell.config)) << cell.id;  // nothing left for train to resolve
  }
  EXPECT_DOUBLE_EQ(spec.cells[0].config.optim.lr, 3e-3);
  EXPECT_DOUBLE_EQ(spec.cells[1].config.optim.lr, kNaturalGradientLr);
  EXPECT_DOUBLE_EQ(spec.cells[2].config.optim.lr, kKfacLr);
  EXPECT_DOUBLE_EQ(spec.cells[2].config.optim.lr_delay, kKfacLrDelay);
  EXPECT_DOUBLE_EQ(spec.cells[1].config.optim.lr_delay, 1000);
  EXPECT_DOUBLE_EQ(*spec.cells[0].config.optim.determinant_balance, kDeterminantBalanceDefault);
  EXPECT_DOUBLE_EQ(*spec.cells[1].config.optim.determinant_balance, 0.0);
  EXPECT_EQ(spec.cells[0].config.pretrain.steps, kPretrainSteps);  // FermiNet learns its orbitals
  EXPECT_EQ(spec.cells[3].config.pretrain.steps, 0);               // PauliNet has its HF baseline
  for (int i : {6, 7, 8}) {                                        // given values win
    EXPECT_EQ(spec.cells[i].config.pretrain.steps, 7);
    EXPECT_DOUBLE_EQ(spec.cells[i].config.optim.lr, 0.02);
  }
}

// A model block and an optim-axis mapping merge into the base key by key, as a `key={...}`
// override of `nnvmc train BASE` does (they used to replace the base's whole block).
TEST(CompareSpec, ModelBlocksAndOptimMappingsMergeIntoTheBase) {
  const std::string text =
      "base: {model: {type: ferminet, ferminet: {hidden_dims: [[8, 4]], determinants: 4}},\n"
      "       optim: {sr: {norm_constraint: 0.001, damping: 0.5}}}\n"
      "ansatze: [{type: ferminet, ferminet: {determinants: 1}}]\n"
      "molecules: [h2]\n"
      "optim: [{type: spring, sr: {damping: 0.01}}]\n"
      "output: /tmp/nnvmc_spec_out\n";
  const auto spec = parse_compare_spec(text, {}, "cmp.yaml");
  ASSERT_EQ(spec.cells.size(), 1u);
  const auto& c = spec.cells[0].config;
  ASSERT_TRUE(c.model.ferminet.hidden_dims.has_value());
  EXPECT_EQ(*c.model.ferminet.hidden_dims, (std::vector<std::array<int, 2>>{{8, 4}}));
  EXPECT_EQ(*c.model.ferminet.determinants, 1);
  EXPECT_EQ(c.optim.type, "spring");
  EXPECT_DOUBLE_EQ(c.optim.sr.norm_constraint, 0.001);
  EXPECT_DOUBLE_EQ(c.optim.sr.damping, 0.01);
}

// The common budget is set once: an override of it in overrides: won silently in every cell (a
// user audit), and run.output/run.name, which the comparison sets per cell, were ignored.
TEST(CompareSpec, OverridesOfTheCommonBudgetOrOfTheCellsOutputAreRefused) {
  const std::string file =
      "ansatze: [{type: ferminet}]\nmolecules: [h2]\niterations: 30\nwalkers: 16\nseed: 3\n"
      "output: /tmp/nnvmc_spec_out\n";
  for (const auto& [extra, needle] : std::vector<std::pair<std::string, std::string>>{
           {"overrides: [optim.iterations=50]\n", "sets optim.iterations, which the comparison's 'iterations:' sets"},
           {"overrides: ['sampler={walkers: 32}']\n", "which the comparison's 'walkers:' sets for every cell"},
           {"overrides: [run.seed=5]\n", "the comparison's 'seed:'"},
           {"overrides: [run.output=/tmp/x]\n", "sets run.output, which the comparison sets for each cell"}}) {
    const auto e = error_of(file + extra);
    EXPECT_NE(e.find(needle), std::string::npos) << extra << e;
  }
  // with minutes: alone the iterations are unbounded, and an override capped them without a word
  const auto capped = error_of("ansatze: [{type: ferminet}]\nmolecules: [h2]\nminutes: 2\n"
                               "overrides: [optim.iterations=40]\noutput: /tmp/nnvmc_spec_out\n");
  EXPECT_NE(capped.find("'minutes:' leaves unbounded; give 'iterations:' beside"), std::string::npos) << capped;
  // a key the file leaves unset is the overrides' to give
  const auto spec = parse_compare_spec(file + "overrides: [eval.steps=7, run.threads=1]\n", {}, "cmp.yaml");
  EXPECT_EQ(spec.cells.at(0).config.eval.steps, 7);
  // an ansatz's own override of the budget is kept (and warned about): its cells differ on purpose
  const auto own = parse_compare_spec(
      "ansatze: [{type: ferminet, overrides: [sampler.walkers=32]}]\nmolecules: [h2]\nwalkers: 16\n"
      "output: /tmp/nnvmc_spec_out\n", {}, "cmp.yaml");
  EXPECT_EQ(own.cells.at(0).config.sampler.walkers, 32);
}

// A cell's molecule, charge and spin are its molecules: entry, whose reference the table uses:
// system keys elsewhere would train another molecule than the one named and scored.
TEST(CompareSpec, SystemKeysOutsideTheMoleculeEntriesAreRefused) {
  for (const std::string extra : {"overrides: [system.molecule=he]\n", "overrides: ['system={charge: 1}']\n",
                                  "base: {system: {spin: 2}}\n"}) {
    const auto e = error_of(kTwoSizes + extra);
    EXPECT_NE(e.find("'molecules:' entries"), std::string::npos) << extra << e;
  }
  // the base's key is blamed on base:, not on the first ansatz (a user audit)
  EXPECT_EQ(error_of(kTwoSizes + "base: {system: {spin: 2}}\n").rfind("'base': system.spin does not apply", 0), 0u);
  const auto per_ansatz = error_of(
      "ansatze: [{type: ferminet, overrides: [system.charge=1]}]\nmolecules: [h2]\noutput: /tmp/nnvmc_spec_out\n");
  EXPECT_NE(per_ansatz.find("sets a system key"), std::string::npos) << per_ansatz;
  // charge and spin in an inline molecule entry are the way to give them
  const auto spec = parse_compare_spec(
      "ansatze: [{type: ferminet}]\nmolecules: [{name: h2p, charge: 1, spin: 1, atoms: [[H, 0, 0, 0], [H, 0, 0, 2]]}]\n"
      "output: /tmp/nnvmc_spec_out\n", {}, "cmp.yaml");
  EXPECT_EQ(spec.molecules.at(0).system.n_electrons(), 1);
}

// A molecule entry may move a named molecule's nuclei, as in system.molecules ({molecule:
// NAME-OR-PATH, geometry, units, name, charge, spin}; it used to be refused): the cell trains
// that geometry, and its reference is computed for it (the file's e_ref belongs to 1.4 bohr).
TEST(CompareSpec, AMoleculeEntryWithAGeometryTrainsAndScoresThatGeometry) {
  const std::string out = (fs::temp_directory_path() / "nnvmc_spec_geometry").string();
  fs::remove_all(out);
  const std::string text =
      "ansatze: [{type: ferminet}]\n"
      "molecules: [h2, {molecule: h2, geometry: [[0, 0, 0], [0, 0, 2.0]], name: h2_stretched}]\n"
      "output: " + out + "\n";
  const auto spec = parse_compare_spec(text, {}, "cmp.yaml");
  ASSERT_EQ(spec.cells.size(), 2u);
  EXPECT_EQ(spec.cells[1].molecule, "h2_stretched");
  EXPECT_DOUBLE_EQ(spec.molecules[1].system.atoms[1].position[2], 2.0);
  EXPECT_FALSE(spec.molecules[1].system.e_ref.has_value());
  const auto& system = spec.cells[1].config.system;
  ASSERT_TRUE(system.molecules.has_value());  // the entry's form, as system.molecules lists it
  EXPECT_FALSE(system.molecule.has_value());
  const auto trained = resolve_molecules(system);  // what the cell's run reads
  ASSERT_EQ(trained.size(), 1u);
  EXPECT_DOUBLE_EQ(trained[0].atoms[1].position[2], 2.0);
  EXPECT_EQ(trained[0].name, "h2_stretched");
  const auto refs = compute_references(spec);
  ASSERT_EQ(refs.size(), 2u);
  EXPECT_EQ(refs[0].kind, "e_ref");
  EXPECT_EQ(refs[1].kind, "ccsd_t");  // two electrons: CCSD(T) is full CI in cc-pVDZ, above the exact energy
  EXPECT_GT(refs[1].energy, -1.14);   // exact at 2.0 bohr: -1.1381 Eh
  EXPECT_LT(refs[1].energy, -1.12);
  EXPECT_NE(error_of(text + "references: exact\n").find("h2_stretched"), std::string::npos);
  // Unnamed, another geometry beside the file's own molecule is labelled so, and the file's
  // molecule keeps its name (it was "h2" at 1.6 bohr beside "h2-2" at 1.4 with the exact
  // reference, a user audit); a rigid motion of the file's molecule is that molecule; alone, or
  // with another charge only, an entry keeps its name (earlier comparisons' cells keep theirs).
  const auto unnamed = parse_compare_spec(
      "ansatze: [{type: ferminet}]\n"
      "molecules: [{molecule: h2, geometry: [[0, 0, 0], [0, 0, 1.6]]}, h2,\n"
      "            {molecule: h2, geometry: [[1, 0, 0], [1, 0, 1.4]]}]\noutput: " + out + "\n",
      {}, "cmp.yaml");
  ASSERT_EQ(unnamed.molecules.size(), 3u);
  EXPECT_EQ(unnamed.molecules[0].label, "h2_geom");
  EXPECT_EQ(unnamed.molecules[1].label, "h2");
  EXPECT_EQ(unnamed.molecules[2].label, "h2-2");
  const auto alone = parse_compare_spec(
      "ansatze: [{type: ferminet}]\nmolecules: [{molecule: h2, geometry: [[0, 0, 0], [0, 0, 1.6]]}, "
      "{molecule: h2, charge: 1}]\noutput: " + out + "\n",
      {}, "cmp.yaml");
  EXPECT_EQ(alone.molecules[0].label, "h2");
  EXPECT_EQ(alone.molecules[1].label, "h2_cation");
  EXPECT_NE(error_of("ansatze: [{type: ferminet}]\nmolecules: [{molecule: h2, geometry: [[0, 0, 0]]}]\n")
                .find("molecules[0].geometry"),
            std::string::npos);
}

// A relative molecule path is found in the working directory or beside the comparison file; a
// name found in both places is an error (one used to shadow the other), and the cell's config
// holds the molecule's geometry itself, so a changed file is a changed cell (a user audit: a done
// cell was reused after its file changed, and scored against the new geometry's reference).
TEST(CompareSpec, ARelativeMoleculeFileFoundTwiceIsAnErrorAndCellsHoldTheGeometry) {
  const auto dir = fs::temp_directory_path() / "nnvmc_spec_paths";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string name = "nnvmc_spec_paths_h2.xyz";
  std::ofstream(dir / name) << "2\n\nH 0 0 0\nH 0 0 0.74\n";
  const std::string text = "ansatze: [{type: ferminet}]\nmolecules: [" + name + "]\noutput: /tmp/nnvmc_spec_out\n";
  const auto spec = parse_compare_spec(text, {}, (dir / "cmp.yaml").string(), dir.string());
  EXPECT_FALSE(spec.cells.at(0).config.system.molecule.has_value());
  const auto held = resolve_molecules(spec.cells.at(0).config.system);
  ASSERT_EQ(held.size(), 1u);
  EXPECT_EQ(held[0].name, "nnvmc_spec_paths_h2");
  EXPECT_DOUBLE_EQ(held[0].atoms[1].position[2], 0.74 * kBohrPerAngstrom);
  // an inline molecule without a name is "inline" in its cell, as cells named it before (its
  // label is inline1): such cells of an earlier comparison continue
  const auto inline_spec = parse_compare_spec("ansatze: [{type: ferminet}]\nmolecules: [[[H, 0, 0, 0], [H, 0, 0, 1.4]]]\n"
                                              "output: /tmp/nnvmc_spec_out\n",
                                              {}, "cmp.yaml");
  EXPECT_EQ(inline_spec.cells.at(0).molecule, "inline1");
  EXPECT_EQ(resolve_molecules(inline_spec.cells.at(0).config.system).at(0).name, "inline");
  Config before = inline_spec.cells.at(0).config;  // as an earlier version wrote it
  before.system = SystemConfig{};
  before.system.molecule = InlineYaml{"[[H, 0, 0, 0], [H, 0, 0, 1.4]]"};
  EXPECT_EQ(cell_identity(before), cell_identity(inline_spec.cells.at(0).config));
  // the file changed: the cell's identity changes with it
  std::ofstream(dir / name) << "2\n\nH 0 0 0\nH 0 0 0.80\n";
  const auto moved = parse_compare_spec(text, {}, (dir / "cmp.yaml").string(), dir.string());
  EXPECT_NE(cell_identity(moved.cells.at(0).config), cell_identity(spec.cells.at(0).config));
  std::ofstream(dir / name) << "2\n\nH 0 0 0\nH 0 0 0.74\n";
  std::ofstream(name) << "2\n\nH 0 0 0\nH 0 0 1.50\n";  // the same name in the working directory
  try {
    parse_compare_spec(text, {}, (dir / "cmp.yaml").string(), dir.string());
    ADD_FAILURE() << "a name found twice was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("names two files"), std::string::npos) << e.what();
  }
  fs::remove(name);
}

// A frame of a multi-frame XYZ file beside the comparison file (FILE.xyz@K) is found there like
// the file itself, and the cell holds that frame's geometry.
TEST(CompareSpec, AFrameOfARelativeXyzFileIsFoundBesideTheComparisonFile) {
  const auto dir = fs::temp_directory_path() / "nnvmc_spec_frames";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "traj.xyz") << "2\n\nH 0 0 0\nH 0 0 0.74\n2\n\nH 0 0 0\nH 0 0 0.80\n";
  const std::string text = "ansatze: [{type: ferminet}]\nmolecules: [traj.xyz@1, {molecule: traj.xyz@-1, name: h2b}]\n"
                           "output: /tmp/nnvmc_spec_out\n";
  const auto spec = parse_compare_spec(text, {}, (dir / "cmp.yaml").string(), dir.string());
  ASSERT_EQ(spec.cells.size(), 2u);
  const auto held = resolve_molecules(spec.cells.at(0).config.system);
  EXPECT_EQ(held.at(0).name, "traj_1");
  EXPECT_NEAR(held.at(0).atoms[1].position[2], 0.80 * kBohrPerAngstrom, 1e-12);
  fs::remove_all(dir);
}

TEST(CompareSpec, BadFilesAreConfigErrorsNamingTheKey) {
  EXPECT_NE(error_of(kTwoSizes + "iteration: 3\n").find("'iteration' (did you mean 'iterations'?)"), std::string::npos);
  EXPECT_NE(error_of(kTwoSizes, {"walkers=many"}).find("'walkers'"), std::string::npos);
  // A command-line override is named as the override, not as a key of the file.
  const auto typo = error_of(kTwoSizes, {"walkerz=4"});
  EXPECT_NE(typo.find("override 'walkerz=4'"), std::string::npos) << typo;
  EXPECT_EQ(typo.find("cmp.yaml"), std::string::npos) << typo;
  // A run setting given as if it were one (found by a user audit: it became a one-entry optim
  // axis, "optim1", that renamed every cell); a base key is a run setting and stays allowed.
  const auto inside = error_of(kTwoSizes, {"optim.lr=0.1"});
  EXPECT_NE(inside.find("override 'optim.lr=0.1': 'optim' is a list of the comparison (an axis), not a run setting"),
            std::string::npos) << inside;
  EXPECT_NE(inside.find("overrides: [optim.lr=...]"), std::string::npos) << inside;
  EXPECT_EQ(parse_compare_spec(kTwoSizes, {"base.sampler.burn_in=3"}, "cmp.yaml").cells.at(0).config.sampler.burn_in, 3);
  EXPECT_NE(error_of(kTwoSizes, {"references=best"}).find("'references'"), std::string::npos);
  EXPECT_NE(error_of(kTwoSizes, {"iterations=-1"}).find("'iterations'"), std::string::npos);
  EXPECT_NE(error_of(kTwoSizes, {"laplacian=magic"}).find("hamiltonian.laplacian"), std::string::npos);
  EXPECT_NE(error_of(kTwoSizes, {"molecules=[h, nosuchmol]"}).find("molecules[1]"), std::string::npos);
  EXPECT_NE(error_of("molecules: [h]\n").find("'ansatze'"), std::string::npos);
  EXPECT_NE(error_of("ansatze: [{ferminet: {determinants: 2}}]\nmolecules: [h]\n").find("ansatze[0].type"),
            std::string::npos);
  const auto bad_model = error_of(
      "ansatze: [{type: ferminet, ferminet: {hidden_dim: [[8, 4]]}}]\nmolecules: [h]\n");
  EXPECT_NE(bad_model.find("model.ferminet.hidden_dim"), std::string::npos) << bad_model;
  EXPECT_NE(bad_model.find("cmp.yaml"), std::string::npos) << bad_model;
  EXPECT_NE(error_of(kTwoSizes, {"references=exact", "molecules=[h, c2h6]"}).find("c2h6"), std::string::npos);
  EXPECT_NE(error_of("ansatze: [/nonexistent/run.yaml]\nmolecules: [h]\n").find("ansatze[0]"), std::string::npos);
  const auto base_list = error_of(kTwoSizes + "base: [1, 2]\n");  // was silently ignored
  EXPECT_NE(base_list.find("'base' must be a run config"), std::string::npos) << base_list;
  EXPECT_NE(base_list.find("cmp.yaml:"), std::string::npos) << base_list;
  EXPECT_NE(error_of(kTwoSizes + "walkers: 8\nwalkers: 16\n").find("'walkers' given twice"), std::string::npos);
  // One walker cannot train: refused with the file, as by `nnvmc train` (every cell used to
  // start, fail, and leave a report of failed cells); the hf baseline alone may use one.
  const auto one_walker = error_of(kTwoSizes, {"walkers=1"});
  EXPECT_NE(one_walker.find("(cell small__h): 'sampler.walkers' must be at least 2 to train"), std::string::npos)
      << one_walker;
  EXPECT_EQ(error_of("ansatze: [{type: hf}]\nmolecules: [h2]\nwalkers: 1\n"), "no error");
  // Empty lists and blocks are absent, as before the rule that a number or name left empty is
  // an error.
  EXPECT_EQ(error_of(kTwoSizes + "base:\noverrides:\nlaplacian:\n"), "no error");
  EXPECT_NE(error_of(kTwoSizes + "reference_basis:\n").find("'reference_basis' has no value"), std::string::npos);
}

// ... and said: a renamed entry is named, and one the same as an earlier entry is said to
// repeat its runs (a user audit found "adam-2" and "h2-2" cells without a word).
TEST(CompareSpec, DuplicateLabelsAreMadeUniqueAndNamedInAWarning) {
  testing::internal::CaptureStdout();  // (the log's sink: stdout in tests, stderr in the app)
  testing::internal::CaptureStderr();
  const auto spec = parse_compare_spec(
      "ansatze: [{type: ferminet}, {type: ferminet, ferminet: {determinants: 2}}]\nmolecules: [h, h]\n"
      "optim: [adam, {type: adam, lr: 0.01}]\n",
      {}, "cmp.yaml");
  const std::string err = testing::internal::GetCapturedStderr() + testing::internal::GetCapturedStdout();
  ASSERT_EQ(spec.cells.size(), 8u);
  EXPECT_EQ(spec.cells.back().id, "ferminet-2__h-2__adam-2");
  EXPECT_NE(err.find("compare: 'ansatze[0]' and 'ansatze[1]' are both labelled 'ferminet': the later one's cells and "
                     "rows are called 'ferminet-2'; give the entries label: keys to name them"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("'molecules[0]' and 'molecules[1]' are both labelled 'h': the later one's cells and rows are "
                     "called 'h-2'; the two entries are the same, so its cells repeat the other's runs with the same "
                     "seed (not independent replicas)"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("'optim[0]' and 'optim[1]' are both labelled 'adam'"), std::string::npos) << err;
}

// An anion's CCSD(T) reference in a basis without diffuse functions is warned of (H- in cc-pVDZ
// lies 58 mEh above the exact energy, and VMC showed "below the reference": a user audit).
TEST(CompareReferences, AnAnionsReferenceInABasisWithoutDiffuseFunctionsIsWarnedOf) {
  const std::string out = (fs::temp_directory_path() / "nnvmc_spec_anion").string();
  fs::remove_all(out);
  const auto spec = parse_compare_spec("ansatze: [{type: hf}]\nmolecules: [{molecule: h, charge: -1, spin: 0}]\n",
                                       {"output=" + out, "references=ccsd_t"}, "cmp.yaml");
  testing::internal::CaptureStdout();  // (the log's sink: stdout in tests, stderr in the app)
  testing::internal::CaptureStderr();
  const auto refs = compute_references(spec);
  const std::string err = testing::internal::GetCapturedStderr() + testing::internal::GetCapturedStdout();
  ASSERT_EQ(refs.size(), 1u);
  EXPECT_EQ(spec.molecules[0].label, "h_anion");  // (it was "h", and "h-2" beside neutral H)
  EXPECT_GT(refs[0].energy, -0.5);  // (exact: -0.52775)
  EXPECT_NE(err.find("is an anion, and reference_basis cc-pvdz has no diffuse functions"), std::string::npos) << err;
  fs::remove_all(out);
  // bases with diffuse functions by name, also as a file's path (a review: a path warned)
  for (const std::string& basis : {std::string("aug-cc-pVDZ"), std::string("6-31+G*"),
                                  scf::default_basis_dir() + "/aug-cc-pvdz.nw"}) {
    const auto diffuse = parse_compare_spec("ansatze: [{type: hf}]\nmolecules: [{molecule: h, charge: -1, spin: 0}]\n",
                                            {"output=" + out, "references=ccsd_t", "reference_basis=" + basis},
                                            "cmp.yaml");
    testing::internal::CaptureStdout();
    testing::internal::CaptureStderr();
    (void)compute_references(diffuse);
    const std::string quiet = testing::internal::GetCapturedStderr() + testing::internal::GetCapturedStdout();
    EXPECT_EQ(quiet.find("is an anion"), std::string::npos) << basis << "\n" << quiet;
    fs::remove_all(out);
  }
}

TEST(CompareReferences, FileReferencesAndCcsdTInTheReferenceBasis) {
  const std::string out = (fs::temp_directory_path() / "nnvmc_spec_refs").string();
  fs::remove_all(out);
  auto spec = parse_compare_spec(kTwoSizes, {"output=" + out, "references=ccsd_t"}, "cmp.yaml");
  auto known = known_references(spec);  // (compare --list: nothing computed yet)
  ASSERT_EQ(known.size(), 2u);
  EXPECT_EQ(known[0].kind, "none");
  EXPECT_EQ(known[1].label, "CCSD(T)/cc-pvdz (nnvmc ccsd), computed when the comparison runs");
  EXPECT_TRUE(std::isnan(known[1].energy));
  EXPECT_FALSE(fs::exists(out));
  auto refs = compute_references(spec);
  ASSERT_EQ(refs.size(), 2u);
  EXPECT_EQ(refs[0].kind, "none");  // H: open shell, no closed-shell CCSD(T)
  EXPECT_TRUE(std::isnan(refs[0].energy));
  EXPECT_EQ(refs[1].kind, "ccsd_t");
  EXPECT_EQ(refs[1].label, "CCSD(T)/cc-pvdz (nnvmc ccsd)");
  // Two electrons: CCSD is full CI in the basis; He/cc-pVDZ FCI = -2.887594831 Eh.
  EXPECT_NEAR(refs[1].energy, -2.887594831, 2e-6);
  EXPECT_TRUE(fs::exists(out + "/references.json"));
  EXPECT_DOUBLE_EQ(compute_references(spec)[1].energy, refs[1].energy);  // from the cache
  known = known_references(spec);
  EXPECT_DOUBLE_EQ(known[1].energy, refs[1].energy);
  EXPECT_EQ(known[1].label, refs[1].label);
  {  // a damaged cache entry (no label) is computed again, not read
    nlohmann::json cache = nlohmann::json::parse(std::ifstream(out + "/references.json"));
    cache["he"].erase("label");
    std::ofstream(out + "/references.json") << cache.dump();
    EXPECT_TRUE(std::isnan(known_references(spec)[1].energy));
  }
  spec = parse_compare_spec(kTwoSizes, {"output=" + out}, "cmp.yaml");  // auto: the files' e_ref
  refs = compute_references(spec);
  EXPECT_EQ(refs[0].kind, "e_ref");
  EXPECT_DOUBLE_EQ(refs[0].energy, -0.5);
  EXPECT_DOUBLE_EQ(refs[1].energy, -2.903724377);
  EXPECT_EQ(refs[1].label, "exact nonrelativistic (Pekeris/Drake)");
  refs = compute_references(parse_compare_spec(kTwoSizes, {"output=" + out, "references=exact"}, "cmp.yaml"));
  ASSERT_EQ(refs.size(), 2u);  // exact: the files' e_ref only, nothing computed
  EXPECT_EQ(refs[0].kind, "e_ref");
  EXPECT_DOUBLE_EQ(refs[0].energy, -0.5);
  EXPECT_DOUBLE_EQ(refs[1].energy, -2.903724377);
  // An unknown reference basis is refused when the file is read, so before `nnvmc compare`
  // makes the output directory (it used to fail after the directory and its lock file were made).
  const std::string bad_basis = error_of(kTwoSizes, {"references=ccsd_t", "reference_basis=nosuchbasis"});
  EXPECT_NE(bad_basis.find("'reference_basis' (molecule 'he')"), std::string::npos) << bad_basis;
}

// Every comparison file the repository ships parses, and names only registered ansätze.
TEST(CompareSpec, EveryShippedComparisonFileParses) {
  const fs::path dir = fs::path(NNVMC_SOURCE_DIR) / "configs" / "compare";
  int n = 0;
  for (const auto& f : fs::directory_iterator(dir)) {
    if (f.path().extension() != ".yaml") continue;
    CompareSpec spec;
    ASSERT_NO_THROW(spec = load_compare_spec(f.path().string())) << f.path();
    EXPECT_FALSE(spec.cells.empty()) << f.path();
    const auto names = nnvmc::model_registry().names();
    for (const auto& c : spec.cells)
      EXPECT_NE(std::find(names.begin(), names.end(), c.config.model.type), names.end()) << c.id;
    ++n;
  }
  EXPECT_GE(n, 1);
}

// The published-size model files (configs/models/) hold a `model:` section only, so a comparison
// takes them as ansatz entries (they used to be bare model blocks that nothing could load).
TEST(CompareSpec, ThePublishedSizeModelFilesAreAnsatzEntries) {
  const fs::path dir = fs::path(NNVMC_SOURCE_DIR) / "configs" / "models";
  std::string ansatze;
  int n = 0;
  for (const auto& f : fs::directory_iterator(dir))
    if (f.path().extension() == ".yaml") ansatze += "  - " + f.path().string() + "\n", ++n;
  ASSERT_GE(n, 3);
  const CompareSpec spec =
      parse_compare_spec("ansatze:\n" + ansatze + "molecules: [he]\niterations: 2\nwalkers: 4\n", {}, "c.yaml");
  ASSERT_EQ(spec.cells.size(), static_cast<std::size_t>(n));
  for (const auto& c : spec.cells) {
    EXPECT_NE(c.id.find(c.config.model.type + "_default"), std::string::npos) << c.id;
    EXPECT_EQ(resolve_molecules(c.config.system).at(0).name, "he") << c.id;
  }
}

// Two cells never share a directory (found by a user audit: an ansatz labelled "x__h2" on h2
// and one labelled "x" on a molecule named "h2__h2" both became cells/x__h2__h2, and one cell's
// energy was reported in the other's row). Repeated labels stay apart from labels that already
// carry the suffix.
TEST(CompareSpec, TwoCellsNeverShareADirectory) {
  const auto clash = error_of(
      "ansatze:\n  - {type: ferminet, label: x__h2}\n  - {type: hf, label: x}\n"
      "molecules:\n  - h2\n  - {atoms: [[H, 0, 0, 0], [H, 0, 0, 1.6]], units: bohr, name: h2__h2}\n");
  EXPECT_NE(clash.find("would share the directory cells/x__h2__h2"), std::string::npos) << clash;
  const auto spec = parse_compare_spec(
      "ansatze:\n  - {type: hf, label: x}\n  - {type: hf, label: x}\n  - {type: hf, label: x-2}\n"
      "molecules: [h2]\n", {}, "cmp.yaml");
  ASSERT_EQ(spec.ansatze.size(), 3u);
  EXPECT_EQ(spec.ansatze[0], "x");
  EXPECT_EQ(spec.ansatze[1], "x-3");
  EXPECT_EQ(spec.ansatze[2], "x-2");
}

// `iterations: 0` evaluates every cell untrained (found by a session: a comparison of `hf`
// ansätze alone refused it, although those cannot train).
TEST(CompareSpec, ZeroIterationsEvaluatesEveryCellUntrained) {
  const auto spec = parse_compare_spec(
      "ansatze: [{type: hf}, {type: ferminet}]\nmolecules: [h2]\niterations: 0\n", {}, "cmp.yaml");
  ASSERT_EQ(spec.cells.size(), 2u);
  ASSERT_TRUE(spec.iterations.has_value());
  EXPECT_EQ(*spec.iterations, 0);
  for (const auto& c : spec.cells) EXPECT_EQ(c.config.optim.iterations, 0) << c.id;
  EXPECT_FALSE(parse_compare_spec("ansatze: [{type: hf}]\nmolecules: [h2]\n", {}, "cmp.yaml").iterations);
}

// A bad run setting in the file's base: block or in an ansatz entry names its line, or the
// override that gave it (found by a user audit: each was blamed on "(cell ...):1:").
TEST(CompareSpec, BadSettingsInBaseOrAnAnsatzNameTheirLineOrOverride) {
  const std::string file =
      "ansatze:\n  - {type: ferminet, ferminet: {determinants: one}}\nmolecules: [h2]\n"
      "base:\n  sampler: {burn_in: ten}\n";
  EXPECT_EQ(error_of(file), "cmp.yaml:5: 'sampler.burn_in' must be an integer, got 'ten'");
  EXPECT_EQ(error_of(file, {"base.sampler.burn_in=abc"}),
            "override 'base.sampler.burn_in=abc': 'sampler.burn_in' must be an integer, got 'abc'");
  EXPECT_EQ(error_of(file, {"base.sampler.burn_in=3"}), "cmp.yaml:2: 'model.ferminet.determinants' must be an integer, got 'one'");
  const auto unknown = error_of("ansatze:\n  - {type: ferminet, bogus: 1}\nmolecules: [h2]\n");
  EXPECT_EQ(unknown.rfind("cmp.yaml:2: 'ansatze[0]': unknown key 'bogus'", 0), 0u) << unknown;
}

// Out-of-range budgets name their line or override (they named the key alone).
TEST(CompareSpec, OutOfRangeBudgetsNameTheirLineOrOverride) {
  EXPECT_EQ(error_of("ansatze: [{type: ferminet}]\nmolecules: [h2]\niterations: -2\n"),
            "cmp.yaml:3: 'iterations' must be >= 0 (0: each cell is evaluated untrained)");
  EXPECT_EQ(error_of("ansatze: [{type: ferminet}]\nmolecules: [h2]\niterations: 0\nminutes: 5\n"),
            "cmp.yaml:4: 'minutes' must be 0 with 'iterations: 0' (no cell trains)");
  EXPECT_EQ(error_of("ansatze: [{type: ferminet}]\nmolecules: [h2]\n", {"walkers=0"}),
            "override 'walkers=0': 'walkers' must be > 0");
  // an override that empties a list is named (it was "cmp.yaml:1:", a line of the file)
  EXPECT_EQ(error_of("ansatze: [{type: ferminet}]\nmolecules: [h2]\n", {"molecules=[]"}),
            "override 'molecules=[]': 'molecules' must not be empty");
}

// An override of what an axis varies is refused (a user audit: it won in every cell, whose ids
// and optim column named the axis entries), and an optim entry's own iteration count is its
// cells' (it was overwritten by the comparison's).
TEST(CompareSpec, AnOverrideOfAnAxisSettingIsRefusedAndAnOptimEntrysIterationsAreKept) {
  const auto e = error_of(kTwoSizes + "optim: [adam, sr]\noverrides: [optim.type=minsr]\n");
  EXPECT_NE(e.find("override 'optim.type=minsr' (overrides:) sets optim.type, which the comparison's 'optim' axis "
                   "varies"),
            std::string::npos)
      << e;
  const auto per_ansatz = error_of(
      "ansatze: [{type: ferminet, overrides: [run.dtype=float32]}]\nmolecules: [h]\ndtype: [float64, float32]\n");
  EXPECT_NE(per_ansatz.find("sets run.dtype, which the comparison's 'dtype' axis varies"), std::string::npos)
      << per_ansatz;
  // without the axis, the override is a setting of every cell
  EXPECT_EQ(parse_compare_spec(kTwoSizes + "overrides: [optim.type=minsr]\n", {}, "cmp.yaml").cells.at(0).config.optim.type,
            "minsr");
  const auto spec = parse_compare_spec(
      kTwoSizes + "optim: [{type: adam, label: long, iterations: 50}, {type: adam, label: short}]\n", {}, "cmp.yaml");
  for (const auto& c : spec.cells) EXPECT_EQ(c.config.optim.iterations, c.optim == "long" ? 50 : 5) << c.id;
}

// A CCSD that does not converge (a stretched N2 in STO-3G) leaves that molecule without a
// reference and the comparison going (it stopped the whole comparison with "CCSD did not converge").
TEST(CompareSpec, AReferenceCcsdThatDoesNotConvergeLeavesThatMoleculeWithoutAReference) {
  const std::string out = (fs::temp_directory_path() / "nnvmc_spec_no_ccsd").string();
  fs::remove_all(out);
  const auto spec = parse_compare_spec(
      "ansatze: [{type: ferminet}]\nmolecules: [{molecule: n2, geometry: [[0, 0, 0], [0, 0, 5.0]], units: bohr, "
      "name: n2s}]\nreferences: ccsd_t\nreference_basis: sto-3g\noutput: " + out + "\n",
      {}, "cmp.yaml");
  const auto refs = compute_references(spec);
  ASSERT_EQ(refs.size(), 1u);
  EXPECT_EQ(refs[0].kind, "none");
  EXPECT_FALSE(std::isfinite(refs[0].energy));
  EXPECT_NE(refs[0].label.find("CCSD/sto-3g failed (CCSD did not converge in 100 iterations (last |dE| = "), std::string::npos)
      << refs[0].label;
  fs::remove_all(out);
}

// A cell of a molecule whose file gives a reference energy is the same cell whether its config
// names the file, holds the geometry without e_ref (as cells were written before inline molecules
// carried it) or with it: the comparison scores against its own references (a review: such cells
// were refused as changed after inline entries began carrying e_ref).
TEST(CompareSpec, ACellIsTheSameCellWithOrWithoutTheMoleculeFilesReferenceEnergy) {
  const auto spec = parse_compare_spec("ansatze: [{type: ferminet}]\nmolecules: [h2]\noutput: /tmp/nnvmc_spec_out\n", {},
                                       "cmp.yaml");
  const Config now = spec.cells.at(0).config;
  EXPECT_FALSE(resolve_molecules(now.system).at(0).e_ref.has_value());  // (not in the cell's config)
  const System h2 = resolve_molecules(parse_config("system: {molecule: h2}", {}, "c.yaml").system).at(0);
  ASSERT_TRUE(h2.e_ref.has_value());
  for (const bool with_reference : {false, true}) {
    System s = h2;
    if (!with_reference) s.e_ref.reset();
    Config before = now;
    before.system = SystemConfig{};
    before.system.molecules = InlineYaml{"[" + inline_molecule_entry(s, "h2") + "]"};
    EXPECT_EQ(cell_identity(before), cell_identity(now)) << with_reference;
  }
  Config named = now;  // a cell.yaml that names the file
  named.system = SystemConfig{};
  named.system.molecule = InlineYaml{"h2"};
  EXPECT_EQ(cell_identity(named), cell_identity(now));
}

// A comparison on a machine whose other runnable tasks fill the CPUs it may use says its timings
// may depend on that load (a user audit: cells trained 8x slower per iteration on a busy machine,
// unsaid); on one with a CPU to spare, nothing.
TEST(CompareRunner, ABusyMachineIsWarnedOfOnlyWhenOtherTasksFillItsCpus) {
  EXPECT_EQ(nnvmc::compare::busy_machine_warning(1, 2, false), "");
  EXPECT_EQ(nnvmc::compare::busy_machine_warning(5, 0, false), "");  // (CPUs unknown)
  const std::string w = nnvmc::compare::busy_machine_warning(2, 2, true);
  EXPECT_NE(w.find("2 other runnable tasks on the 2 CPUs this process may use"), std::string::npos) << w;
  EXPECT_NE(w.find("with a minutes budget how far they train"), std::string::npos) << w;
  EXPECT_EQ(nnvmc::compare::busy_machine_warning(3, 2, false).find("minutes"), std::string::npos);
}
