#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>

#include "core/config.hpp"
#include "core/errors.hpp"

using namespace nnvmc;

namespace {
std::string error_of(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
  try {
    parse_config(yaml, overrides, "c.yaml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}
bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }
}  // namespace

TEST(Config, DefaultsFollowTheIssueAndPaper) {
  const Config c = parse_config("", {}, "c.yaml");
  EXPECT_EQ(c.model.type, "ferminet");
  EXPECT_EQ(c.model.ferminet.hidden_dims.size(), 4u);
  EXPECT_EQ(c.model.ferminet.hidden_dims[0][0], 256);
  EXPECT_EQ(c.model.ferminet.determinants, 16);
  EXPECT_EQ(c.sampler.walkers, 1024);
  EXPECT_DOUBLE_EQ(c.optim.clip_width, 5.0);
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
  EXPECT_EQ(c.system.molecule.yaml, "he");
  EXPECT_EQ(c.model.ferminet.hidden_dims.size(), 2u);
  EXPECT_EQ(c.model.ferminet.hidden_dims[1][1], 8);
  EXPECT_EQ(c.sampler.walkers, 64);
  EXPECT_DOUBLE_EQ(c.optim.lr, 0.01);
  EXPECT_EQ(c.run.seed, 7u);
}

TEST(Config, UnknownKeyNamesPathLineAndSuggestion) {
  const auto e = error_of("sampler:\n  walker: 10\n");
  EXPECT_TRUE(contains(e, "sampler.walker")) << e;
  EXPECT_TRUE(contains(e, "c.yaml:2")) << e;
  EXPECT_TRUE(contains(e, "did you mean 'walkers'")) << e;
}

TEST(Config, UnknownOverrideKeyIsAnError) {
  EXPECT_TRUE(contains(error_of("", {"optim.lrr=3"}), "optim.lrr"));
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

TEST(Config, ByteCountsParse) {
  EXPECT_EQ(parse_bytes("2GiB", "k"), 2ull << 30);
  EXPECT_EQ(parse_bytes("500MB", "k"), 500000000ull);
  EXPECT_THROW(parse_bytes("lots", "k"), ConfigError);
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
  std::ifstream demo(root / "examples" / "demo.sh");
  const std::string text((std::istreambuf_iterator<char>(demo)), std::istreambuf_iterator<char>());
  const std::regex config_ref(R"(configs/runs/[A-Za-z0-9_]+\.yaml)");
  int named = 0;
  for (std::sregex_iterator it(text.begin(), text.end(), config_ref), end; it != end; ++it, ++named)
    EXPECT_NO_THROW(load_config((root / it->str()).string())) << it->str() << " named by examples/demo.sh";
  EXPECT_GE(named, 1);
}
