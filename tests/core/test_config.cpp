#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <sstream>

#include "core/config.hpp"
#include "core/config_reference.hpp"
#include "core/config_yaml.hpp"
#include "common/text.hpp"
#include "core/errors.hpp"
#include "core/system.hpp"

using namespace nnvmc;
using test::contains;

namespace {
std::string error_of(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
  try {
    parse_config(yaml, overrides, "c.yaml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(Config, DefaultsSuitAMinimalConfig) {
  const Config c = parse_config("", {}, "c.yaml");
  EXPECT_EQ(c.model.type, "ferminet");
  EXPECT_FALSE(c.model.ferminet.hidden_dims.has_value());  // sized for the molecule
  EXPECT_FALSE(c.model.ferminet.determinants.has_value());
  EXPECT_EQ(c.sampler.walkers, 1024);
  EXPECT_DOUBLE_EQ(c.optim.clip_width, 5.0);
  EXPECT_EQ(c.hamiltonian.laplacian, "forward");  // the fastest exact method
  EXPECT_DOUBLE_EQ(c.optim.lr, 3e-3);             // adam
}

// `optim: {type: spring}` alone is the shipped SPRING setting (configs/runs/*_spring.yaml):
// lr 0.1 with the Euclidean step bound 0.01; an explicit lr still wins, and adam keeps 3e-3.
TEST(Config, NaturalGradientOptimizersDefaultToTheShippedSpringSetting) {
  for (const char* type : {"spring", "sr", "minsr"}) {
    const Config c = parse_config(std::string("optim: {type: ") + type + "}", {}, "c.yaml");
    EXPECT_DOUBLE_EQ(c.optim.lr, 0.1) << type;
    EXPECT_EQ(c.optim.sr.norm, "euclidean") << type;
    EXPECT_DOUBLE_EQ(c.optim.sr.norm_constraint, 0.01) << type;
  }
  EXPECT_DOUBLE_EQ(parse_config("optim: {type: spring, lr: 0.02}", {}, "c.yaml").optim.lr, 0.02);
  EXPECT_DOUBLE_EQ(parse_config("", {"optim.type=spring", "optim.lr=0.03"}, "c.yaml").optim.lr, 0.03);
  EXPECT_DOUBLE_EQ(parse_config("", {"optim.type=spring"}, "c.yaml").optim.lr, 0.1);
  // The resolved config states the value, so reading it back does not depend on the rule.
  const Config spring = parse_config("optim: {type: spring}", {}, "c.yaml");
  EXPECT_EQ(to_yaml(parse_config(to_yaml(spring), {}, "resolved.yaml")), to_yaml(spring));
}

// `optim: {type: kfac}` alone is FermiNet's and DeepQMC's K-FAC schedule, 0.05 / (1 + t / 10000),
// as configs/runs/lih_ferminet_kfac.yaml sets it (the delay used to stay at Adam's 1000).
TEST(Config, KfacAloneTakesTheScheduleOfFermiNetAndDeepQmc) {
  const Config k = parse_config("optim: {type: kfac}", {}, "c.yaml");
  EXPECT_DOUBLE_EQ(k.optim.lr, 0.05);
  EXPECT_DOUBLE_EQ(k.optim.lr_delay, 10000);
  EXPECT_DOUBLE_EQ(parse_config("optim: {type: kfac, lr_delay: 500}", {}, "c.yaml").optim.lr_delay, 500);
  EXPECT_DOUBLE_EQ(parse_config("", {"optim.type=kfac", "optim.lr_delay=300"}, "c.yaml").optim.lr_delay, 300);
  for (const char* type : {"adam", "sr", "minsr", "spring"})
    EXPECT_DOUBLE_EQ(parse_config(std::string("optim: {type: ") + type + "}", {}, "c.yaml").optim.lr_delay, 1000) << type;
  const Config preset = load_config(std::string(NNVMC_SOURCE_DIR) + "/configs/runs/lih_ferminet_kfac.yaml");
  EXPECT_DOUBLE_EQ(preset.optim.lr, k.optim.lr);
  EXPECT_DOUBLE_EQ(preset.optim.lr_delay, k.optim.lr_delay);
  EXPECT_EQ(to_yaml(parse_config(to_yaml(k), {}, "resolved.yaml")), to_yaml(k));
}

// The determinant-balance weight (Orbformer's penalty) defaults by optimizer and the resolved
// config states the weight the run used.
TEST(Config, DeterminantBalanceDefaultsByOptimizerAndIsWrittenOut) {
  for (const char* type : {"adam", "sr", "minsr", "spring", "kfac"}) {
    const Config c = parse_config(std::string("optim: {type: ") + type + "}", {}, "c.yaml");
    ASSERT_TRUE(c.optim.determinant_balance.has_value()) << type;
    EXPECT_DOUBLE_EQ(*c.optim.determinant_balance, std::string(type) == "adam" ? kDeterminantBalanceDefault : 0.0);
    EXPECT_TRUE(contains(to_yaml(c), "determinant_balance")) << type;
  }
  const Config given = parse_config("optim: {type: spring, determinant_balance: 0.01}", {}, "c.yaml");
  EXPECT_DOUBLE_EQ(*given.optim.determinant_balance, 0.01);
}

// HF pretraining is on by default for the ansätze whose orbitals start random, off for PauliNet
// (HF baseline built in), the bare HF determinant and fine-tuning; a given value always wins.
TEST(Config, PretrainingDefaultsOnForAnsatzeThatLearnOrbitalsFromScratch) {
  for (const char* type : {"ferminet", "psiformer", "orbformer"})
    EXPECT_EQ(parse_config(std::string("model: {type: ") + type + "}", {}, "c.yaml").pretrain.steps,
              kPretrainSteps)
        << type;
  EXPECT_EQ(parse_config("", {}, "c.yaml").pretrain.steps, kPretrainSteps);  // ferminet
  EXPECT_DOUBLE_EQ(parse_config("", {}, "c.yaml").pretrain.lr, 3e-3);
  for (const char* type : {"paulinet", "hf"})
    EXPECT_EQ(parse_config(std::string("model: {type: ") + type + "}", {}, "c.yaml").pretrain.steps, 0) << type;
  EXPECT_EQ(parse_config("model: {init_from: runs/x/checkpoint.h5}", {}, "c.yaml").pretrain.steps, 0);
  // given both, the config is refused (`nnvmc config` said nothing, `train` refused it later)
  EXPECT_TRUE(contains(error_of("model: {init_from: runs/x/checkpoint.h5}\npretrain: {steps: 20}\n"),
                       "'pretrain.steps' must be 0 with model.init_from"));
  EXPECT_EQ(parse_config("pretrain: {steps: 0}", {}, "c.yaml").pretrain.steps, 0);
  EXPECT_EQ(parse_config("", {"pretrain.steps=20"}, "c.yaml").pretrain.steps, 20);
  EXPECT_EQ(parse_config("pretrain: {basis: sto-3g}", {}, "c.yaml").pretrain.steps, kPretrainSteps);
  // The resolved config states the value, so reading it back does not depend on the rule.
  const Config paulinet = parse_config("model: {type: paulinet}", {}, "c.yaml");
  EXPECT_EQ(to_yaml(parse_config(to_yaml(paulinet), {}, "resolved.yaml")), to_yaml(paulinet));
}

TEST(Config, FermiNetSizeFollowsTheElectronCountUnlessGiven) {
  const FermiNetOptions unset;
  auto dims = [](const FermiNetOptions& o) { return *o.hidden_dims; };
  using Dims = std::vector<std::array<int, 2>>;
  EXPECT_EQ(dims(unset.sized_for(1)), Dims(3, {32, 8}));     // H
  EXPECT_EQ(dims(unset.sized_for(2)), Dims(3, {32, 8}));     // He
  EXPECT_EQ(dims(unset.sized_for(4)), Dims(3, {64, 16}));    // LiH
  EXPECT_EQ(dims(unset.sized_for(10)), Dims(4, {160, 32}));  // H2O, CH4
  EXPECT_EQ(dims(unset.sized_for(28)), Dims(4, {256, 32}));  // C4H4: the published size
  EXPECT_EQ(*unset.sized_for(2).determinants, 4);
  EXPECT_EQ(*unset.sized_for(4).determinants, 8);
  EXPECT_EQ(*unset.sized_for(10).determinants, 16);
  FermiNetOptions given;
  given.hidden_dims = Dims(1, {5, 3});
  given.determinants = 2;
  EXPECT_EQ(dims(given.sized_for(28)), Dims(1, {5, 3}));
  EXPECT_EQ(*given.sized_for(28).determinants, 2);
}

TEST(Config, PsiformerDefaultsFollowThePaperAndItsOptionsRoundTrip) {
  const auto& d = parse_config("", {}, "c.yaml").model.psiformer;
  EXPECT_EQ(d.layers, 4);
  EXPECT_EQ(d.heads, 4);
  EXPECT_EQ(d.head_dim, 64);
  EXPECT_EQ(d.mlp_hidden_dims, std::vector<int>{256});
  EXPECT_EQ(d.determinants, 16);
  EXPECT_TRUE(d.layer_norm);
  EXPECT_EQ(d.jastrow, "simple_ee");
  const Config c = parse_config(
      "model: {type: psiformer, psiformer: {layers: 2, heads: 2, head_dim: 8, mlp_hidden_dims: [32, 16],"
      " layer_norm: false, jastrow: none}}\n",
      {"model.psiformer.determinants=4"}, "c.yaml");
  const Config back = parse_config(to_yaml(c), {}, "resolved.yaml");
  for (const Config* x : {&c, &back}) {
    const auto& p = x->model.psiformer;
    EXPECT_EQ(x->model.type, "psiformer");
    EXPECT_EQ(p.layers, 2);
    EXPECT_EQ(p.mlp_hidden_dims, (std::vector<int>{32, 16}));
    EXPECT_EQ(p.determinants, 4);
    EXPECT_FALSE(p.layer_norm);
    EXPECT_EQ(p.jastrow, "none");
  }
  EXPECT_TRUE(contains(error_of("model: {psiformer: {jastrow: pade}}\n"), "model.psiformer.jastrow"));
  EXPECT_TRUE(contains(error_of("model: {psiformer: {mlp_hidden_dims: [0]}}\n"), "model.psiformer.mlp_hidden_dims"));
}

TEST(Config, ValuesAndOverridesAreRead) {
  const Config c = parse_config(
      "system: {molecule: he}\nmodel: {ferminet: {hidden_dims: [[32, 8], [32, 8]], determinants: 4}}\n",
      {"sampler.walkers=64", "optim.lr=0.01", "run.seed=7"}, "c.yaml");
  EXPECT_EQ(c.system.molecule->yaml, "he");
  EXPECT_EQ(c.model.ferminet.hidden_dims->size(), 2u);
  EXPECT_EQ((*c.model.ferminet.hidden_dims)[1][1], 8);
  EXPECT_EQ(c.sampler.walkers, 64);
  EXPECT_DOUBLE_EQ(c.optim.lr, 0.01);
  EXPECT_EQ(c.run.seed, 7u);
}

// A YAML alias (*x) is the same node as its anchor (&x): an override of one path must not
// change the other. A document that is not a mapping is a clear error, not a yaml-cpp throw.
TEST(Config, OverridesChangeOnlyTheirPathAlsoThroughYamlAliases) {
  const std::string text =
      "optim: {type: sr, sr: &nat {damping: 0.001}, kfac: *nat}\n"
      "eval: {steps: &n 100}\n"
      "pretrain: {steps: *n}\n";
  const Config c = parse_config(text, {"eval.steps=0", "optim.kfac.damping=0.5"}, "anchors.yaml");
  EXPECT_EQ(c.eval.steps, 0);
  EXPECT_EQ(c.pretrain.steps, 100);  // the alias keeps the anchor's value
  EXPECT_DOUBLE_EQ(c.optim.kfac.damping, 0.5);
  EXPECT_DOUBLE_EQ(c.optim.sr.damping, 0.001);
  EXPECT_THROW(parse_config("just a scalar", {"eval.steps=3"}, "scalar.yaml"), ConfigError);
}

// `sampler={walkers: 8}` changes the walkers and keeps the file's other sampler keys (it used to
// replace the whole section, so they silently went back to their defaults); a non-mapping value,
// or a mapping where the file has none, replaces; a molecule key inside `system={...}` replaces
// the file's other molecule keys as `system.molecule=...` does.
TEST(Config, AMappingOverrideMergesIntoTheSectionItNames) {
  const std::string text =
      "system: {molecules: [h2, he]}\n"
      "sampler: {walkers: 16, steps_per_iteration: 3, burn_in: 7}\n"
      "model: {ferminet: {hidden_dims: [[8, 4]], determinants: 2}}\n";
  const Config c = parse_config(text, {"sampler={walkers: 8, burn_in: 2}", "model={ferminet: {determinants: 3}}"},
                                "merge.yaml");
  EXPECT_EQ(c.sampler.walkers, 8);
  EXPECT_EQ(c.sampler.burn_in, 2);
  EXPECT_EQ(c.sampler.steps_per_iteration, 3);
  EXPECT_EQ(c.model.ferminet.determinants, 3);
  ASSERT_TRUE(c.model.ferminet.hidden_dims.has_value());
  EXPECT_EQ((*c.model.ferminet.hidden_dims)[0][0], 8);
  EXPECT_TRUE(c.system.molecules.has_value());
  const Config one = parse_config(text, {"system={molecule: lih}"}, "merge.yaml");
  EXPECT_FALSE(one.system.molecules.has_value());
  ASSERT_TRUE(one.system.molecule.has_value());
  EXPECT_EQ(one.system.molecule->yaml, "lih");
  const Config list = parse_config(text, {"model.ferminet.hidden_dims=[[4, 2], [4, 2]]"}, "merge.yaml");
  EXPECT_EQ(list.model.ferminet.hidden_dims->size(), 2u);  // a list replaces
  EXPECT_TRUE(contains(error_of(text, {"sampler={walker: 8}"}), "sampler.walker"));  // merged keys are checked
}

// A bracketed, braced or quoted value is the whole text after '=': what follows it was dropped
// ("[h2, he], li" trained h2 and he), and is refused now; the same values alone still parse.
TEST(Config, TextAfterABracketedOrQuotedOverrideValueIsRefused) {
  const std::string text = "system: {molecules: [h2, he]}\n";
  for (const char* bad : {"system.molecules=[h2, he], li", "model.ferminet.hidden_dims=[[16,4]] [[8,2]]",
                          "sampler={walkers: 8} x", "system.molecules=[h2,he] system.molecule=li",
                          "run.output='a' b"}) {
    const auto e = error_of(text, {bad});
    EXPECT_TRUE(contains(e, "text after the")) << bad << ": " << e;
    EXPECT_TRUE(contains(e, bad)) << e;
  }
  const Config c = parse_config(text, {"system.molecules=[h2, he, li]", "sampler={walkers: 8}  ", "run.output='a b'",
                                       "model.ferminet.hidden_dims=[[16, 4]] # a comment"},
                                "c.yaml");
  EXPECT_TRUE(contains(c.system.molecules->yaml, "li")) << c.system.molecules->yaml;
  EXPECT_EQ(c.sampler.walkers, 8);
  EXPECT_EQ(c.run.output, "a b");
  EXPECT_EQ(c.model.ferminet.hidden_dims->size(), 1u);
}

TEST(Config, UnknownKeyNamesPathLineAndSuggestion) {
  const auto e = error_of("sampler:\n  walker: 10\n");
  EXPECT_TRUE(contains(e, "sampler.walker")) << e;
  EXPECT_TRUE(contains(e, "c.yaml:2")) << e;
  EXPECT_TRUE(contains(e, "did you mean 'sampler.walkers'")) << e;
}

// Out-of-range values name their line, or the override that gave them, as type errors do (they
// named the key alone).
TEST(Config, OutOfRangeValuesNameTheirLineOrOverride) {
  // a malformed layer list says what a layer is (it said "must be a list" of a list)
  EXPECT_TRUE(contains(error_of("model:\n  ferminet: {hidden_dims: [[32]]}\n"),
                       "c.yaml:2: 'model.ferminet.hidden_dims' must be a list of [one-electron, two-electron] width "
                       "pairs, one per layer (e.g. [[32, 8], [32, 8]]), got '[[32]]'"));
  EXPECT_EQ(error_of("system: {molecule: he}\nsampler:\n  walkers: 8\n  steps_per_iteration: 0\n"),
            "c.yaml:4: 'sampler.steps_per_iteration' must be > 0");
  EXPECT_EQ(error_of("sampler: {walkers: 8}\n", {"optim.lr=0.1", "optim.lr=0"}), "override 'optim.lr=0': 'optim.lr' must be > 0");
  EXPECT_EQ(error_of("", {"sampler={walkers: -1}"}), "override 'sampler={walkers: -1}': 'sampler.walkers' must be > 0");
  EXPECT_EQ(error_of("", {"optim.clip_width=-1"}), "override 'optim.clip_width=-1': 'optim.clip_width' must be >= 0 (0: no clipping)");
  EXPECT_EQ(error_of("", {"optim.clip_width=0"}), "");  // (0: not clipped)
  // an override inside the key the message is about is not blamed for it
  const auto both = error_of("system:\n  molecule: h2\n  molecules: [h2]\n", {"system.charge=0"});
  EXPECT_TRUE(contains(both, "'system' has system.molecule and system.molecules")) << both;
  EXPECT_FALSE(contains(both, "override")) << both;
}

// Nested aliases (a "billion laughs" file: each line nine uses of the one before) are checked
// once per anchored node, not once per use: 9^12 uses took hours, the check walked every one (a
// user audit). A duplicate key inside an anchored mapping is still found.
TEST(Config, NestedYamlAliasesAreCheckedOnceNotExpanded) {
  std::string text = "a0: &a0 [x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i <= 12; ++i) {
    const std::string n = std::to_string(i);
    text.append("a").append(n).append(": &a").append(n).append(" [");
    for (int k = 0; k < 9; ++k) text.append(k ? ", *a" : "*a").append(std::to_string(i - 1));
    text += "]\n";
  }
  EXPECT_TRUE(contains(error_of(text), "unknown key 'a0'")) << error_of(text);
  const auto dup = error_of("base: &b {lr: 0.1, lr: 0.2}\noptim: *b\n");
  EXPECT_TRUE(contains(dup, "'lr' given twice")) << dup;
}

TEST(Config, DuplicateKeysAndSecondDocumentsAreErrorsNamingTheLine) {
  // yaml-cpp keeps both entries and lookups see the first: `lr` given twice trained with the first.
  const auto dup = error_of("optim:\n  lr: 0.1\n  iterations: 5\n  lr: 0.01\n");
  EXPECT_TRUE(contains(dup, "c.yaml:4")) << dup;
  EXPECT_TRUE(contains(dup, "'lr' given twice (first on line 2)")) << dup;
  EXPECT_TRUE(contains(error_of("sampler: {walkers: 8}\nsampler: {walkers: 16}\n"), "'sampler' given twice"));
  EXPECT_TRUE(contains(error_of("system:\n  molecules: [{atoms: [[H, 0, 0, 0]], units: bohr, units: angstrom}]\n"),
                       "'units' given twice"));
  // A second document was silently ignored; a trailing '---' with nothing after it is harmless.
  EXPECT_TRUE(contains(error_of("optim: {lr: 0.1}\n---\noptim: {lr: 0.2}\n"), "c.yaml:3: a second YAML document"));
  EXPECT_EQ(error_of("optim: {lr: 0.1}\n---\n"), "");
  EXPECT_TRUE(contains(error_of("", {"optim={lr: 1, lr: 2}"}), "'lr' given twice"));
  // A molecule file is read the same way.
  try {
    parse_molecule_yaml("atoms: [[H, 0, 0, 0], [H, 0, 0, 1.4]]\ncharge: 0\ncharge: 1\n", "h2.yaml");
    ADD_FAILURE() << "duplicate charge accepted";
  } catch (const InputError& e) {
    EXPECT_TRUE(contains(e.what(), "h2.yaml:3: key 'charge' given twice")) << e.what();
  }
}

TEST(Config, UnknownOverrideKeyIsAnError) {
  EXPECT_TRUE(contains(error_of("", {"optim.lrr=3"}), "override 'optim.lrr=3': unknown key 'optim.lrr'"));
  EXPECT_TRUE(contains(error_of("", {"sampler.walkers=many"}), "override 'sampler.walkers=many'"));
  // the file's own unknown keys are still named with their line
  EXPECT_TRUE(contains(error_of("optim:\n  lrr: 3\n", {"sampler.walkers=8"}), "c.yaml:2"));
  EXPECT_TRUE(contains(error_of("", {"nonsense"}), "key.path=value"));
}

TEST(Config, WrongTypeNamesTheKey) {
  const auto e = error_of("sampler: {walkers: many}\n");
  EXPECT_TRUE(contains(e, "sampler.walkers")) << e;
  EXPECT_TRUE(contains(e, "integer")) << e;
}

TEST(Config, NonPositiveWalkersAreRejected) {
  EXPECT_TRUE(contains(error_of("sampler: {walkers: 0}"), "sampler.walkers"));
  EXPECT_TRUE(contains(error_of("sampler: {walkers: -5}"), "sampler.walkers"));
}

TEST(Config, MalformedYamlNamesTheLine) {
  const auto e = error_of("sampler:\n  walkers: [1, 2\n");
  EXPECT_TRUE(contains(e, "malformed YAML")) << e;
  EXPECT_TRUE(contains(e, "c.yaml:")) << e;
}

TEST(Config, ResolvedYamlReadsBackToTheSameConfig) {
  const Config a = parse_config("system: {molecule: [[H, 0, 0, 0]], spin: 1}", {"optim.iterations=5"},
                                "c.yaml");
  const Config b = parse_config(to_yaml(a), {}, "resolved.yaml");
  EXPECT_EQ(to_yaml(a), to_yaml(b));
  EXPECT_EQ(b.optim.iterations, 5);
  ASSERT_TRUE(b.system.spin.has_value());
  EXPECT_EQ(*b.system.spin, 1);
}

// config.yaml (and the settings a resume warns about) show each number as written, 0.3 rather
// than yaml-cpp's 0.29999999999999999, and still read back to the identical double.
TEST(Config, ResolvedYamlWritesTheShortestNumberThatReadsBackExactly) {
  const Config a = parse_config("sampler: {step_size: 0.3}\noptim: {lr: 0.003}", {}, "c.yaml");
  const std::string text = to_yaml(a);
  EXPECT_TRUE(contains(text, "step_size: 0.3 ")) << text;
  EXPECT_TRUE(contains(text, "lr: 0.003 ")) << text;
  EXPECT_FALSE(contains(text, "0000000")) << text;
  Config c = a;
  c.sampler.step_size = 0.1 + 0.2;  // 0.30000000000000004: needs all 17 digits
  c.optim.lr = 1.0 / 3.0;
  const Config back = parse_config(to_yaml(c), {}, "resolved.yaml");
  EXPECT_EQ(back.sampler.step_size, c.sampler.step_size);
  EXPECT_EQ(back.optim.lr, c.optim.lr);
}

TEST(Config, ByteCountsParse) {
  EXPECT_EQ(parse_bytes("2GiB", "k"), 2ull << 30);
  EXPECT_EQ(parse_bytes("500MB", "k"), 500000000ull);
  EXPECT_THROW(parse_bytes("lots", "k"), ConfigError);
}

// An override names a key directly or inside a mapping value; a malformed one names none.
TEST(Config, AnOverrideSetsTheKeysOfItsPathOrOfItsMapping) {
  EXPECT_TRUE(override_sets("sampler.step_size=0.3", "sampler.step_size"));
  EXPECT_TRUE(override_sets("sampler={step_size: 0.3, walkers: 8}", "sampler.step_size"));
  EXPECT_TRUE(override_sets("optim.lr=1", "optim"));
  EXPECT_TRUE(override_sets("system={molecule: h2}", "system.molecule"));
  EXPECT_FALSE(override_sets("system.molecules=[h2]", "system.molecule"));
  EXPECT_FALSE(override_sets("sampler={walkers: 8}", "sampler.step_size"));
  EXPECT_FALSE(override_sets("sampler.step_size_x=1", "sampler.step_size"));
  EXPECT_FALSE(override_sets("sampler={step_size: [", "sampler.step_size"));
}

// Only decimal counts with a byte unit: std::stod's hexadecimal, inf and nan, bit units and
// counts below one byte are refused rather than read as something else.
TEST(Config, ByteCountsThatAreNotPlainDecimalBytesAreRefused) {
  EXPECT_EQ(parse_bytes("1.5 KiB", "k"), 1536ull);
  EXPECT_EQ(parse_bytes("2e3", "k"), 2000ull);
  EXPECT_EQ(parse_bytes("3GIB", "k"), 3ull << 30);
  EXPECT_EQ(parse_bytes("3gib", "k"), 3ull << 30);  // all lower case: bytes (stored configs have "2gb")
  EXPECT_EQ(parse_bytes("512mb", "k"), 512000000ull);
  EXPECT_EQ(parse_bytes("1TB", "k"), 1000000000000ull);
  for (const char* bad : {"0x10MiB", "inf", "nan", "1e400", "0", "0.5", "-1MiB", "5Mb", "2 Gib", "1Kb", "1 MiBs", "1e", ""})
    EXPECT_THROW(parse_bytes(bad, "run.memory_budget"), ConfigError) << bad;
  try {  // a fraction without a unit was read as 1 B
    parse_bytes("1.9", "--memory");
    FAIL() << "1.9 was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("fraction of a byte (bytes are whole); for larger units say so, e.g. 1.9GiB"), std::string::npos) << e.what();
  }
  EXPECT_EQ(parse_bytes("2e3", "k"), 2000ull);  // (a whole count in exponent form is bytes)
  try {
    parse_bytes("5Mb", "--memory");
    FAIL() << "5Mb was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("bits"), std::string::npos) << e.what();
  }
}

// Every run config the repository ships loads, and each config the quick-start demo names
// exists (a .gitignore pattern once kept the demo's config out of clean clones).
TEST(Config, EveryShippedRunConfigAndEveryConfigTheDemoNamesLoad) {
  namespace fs = std::filesystem;
  const fs::path root(NNVMC_SOURCE_DIR);
  int n = 0;
  for (const auto& f : fs::directory_iterator(root / "configs" / "runs")) {
    if (f.path().extension() != ".yaml") continue;
    EXPECT_NO_THROW(load_config(f.path().string())) << f.path();
    ++n;
  }
  EXPECT_GE(n, 5);
  // The published-size model files: a `model:` section, run with every other setting's default.
  for (const char* name : {"ferminet", "psiformer", "paulinet"}) {
    const auto path = root / "configs" / "models" / (std::string(name) + "_default.yaml");
    Config c;
    ASSERT_NO_THROW(c = load_config(path.string(), {"system.molecule=h2"})) << path;
    EXPECT_EQ(c.model.type, name);
  }
  EXPECT_EQ(load_config((root / "configs/models/ferminet_default.yaml").string()).model.ferminet.determinants, 16);
  std::ifstream demo(root / "examples" / "demo.sh");
  const std::string text((std::istreambuf_iterator<char>(demo)), std::istreambuf_iterator<char>());
  const std::regex config_ref(R"(configs/runs/[A-Za-z0-9_]+\.yaml)");
  int named = 0;
  for (std::sregex_iterator it(text.begin(), text.end(), config_ref), end; it != end; ++it, ++named)
    EXPECT_NO_THROW(load_config((root / it->str()).string())) << it->str() << " named by examples/demo.sh";
  EXPECT_GE(named, 1);
}

// ---- Hostile input: one test per row of issue 18's catalogue (config side). ----

namespace {
/// Paths of every mapping in the config ("" for the top level, "optim.sr", ...).
struct StructPaths {
  std::string prefix;
  std::vector<std::string>* out;
  template <class T> void operator()(const char* key, T& field, const char*) {
    if constexpr (config_yaml::has_visit<T>::value) {
      const std::string path = prefix.empty() ? key : prefix + "." + key;
      out->push_back(path);
      StructPaths inner{path, out};
      field.visit(inner);
    }
  }
};

/// YAML text with `key: 1` put into the mapping at `path` (nested flow mappings).
std::string yaml_with_key_at(const std::string& path, const std::string& key) {
  std::string text = "{" + key + ": 1}";
  std::vector<std::string> parts;
  std::stringstream ss(path);
  for (std::string p; std::getline(ss, p, '.');) parts.push_back(p);
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) text = "{" + *it + ": " + text + "}";
  return "# line 1\n" + text + "\n";
}
}  // namespace

TEST(Hostile, UnknownKeyAtEveryNestingLevelIsNamedWithItsPathAndLine) {
  std::vector<std::string> paths{""};
  Config c;
  StructPaths visitor{"", &paths};
  c.visit(visitor);
  EXPECT_GE(paths.size(), 14u);  // top, system, model, model.ferminet, ..., run
  for (const auto& path : paths) {
    const auto full = path.empty() ? std::string("bogus_key") : path + ".bogus_key";
    const auto e = error_of(yaml_with_key_at(path, "bogus_key"));
    EXPECT_TRUE(contains(e, "unknown key '" + full + "'")) << path << ": " << e;
    EXPECT_TRUE(contains(e, "c.yaml:2")) << path << ": " << e;
    // ... and the same as an override.
    EXPECT_TRUE(contains(error_of("", {full + "=1"}), "'" + full + "'")) << full;
  }
}

TEST(Hostile, WrongTypesNameTheKey) {
  EXPECT_TRUE(contains(error_of("sampler: {walkers: [1, 2]}"), "'sampler.walkers' must be an integer"));
  EXPECT_TRUE(contains(error_of("optim: {lr: {a: 1}}"), "'optim.lr' must be a number"));
  EXPECT_TRUE(contains(error_of("optim: {lr: fast}"), "'optim.lr' must be a number"));
  EXPECT_TRUE(contains(error_of("model: {ferminet: {hidden_dims: {a: 1}}}"), "model.ferminet.hidden_dims"));
  EXPECT_TRUE(contains(error_of("model: {ferminet: {hidden_dims: [[8]]}}"), "model.ferminet.hidden_dims"));
  EXPECT_TRUE(contains(error_of("run: {output: [a, b]}"), "'run.output' must be a string"));
  EXPECT_TRUE(contains(error_of("run: {overwrite: maybe}"), "'run.overwrite' must be true or false"));
  EXPECT_TRUE(contains(error_of("sampler: 5"), "'sampler' must be a mapping"));
  EXPECT_TRUE(contains(error_of("- a\n- b\n"), "must be a mapping"));
  EXPECT_TRUE(contains(error_of("sampler: {[1, 2]: 3}"), "not a plain name"));
}

// Found by a user audit: a list as the whole config named the key '' (and with an override
// blamed the override); `walkers:` or `walkers: ~` ran silently with the default; an empty file
// trained the default LiH for 1000 iterations; 8.0 for an integer was "out of range".
TEST(Hostile, EmptyValuesWholeDocumentsAndNonIntegersAreNamedForWhatTheyAre) {
  for (const auto& overrides : {std::vector<std::string>{}, {"sampler.walkers=4"}}) {
    const auto e = error_of("- a\n- b\n", overrides);
    EXPECT_TRUE(contains(e, "c.yaml:1: a run config must be a mapping of sections")) << e;
  }
  EXPECT_TRUE(contains(error_of("sampler: {walkers: }"), "'sampler.walkers' has no value")) << error_of("sampler: {walkers: }");
  EXPECT_TRUE(contains(error_of("sampler:\n  walkers: ~\n"), "c.yaml:2")) << error_of("sampler:\n  walkers: ~\n");
  EXPECT_EQ(error_of("sampler:\nsystem: {molecule: he}\n"), "");  // an empty section: its defaults
  EXPECT_EQ(error_of("system: {molecule: he, spin: ~}"), "");        // an optional key left empty: unset
  for (const char* v : {"8.0", "1e3"})
    EXPECT_TRUE(contains(error_of(std::string("sampler: {walkers: ") + v + "}"), "'sampler.walkers' must be an integer, got '" + std::string(v) + "'"))
        << v << ": " << error_of(std::string("sampler: {walkers: ") + v + "}");
  // a leading zero: octal to yaml-cpp (016 ran 14 walkers; 08 was "not an integer"), decimal to a reader
  for (const char* v : {"08", "016", "-07"})
    EXPECT_TRUE(contains(error_of(std::string("sampler: {walkers: ") + v + "}"),
                         "'sampler.walkers' = " + std::string(v) + ": an integer with a leading zero is ambiguous"))
        << v << ": " << error_of(std::string("sampler: {walkers: ") + v + "}");
  EXPECT_EQ(error_of("sampler: {walkers: 0x10}\nsystem: {molecule: he}\n"), "");  // (hexadecimal is explicit)
  const auto empty = (std::filesystem::temp_directory_path() / "nnvmc_empty_config.yaml").string();
  std::ofstream(empty) << "# only a comment\n";
  try {
    load_config(empty);
    ADD_FAILURE() << "an empty config file was accepted";
  } catch (const ConfigError& e) {
    EXPECT_TRUE(contains(e.what(), "the config file is empty")) << e.what();
  }
  EXPECT_EQ(load_config(empty, {"system.molecule=he"}).system.molecule->yaml, "he");  // settings given after all
  std::filesystem::remove(empty);
}

TEST(Hostile, NegativeZeroAndNonFiniteValuesAreRejected) {
  EXPECT_TRUE(contains(error_of("sampler: {walkers: -5}"), "sampler.walkers"));
  EXPECT_TRUE(contains(error_of("model: {ferminet: {determinants: 0}}"), "model.ferminet.determinants"));
  EXPECT_TRUE(contains(error_of("model: {ferminet: {hidden_dims: []}}"), "model.ferminet.hidden_dims"));
  EXPECT_TRUE(contains(error_of("model: {ferminet: {hidden_dims: [[8, 0]]}}"), "model.ferminet.hidden_dims"));
  EXPECT_TRUE(contains(error_of("sampler: {step_size: 0}"), "sampler.step_size"));
  EXPECT_TRUE(contains(error_of("optim: {lr: -0.1}"), "optim.lr"));
  EXPECT_TRUE(contains(error_of("optim: {iterations: -1}"), "optim.iterations"));
  EXPECT_TRUE(contains(error_of("optim: {minutes: -1}"), "optim.minutes"));
  EXPECT_TRUE(contains(error_of("optim: {beta2: 1}"), "optim.beta2"));
  EXPECT_TRUE(contains(error_of("optim: {epsilon: 0}"), "optim.epsilon"));
  EXPECT_TRUE(contains(error_of("optim: {max_consecutive_failures: 0}"), "optim.max_consecutive_failures"));
  EXPECT_TRUE(contains(error_of("run: {seed: -1}"), "run.seed"));
  for (const char* v : {".nan", ".inf", "-.inf"})
    EXPECT_TRUE(contains(error_of(std::string("optim: {lr: ") + v + "}"), "'optim.lr' must be a finite number")) << v;
  EXPECT_TRUE(contains(error_of("sampler: {target_acceptance: 1.5}"), "sampler.target_acceptance"));
}

// Found by a user audit: run.name=../../x put the run outside run.output's directory. A new run
// from a file is refused; a checkpoint's recorded config is read as it is (parse_config).
TEST(Hostile, RunNameThatIsAPathIsRefused) {
  const auto file = (std::filesystem::temp_directory_path() / "nnvmc_run_name.yaml").string();
  std::ofstream(file) << "system: {molecule: he}\n";
  const auto load_error = [&](const std::string& name) {
    try {
      load_config(file, {"run.name=" + name});
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  for (const char* name : {"../../x", "a/b", "..", "."})
    EXPECT_TRUE(contains(load_error(name), "'run.name' must be a plain name, not a path")) << name << ": " << load_error(name);
  EXPECT_EQ(load_error("lih.2-run_b"), "");
  EXPECT_EQ(error_of("run: {name: a/b}"), "");  // (a recorded config)
  std::filesystem::remove(file);
}

TEST(Hostile, HugeValuesAreRejectedNamingTheKey) {
  EXPECT_TRUE(contains(error_of("sampler: {walkers: 1000000000000}"), "'sampler.walkers' = 1000000000000 is out of range"));
  // a value that rounds to the limit in double (2^64 for the seed) is past it, not "not an integer"
  EXPECT_TRUE(contains(error_of("run: {seed: 18446744073709551616}"), "'run.seed' = 18446744073709551616 is out of range"));
  EXPECT_TRUE(contains(error_of("sampler: {walkers: 2147483648}"), "'sampler.walkers' = 2147483648 is out of range"));
  // a value in range written as a float is not called out of range (a review)
  EXPECT_TRUE(contains(error_of("run: {seed: 0.0}"), "'run.seed' must be an integer"));
  EXPECT_TRUE(contains(error_of("sampler: {walkers: 2147483647.0}"), "'sampler.walkers' must be an integer"));
  EXPECT_TRUE(contains(error_of("model: {ferminet: {determinants: 100000}}"), "model.ferminet.determinants"));
  EXPECT_TRUE(contains(error_of("model: {ferminet: {hidden_dims: [[10000000, 8]]}}"), "model.ferminet.hidden_dims"));
  EXPECT_TRUE(contains(error_of("run: {memory_budget: 1e30GiB}"), "'run.memory_budget' = '1e30GiB' is too large"));
  EXPECT_TRUE(contains(error_of("run: {memory_budget: 5PB}"), "run.memory_budget"));
  EXPECT_TRUE(contains(error_of("run: {seed: 1e400}"), "run.seed"));
}

// docs/settings.md is the settings reference made from the settings' own definitions: a setting
// added, renamed or given another default without regenerating the page fails here.
TEST(Config, TheSettingsReferenceInDocsIsUpToDate) {
  std::ifstream in(std::string(NNVMC_SOURCE_DIR) + "/docs/settings.md");
  const std::string page((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(page == settings_markdown())
      << "docs/settings.md is out of date: regenerate it with 'nnvmc config --markdown > docs/settings.md'";
  std::map<std::string, SettingRow> rows;
  for (const auto& section : setting_reference())
    for (const auto& row : section.rows) {
      EXPECT_FALSE(row.meaning.empty()) << row.key;
      rows[row.key] = row;
    }
  EXPECT_EQ(rows.at("optim.lr_delay").default_value, "1000");
  EXPECT_EQ(rows.at("optim.kfac.damping").default_value, "0.001");
  EXPECT_EQ(rows.at("sampler.walkers").default_value, "1024");
  EXPECT_EQ(rows.at("system.molecule").default_value, "(unset)");
  EXPECT_EQ(rows.at("pretrain.steps").default_value, "1000");  // (ferminet's)
  EXPECT_GE(rows.size(), 80u);
}

// A PauliNet without interactions has embeddings of spin alone: its Jastrow and backflow would be
// trainable parameters that change nothing (a user audit), so that combination is refused.
TEST(Config, APauliNetWithoutInteractionsTakesNoJastrowOrBackflow) {
  EXPECT_TRUE(contains(error_of("model: {type: paulinet, paulinet: {interactions: 0}}\n"),
                       "model.paulinet.interactions"));
  EXPECT_EQ(error_of("model: {type: paulinet, paulinet: {interactions: 0, jastrow: false, backflow: false}}\n"), "");
  EXPECT_EQ(error_of("model: {type: ferminet, paulinet: {interactions: 0}}\n"), "");  // (another ansatz's block)
}
