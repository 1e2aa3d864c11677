#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

#include <nlohmann/json.hpp>

namespace fs = std::filesystem;

namespace {
struct Result {
  int code;
  std::string out;  ///< stdout and stderr
};

Result run(const std::string& args) {
  const std::string cmd = std::string(NNVMC_EXE) + " " + args + " 2>&1";
  std::unique_ptr<FILE, int (*)(FILE*)> p(popen(cmd.c_str(), "r"), pclose);
  std::string out;
  std::array<char, 4096> buf;
  while (size_t n = fread(buf.data(), 1, buf.size(), p.get())) out.append(buf.data(), n);
  const int status = pclose(p.release());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
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
    "eval: {steps: 4, burn_in: 2}\n";

void expect_input_error(const std::string& args, const std::string& needle) {
  const auto r = run(args);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find(needle), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("terminate"), std::string::npos) << r.out;  // no crash
}
}  // namespace

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
  const auto e = run("eval " + out + "/checkpoint.h5 --steps 6 --seed 3 --json --log-level warn");
  ASSERT_EQ(e.code, 0) << e.out;
  const auto j = nlohmann::json::parse(e.out.substr(e.out.find('{')));
  for (const char* key : {"energy", "energy_err", "variance", "steps", "walkers"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["steps"], 6);
  EXPECT_LT(j["energy"].get<double>(), 0.0);
  // Same seed, same samples: the exact Laplacian methods agree (the checkpoint's is jvp), also
  // when the walker chunks come from a small memory budget.
  for (const std::string extra : {"hamiltonian.laplacian=reverse", "hamiltonian.laplacian=forward",
                                  "hamiltonian.laplacian=forward run.memory_budget=24KiB"}) {
    const auto r = run("eval " + out + "/checkpoint.h5 --steps 6 --seed 3 --json --log-level warn " + extra);
    ASSERT_EQ(r.code, 0) << extra << "\n" << r.out;
    const auto jr = nlohmann::json::parse(r.out.substr(r.out.find('{')));
    EXPECT_NEAR(jr["energy"].get<double>(), j["energy"].get<double>(), 1e-8) << extra;
  }
  // A budget below one walker's working memory is a clear error.
  expect_input_error("eval " + out + "/checkpoint.h5 --steps 2 run.memory_budget=1KiB", "one walker");
}
