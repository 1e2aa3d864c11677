/// The comparison runner (compare/runner.hpp) with a stand-in for the cell process.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "compare/runner.hpp"
#include "compare/spec.hpp"

using namespace nnvmc::compare;
namespace fs = std::filesystem;

// A cell process that ends as "done" without writing its cell.json (a full disk: its own write
// failed) is a failed cell whose reason says so and points to its log; it was listed as "unknown".
TEST(CompareRunner, ACellThatEndsWithoutItsStatusFileIsFailedAndSaysWhereToLook) {
  const fs::path dir = fs::temp_directory_path() / "nnvmc_runner_no_status";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string stand_in = (dir / "cell.sh").string();
  std::ofstream(stand_in) << "#!/bin/sh\nexit 0\n";
  fs::permissions(stand_in, fs::perms::owner_all);
  const CompareSpec spec = parse_compare_spec(
      "ansatze: [{label: tiny, type: ferminet}]\nmolecules: [he]\niterations: 2\noutput: " + (dir / "out").string() + "\n",
      {}, "cmp.yaml");
  RunnerOptions o;
  o.executable = stand_in;
  o.retried = prepare_cells(spec, o);
  const RunSummary summary = run_cells(spec, o);
  EXPECT_EQ(summary.ran, 1);
  EXPECT_EQ(summary.failed, 1);
  EXPECT_EQ(summary.done, 0);
  const auto j = nlohmann::json::parse(std::ifstream(dir / "out/cells/tiny__he/cell.json"));
  EXPECT_EQ(j["status"], "failed");
  const std::string reason = j["reason"];
  EXPECT_NE(reason.find("the cell ended (exit code 0) without writing its cell.json"), std::string::npos) << reason;
  EXPECT_NE(reason.find("tiny__he/log.txt"), std::string::npos) << reason;
  fs::remove_all(dir);
}
