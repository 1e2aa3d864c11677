// `nnvmc compare` end to end: one row per cell with the right references, resuming after an
// interruption runs only what is missing, a failing cell does not stop the others, and a bad
// comparison file exits with code 2 naming the key.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <sstream>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/directory_lock.hpp"
#include "io/hdf5_file.hpp"

namespace fs = std::filesystem;

namespace {

struct Result {
  int code;
  std::string out;
};

/// A shell command line, its exit code and its output.
Result run_shell(const std::string& line) {
  const std::string cmd = line + " 2>&1";
  std::unique_ptr<FILE, int (*)(FILE*)> p(popen(cmd.c_str(), "r"), pclose);
  std::string out;
  std::array<char, 4096> buf;
  while (size_t n = fread(buf.data(), 1, buf.size(), p.get())) out.append(buf.data(), n);
  const int status = pclose(p.release());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

/// nnvmc with `args`.
Result run(const std::string& args) {
  std::string command = NNVMC_EXE;  // append, not operator+: GCC 12 -O3 false -Warray-bounds
  return run_shell(command.append(" ").append(args));
}

/// A fresh output directory and the comparison file for it.
std::pair<std::string, std::string> setup(const std::string& name, const std::string& body) {
  const auto dir = (fs::temp_directory_path() / name).string();
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string file = dir + ".yaml";
  std::ofstream(file) << body << "output: " << dir << "\n";
  return {file, dir};
}

/// Tiny cells: 2 FermiNet sizes × H, He, 5 iterations, a tiny evaluation, one thread each.
const std::string kTiny =
    "ansatze:\n"
    "  - {label: small, type: ferminet, ferminet: {hidden_dims: [[8, 4]], determinants: 1}}\n"
    "  - {label: large, type: ferminet, ferminet: {hidden_dims: [[12, 4], [12, 4]], determinants: 2}}\n"
    "molecules: [h, he]\n"
    "iterations: 5\n"
    "walkers: 8\n"
    "eval_steps: 6\n"
    "threads: 1\n"
    "references: auto\n"
    "overrides: [sampler.burn_in=4, sampler.steps_per_iteration=2, eval.burn_in=2, hamiltonian.laplacian=forward,\n"
    "            pretrain.steps=2]\n";

/// compare.csv as one map per row.
std::vector<std::map<std::string, std::string>> read_csv(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  std::vector<std::string> header;
  std::stringstream hs(line);
  for (std::string h; std::getline(hs, h, ',');) header.push_back(h);
  std::vector<std::map<std::string, std::string>> rows;
  while (std::getline(in, line)) {
    std::map<std::string, std::string> row;
    size_t i = 0, pos = 0;
    while (pos <= line.size() && i < header.size()) {
      std::string field;
      if (pos < line.size() && line[pos] == '"') {
        size_t end = pos + 1;
        while (end < line.size()) {
          if (line[end] == '"' && (end + 1 >= line.size() || line[end + 1] != '"')) break;
          field += line[end];
          end += line[end] == '"' ? 2 : 1;
        }
        pos = end + 2;
      } else {
        const size_t end = std::min(line.find(',', pos), line.size());
        field = line.substr(pos, end - pos);
        pos = end + 1;
      }
      row[header[i++]] = field;
    }
    rows.push_back(row);
  }
  return rows;
}

nlohmann::json cell_json(const std::string& dir, const std::string& cell) {
  std::ifstream in(dir + "/cells/" + cell + "/cell.json");
  return nlohmann::json::parse(in);
}

/// A comparison of one tiny FermiNet cell on H (no budget: append `iterations:` or `minutes:`),
/// checkpointed every 5 iterations.
const std::string kOneTinyCell =
    "ansatze: [{label: tiny, type: ferminet, ferminet: {hidden_dims: [[8, 4]], determinants: 1}}]\n"
    "molecules: [h]\n"
    "walkers: 8\neval_steps: 4\n"
    "overrides: [sampler.burn_in=2, sampler.steps_per_iteration=2, eval.burn_in=2, pretrain.steps=0,\n"
    "            run.threads=1, run.checkpoint_every=5]\n";

/// Runs `compare FILE` of kOneTinyCell in the background (`prefix` before the command, e.g.
/// "setsid "), waits until its cell tiny__h has written `file_in_cell` and a second more, runs
/// `stop` (a shell command that may use $pid) and waits for the comparison. @return the shell's
/// output (ending "rc=N") and the comparison's log.
std::pair<Result, std::string> stop_tiny_cell(const std::string& file, const std::string& dir,
                                              const std::string& prefix, const std::string& file_in_cell,
                                              const std::string& stop) {
  const std::string script =
      prefix + std::string(NNVMC_EXE) + " compare " + file + " --no-plots > " + dir + ".log 2>&1 & pid=$!; "
      "for i in $(seq 600); do [ -s " + dir + "/cells/tiny__h/" + file_in_cell + " ] && break; sleep 0.1; done; "
      "sleep 1; " + stop + "; wait $pid; echo rc=$?";
  const auto out = run_shell("bash -c '" + script + "'");
  std::ifstream log_in(dir + ".log");
  return {out, std::string((std::istreambuf_iterator<char>(log_in)), {})};
}

/// Runs kOneTinyCell's comparison again with a budget that ends at once (the minutes its cell
/// trained, rounded up): it continues from its checkpoint and is done. @return that run's output
Result continue_tiny_cell(const std::string& file, const std::string& dir) {
  // (the least budget it may be given: what it trained, rounded up; a smaller one is refused)
  const double trained = cell_json(dir, "tiny__h").value("train_seconds", 0.0) / 60;
  std::ofstream(file) << kOneTinyCell << "minutes: " << std::max(0.0001, std::ceil(trained * 1000) / 1000)
                      << "\noutput: " << dir << "\n";
  const auto second = run("compare " + file + " --no-plots");
  EXPECT_EQ(second.code, 0) << second.out;
  EXPECT_NE(second.out.find("tiny__h: continuing from its checkpoint"), std::string::npos) << second.out;
  EXPECT_EQ(cell_json(dir, "tiny__h")["status"], "done");
  return second;
}

std::int64_t train_rows(const std::string& dir, const std::string& cell) {
  nnvmc::io::H5File f(dir + "/cells/" + cell + "/result.h5", nnvmc::io::H5File::Mode::read);
  return f.read("train/energy").numel();
}

}  // namespace

TEST(CompareCli, InterruptedComparisonResumesOnlyTheMissingCellsAndGivesOneRowPerCell) {
  const auto [file, dir] = setup("nnvmc_compare_tiny", kTiny);
  // Stop (as SIGTERM would) in the second cell before its iteration 2: the first cell is done,
  // the second has a checkpoint at iteration 2, the last two have not started.
  const auto first = run("compare " + file + " --no-plots --test-interrupt small__he:2");
  EXPECT_EQ(first.code, 1) << first.out;
  EXPECT_NE(first.out.find("re-run the same command"), std::string::npos) << first.out;
  EXPECT_EQ(cell_json(dir, "small__h")["status"], "done");
  EXPECT_EQ(cell_json(dir, "small__he")["status"], "interrupted");
  EXPECT_EQ(train_rows(dir, "small__he"), 2);
  EXPECT_FALSE(fs::exists(dir + "/cells/large__h/cell.json"));
  // a copy of the stopped comparison, continued at the end in its own output
  const std::string moved = dir + "_moved";
  fs::remove_all(moved);
  fs::copy(dir, moved, fs::copy_options::recursive);
  const auto partial = read_csv(dir + "/compare.csv");  // the table is written even when stopped
  ASSERT_EQ(partial.size(), 4u);
  EXPECT_EQ(partial[3].at("status"), "pending");
  // --list says where each cell stands, and runs and writes nothing.
  const auto files = [&] {
    std::map<std::string, std::pair<std::uintmax_t, fs::file_time_type>> out;
    for (const auto& e : fs::recursive_directory_iterator(dir))
      out[e.path().string()] = {e.is_regular_file() ? e.file_size() : 0, e.last_write_time()};
    return out;
  };
  const auto before = files();
  const auto listed = run("compare " + file + " --list --log-level warn");
  ASSERT_EQ(listed.code, 0) << listed.out;
  for (const char* line : {": 4 cells in ", "(1 done, 1 interrupted, 2 new)", "small__h ", "5 iterations",
                           "done, E = ", "interrupted, ", "  he    -2.903724 Eh  "})
    EXPECT_NE(listed.out.find(line), std::string::npos) << line << "\n" << listed.out;
  EXPECT_TRUE(files() == before);
  {  // a cell of an earlier version of the file (a molecule removed since) is named, not silently kept
    fs::create_directories(dir + "/cells/gone__li");
    const auto extra = run("compare " + file + " --list --log-level warn");
    EXPECT_NE(extra.out.find("/cells holds 1 cell not in " + file + " (gone__li): left as it was, and not in the table"),
              std::string::npos)
        << extra.out;
    fs::remove_all(dir + "/cells/gone__li");
  }
  {  // a cell (and an output) that a process is working in is "running", and its pid is named
    const nnvmc::io::DirectoryLock cell_lock(dir + "/cells/small__he", "run.output"), lock(dir, "output");
    const auto busy = run("compare " + file + " --list --log-level warn");
    ASSERT_EQ(busy.code, 0) << busy.out;
    const std::string pid = std::to_string(getpid());
    const std::vector<std::string> lines{"a compare is running in this output (pid " + pid + ")",
                                         "(1 done, 1 running, 2 new)",
                                         "running      5 iterations        8  in use by an nnvmc process (pid " + pid +
                                             "); before: interrupted, "};
    for (const auto& line : lines)
      EXPECT_NE(busy.out.find(line), std::string::npos) << line << "\n" << busy.out;
    // a resume of a cell at work that has no checkpoint yet says so (it read "no checkpoint.h5 here")
    const nnvmc::io::DirectoryLock starting(dir + "/cells/large__h", "run.output");
    const auto resume = run("train --resume " + dir + "/cells/large__h");
    EXPECT_EQ(resume.code, 2) << resume.out;
    EXPECT_NE(resume.out.find("in use by another nnvmc process (pid " + pid + ")"), std::string::npos) << resume.out;
  }
  {  // a new run in a cell that has not begun is refused: the comparison continued it as its own
    const std::string config = dir + "_he.yaml";
    std::ofstream(config) << "system: {molecule: he}\n";
    const auto r = run("train " + config + " run.output=" + dir + "/cells/large__h");
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_NE(r.out.find("is a cell of the comparison in '" + dir + "'"), std::string::npos) << r.out;
    EXPECT_FALSE(fs::exists(dir + "/cells/large__h/config.yaml"));
  }

  const auto second = run("compare " + file + " --no-plots");
  ASSERT_EQ(second.code, 0) << second.out;
  EXPECT_NE(second.out.find("3 of 4 cells to run (1 done"), std::string::npos) << second.out;
  EXPECT_NE(second.out.find("small__he: continuing from its checkpoint"), std::string::npos) << second.out;
  EXPECT_EQ(cell_json(dir, "small__h")["segments"], 1);   // not redone
  EXPECT_EQ(cell_json(dir, "small__he")["segments"], 2);  // resumed ...
  EXPECT_EQ(train_rows(dir, "small__he"), 5);             // ... to the full 5 iterations
  const auto rows = read_csv(dir + "/compare.csv");
  ASSERT_EQ(rows.size(), 4u);
  const std::map<std::string, double> refs{{"h", -0.5}, {"he", -2.903724377}};
  for (const auto& r : rows) {
    EXPECT_EQ(r.at("status"), "done") << r.at("cell");
    EXPECT_DOUBLE_EQ(std::stod(r.at("reference")), refs.at(r.at("molecule"))) << r.at("cell");
    const double e = std::stod(r.at("energy")), err = std::stod(r.at("error"));
    EXPECT_NEAR(err, e - refs.at(r.at("molecule")), 1e-9);
    EXPECT_EQ(r.at("iterations"), "5");
    EXPECT_EQ(r.at("charge"), "0");
    EXPECT_EQ(r.at("spin"), r.at("molecule") == "h" ? "1" : "0");
    EXPECT_GT(std::stod(r.at("parameters")), 0);
    EXPECT_GT(std::stod(r.at("s_per_iteration")), 0);
    // Seconds per training iteration by stage: pretraining (2 steps) has no column of zeros.
    for (const char* stage : {"sampling", "local_energy", "gradient", "optimizer"})
      EXPECT_GT(std::stod(r.at(std::string("s_per_iteration:") + stage)), 0) << stage;
    for (const auto& [column, value] : r) EXPECT_EQ(column.find("pretrain"), std::string::npos) << column;
    EXPECT_GT(std::stod(r.at("peak_tensor_bytes")), 0);
    EXPECT_GT(std::stod(r.at("variance")), 0) << r.at("cell");
    EXPECT_GE(std::stod(r.at("wall_seconds")), std::stod(r.at("train_seconds"))) << r.at("cell");
    EXPECT_GT(std::stod(r.at("train_seconds")), 0) << r.at("cell");
    EXPECT_EQ(r.count("autocorr_time"), 1u);  // (6 steps: may be NaN)
    // 6 steps of 8 walkers: neither a reblocking plateau nor enough walkers for their averages
    EXPECT_EQ(std::stod(r.at("error_bar_reliable")), 0.0) << r.at("cell");
  }
  EXPECT_LT(std::stod(rows[0].at("parameters")), std::stod(rows[2].at("parameters")));  // small < large
  EXPECT_TRUE(fs::exists(dir + "/compare.h5"));
  std::ifstream report(dir + "/report.md");
  const std::string md((std::istreambuf_iterator<char>(report)), {});
  EXPECT_NE(md.find("| large | he |"), std::string::npos) << md;
  EXPECT_NE(md.find("Pekeris"), std::string::npos);  // the reference's source is named
  EXPECT_NE(md.find(" (unreliable)"), std::string::npos) << md;  // (then " |", or " (above HF) |")
  // the files' units are stated (the report's error column is in mEh, the files' in Eh)
  EXPECT_NE(md.find("In compare.csv and compare.h5: energy, energy_err, reference, error (E - E_ref) and e_hf in Eh "
                    "(hartree; compare.h5's chemical_accuracy attribute too)"),
            std::string::npos)
      << md;
  // (and the column names are the files' own: there is no chemical_accuracy column, a user audit)
  EXPECT_EQ(md.find("error (E - E_ref) and chemical_accuracy"), std::string::npos) << md;
  EXPECT_NE(md.find("autocorr_time in evaluation iterations"), std::string::npos) << md;
  EXPECT_NE(md.find("| variance (Eh²) | τ_corr (iterations) |"), std::string::npos) << md;
  EXPECT_NE(nnvmc::io::H5File(dir + "/compare.h5", nnvmc::io::H5File::Mode::read).attr("units").find("in Eh (hartree"),
            std::string::npos);

  // Everything done: a third run does nothing but rewrite the table.
  const auto third = run("compare " + file + " --no-plots");
  ASSERT_EQ(third.code, 0) << third.out;
  EXPECT_EQ(cell_json(dir, "large__he")["segments"], 1);
  // More iterations continue the cells from their checkpoints (--list says so; a user audit: a
  // larger budget was refused and the cells had to be trained again) ...
  const auto more = run("compare " + file + " --list iterations=6");
  ASSERT_EQ(more.code, 0) << more.out;
  EXPECT_NE(more.out.find("(4 continues)"), std::string::npos) << more.out;
  EXPECT_NE(more.out.find("trained 5 iterations; with the budget now given it trains on from its checkpoint"),
            std::string::npos)
      << more.out;
  // ... fewer than the cells trained cannot be had: refused, nothing touched
  const auto fewer = run("compare " + file + " --no-plots iterations=4");
  EXPECT_EQ(fewer.code, 2) << fewer.out;
  EXPECT_NE(fewer.out.find("trained 5 iterations, more than the 4 now given"), std::string::npos) << fewer.out;
  EXPECT_EQ(train_rows(dir, "small__h"), 5);
  const auto differs = run("compare " + file + " --list iterations=4");  // ... and --list says why
  ASSERT_EQ(differs.code, 0) << differs.out;
  EXPECT_NE(differs.out.find("(4 differs)"), std::string::npos) << differs.out;
  EXPECT_NE(differs.out.find("compare refuses to run"), std::string::npos) << differs.out;
  // another setting still makes another comparison: refused
  const auto changed = run("compare " + file + " --no-plots walkers=16");
  EXPECT_EQ(changed.code, 2) << changed.out;
  EXPECT_NE(changed.out.find("different configuration (sampler.walkers 8 -> 16)"), std::string::npos) << changed.out;

  // The copy continues in its own output (each cell's recorded run.output named the original,
  // so every cell "differed"): its interrupted cell trains on there, the original stays done.
  const auto copied = run("compare " + file + " --no-plots output=" + moved);
  ASSERT_EQ(copied.code, 0) << copied.out;
  EXPECT_NE(copied.out.find("3 of 4 cells to run (1 done"), std::string::npos) << copied.out;
  EXPECT_EQ(cell_json(moved, "small__h")["segments"], 1);
  EXPECT_EQ(cell_json(moved, "small__he")["segments"], 2);
  EXPECT_EQ(train_rows(moved, "small__he"), 5);
  EXPECT_EQ(read_csv(moved + "/compare.csv").size(), 4u);
  EXPECT_EQ(cell_json(dir, "small__he")["segments"], 2);  // (the original's: untouched)
  std::ifstream cell_yaml(moved + "/cells/small__he/config.yaml");
  const std::string recorded((std::istreambuf_iterator<char>(cell_yaml)), {});
  EXPECT_NE(recorded.find("output: " + moved + "/cells/small__he"), std::string::npos) << recorded;
  fs::remove_all(moved);
}

TEST(CompareCli, FailingCellIsReportedAndTheOthersComplete) {
  const auto [file, dir] = setup(
      "nnvmc_compare_fail",
      "ansatze:\n"
      "  - {label: ok, type: ferminet, ferminet: {hidden_dims: [[8, 4]], determinants: 1}}\n"
      "  - {label: starved, type: ferminet, ferminet: {hidden_dims: [[8, 4]], determinants: 1},\n"
      "     overrides: [run.memory_budget=1KiB]}\n"
      "molecules: [he]\n"
      "iterations: 3\nwalkers: 8\neval_steps: 4\nthreads: 1\n"
      "overrides: [sampler.burn_in=2, sampler.steps_per_iteration=2, eval.burn_in=2, pretrain.steps=2]\n");
  const auto r = run("compare " + file + " --jobs 2 --no-plots");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("1 of 2 cells failed (reasons in " + dir + "/report.md), 1 done; once the cause is fixed, "
                       "the same command with --retry-failed runs the failed cells again"),
            std::string::npos)
      << r.out;
  const auto rows = read_csv(dir + "/compare.csv");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].at("status"), "done");
  EXPECT_EQ(rows[1].at("status"), "failed");
  // the table's short form on stdout (it printed nothing there, a user audit)
  const auto stdout_only = run_shell("{ " + std::string(NNVMC_EXE) + " compare " + file + " --no-plots 2>/dev/null; }");
  EXPECT_NE(stdout_only.out.find("cell         status       energy (Eh)"), std::string::npos) << stdout_only.out;
  EXPECT_NE(stdout_only.out.find("starved__he  failed       -    "), std::string::npos) << stdout_only.out;
  EXPECT_NE(stdout_only.out.find("ok__he       done         -"), std::string::npos) << stdout_only.out;
  EXPECT_NE(rows[1].at("reason").find("one walker"), std::string::npos) << rows[1].at("reason");
  EXPECT_EQ(rows[1].at("n_electrons"), "2");  // known without a run (it was empty, a user audit)
  // Two cells at once: 'auto' is each cell's share of the memory, not 60 % of it for both.
  std::ifstream log(dir + "/cells/ok__he/log.txt");
  const std::string text((std::istreambuf_iterator<char>(log)), {});
  EXPECT_NE(text.find("run.memory_budget 'auto' is this comparison's share"), std::string::npos) << text;
  // ... and a cell with its own budget counts its host memory within that share too
  std::ifstream starved_log(dir + "/cells/starved__he/log.txt");
  const std::string starved((std::istreambuf_iterator<char>(starved_log)), {});
  EXPECT_NE(starved.find("this cell's share of host memory"), std::string::npos) << starved;
  EXPECT_TRUE(std::regex_search(text, std::regex(R"(energy +-[0-9.]+ ± [0-9.]+ Eh)"))) << text;  // its result
  std::ifstream report(dir + "/report.md");
  const std::string md((std::istreambuf_iterator<char>(report)), {});
  EXPECT_NE(md.find("starved__he"), std::string::npos);
  EXPECT_NE(md.find("Failed cells"), std::string::npos);
}

// Found by user audits: each command wrote into the other's directory, mixing their files.
TEST(CompareCli, TrainingRunsAndComparisonsRefuseEachOthersDirectories) {
  const auto [file, dir] = setup("nnvmc_compare_into_run", kTiny);
  std::ofstream(dir + "/summary.json") << "{}\n";  // a training run's directory
  std::ofstream(dir + "/config.yaml") << "{}\n";
  const auto r = run("compare " + file + " --no-plots");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("holds a training run (config.yaml and summary.json)"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir + "/cells"));
  const auto listed = run("compare " + file + " --list");  // (it listed the cells as new)
  EXPECT_EQ(listed.code, 2) << listed.out;
  EXPECT_NE(listed.out.find("holds a training run"), std::string::npos) << listed.out;
  fs::remove(dir + "/summary.json");
  fs::remove(dir + "/config.yaml");
  std::ofstream(dir + "/compare.csv") << "cell\n";  // a comparison's output
  const std::string config = dir + "_run.yaml";
  std::ofstream(config) << "system: {molecule: he}\n";
  const auto t = run("train " + config + " --force run.output=" + dir +
                     " optim.iterations=1 sampler.walkers=4 pretrain.steps=0");
  EXPECT_EQ(t.code, 2) << t.out;
  EXPECT_NE(t.out.find("run.output: '" + dir + "' holds a comparison (compare.csv)"), std::string::npos) << t.out;
  EXPECT_FALSE(fs::exists(dir + "/config.yaml"));
  EXPECT_TRUE(fs::exists(dir + "/compare.csv"));
  // a profile's output and a comparison's: each replaced the other's report.md
  const auto p = run("profile " + config + " --molecules he --iterations 1 --warmup 1 --profile-iterations 0 "
                     "--no-roofline --no-plots --output " + dir);
  EXPECT_EQ(p.code, 2) << p.out;
  EXPECT_NE(p.out.find("holds a comparison (compare.csv)"), std::string::npos) << p.out;
  EXPECT_FALSE(fs::exists(dir + "/profile.json"));
  const auto inside = run("profile " + config + " --molecules he --iterations 1 --warmup 1 --profile-iterations 0 "
                          "--no-roofline --no-plots --output " + dir + "/cells");  // (it wrote among the cells)
  EXPECT_EQ(inside.code, 2) << inside.out;
  EXPECT_NE(inside.out.find("lies in a comparison (compare.csv) in '" + dir + "'"), std::string::npos) << inside.out;
  EXPECT_FALSE(fs::exists(dir + "/cells/profile.json"));
  fs::remove(dir + "/compare.csv");
  std::ofstream(dir + "/profile.json") << "{}\n";  // a profile's output
  for (const char* list : {"", " --list"}) {
    const auto c = run("compare " + file + " --no-plots" + list);
    EXPECT_EQ(c.code, 2) << c.out;
    EXPECT_NE(c.out.find("holds a profile (profile.json), not a comparison"), std::string::npos) << c.out;
  }
  const auto in_runs = run("compare " + file + " --no-plots output=" + dir + "/runs");  // (a profile's scratch runs)
  EXPECT_EQ(in_runs.code, 2) << in_runs.out;
  EXPECT_NE(in_runs.out.find("lies in a profile (profile.json) in '" + dir + "'"), std::string::npos) << in_runs.out;
  // deeper down too; and the refused comparison takes back the directories and lock it made
  const auto deeper = run("compare " + file + " --no-plots output=" + dir + "/runs/he/mine");
  EXPECT_EQ(deeper.code, 2) << deeper.out;
  EXPECT_NE(deeper.out.find("lies in a profile (profile.json) in '" + dir + "'"), std::string::npos) << deeper.out;
  EXPECT_FALSE(fs::exists(dir + "/runs"));  // (it kept runs/he/mine/.nnvmc.lock)
  const auto into_profile = run("train " + config + " run.output=" + dir + " optim.iterations=1 sampler.walkers=4");
  EXPECT_EQ(into_profile.code, 2) << into_profile.out;
  EXPECT_NE(into_profile.out.find("holds a profile (profile.json)"), std::string::npos) << into_profile.out;
  EXPECT_FALSE(fs::exists(dir + "/cells"));
  EXPECT_FALSE(fs::exists(dir + "/config.yaml"));
}

TEST(CompareCli, BadComparisonFileExitsWithCode2NamingTheKey) {
  const auto [file, dir] = setup("nnvmc_compare_bad", kTiny + "iteratons: 4\n");
  const auto r = run("compare " + file);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("iteratons"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("run it with 'nnvmc compare FILE'"), std::string::npos) << r.out;  // (it was)
  EXPECT_FALSE(fs::exists(dir + "/cells")) << "nothing runs for a bad file";
  const auto [good, dir2] = setup("nnvmc_compare_bad2", kTiny);
  for (const auto& [override_, key] : std::vector<std::pair<std::string, std::string>>{
           {"walkers=-3", "walkers"},
           {"'ansatze=[{type: nosuchnet}]'", "nosuchnet"},
           {"'molecules=[h, xx]'", "molecules[1]"},
           {"references=maybe", "override 'references=maybe': 'references' must be one of"},
           // (a basis no reference needs was not checked: h and he have their e_ref)
           {"reference_basis=cc-pvtzz", "'reference_basis': unknown basis 'cc-pvtzz'"}}) {
    const auto b = run("compare " + good + " " + override_);
    EXPECT_EQ(b.code, 2) << override_ << "\n" << b.out;
    EXPECT_NE(b.out.find(key), std::string::npos) << override_ << "\n" << b.out;
  }
  // A reference too large for the host names reference_basis and what a comparison can do (a
  // user audit: it advised ccsd's --cholesky, which a comparison file has no key for).
  const auto [big, dir3] = setup("nnvmc_compare_big_reference",
                                 "ansatze: [{type: hf}]\nmolecules: [h2o]\nreferences: ccsd_t\nreference_basis: cc-pvqz\n");
  const auto b = run_shell("sh -c 'ulimit -v 2000000 && exec " + std::string(NNVMC_EXE) + " compare " + big + "'");
  EXPECT_EQ(b.code, 2) << b.out;
  EXPECT_NE(b.out.find("'reference_basis': the CCSD(T)/cc-pvqz reference of h2o: conventional integrals"),
            std::string::npos)
      << b.out;
  EXPECT_NE(b.out.find("give a smaller reference_basis, or compute the reference with nnvmc ccsd"), std::string::npos)
      << b.out;
  EXPECT_FALSE(fs::exists(dir3 + "/cells")) << b.out;
}

TEST(CompareCli, MinutesBudgetEndsTrainingOnTheClockThenEvaluates) {
  const auto [file, dir] = setup(
      "nnvmc_compare_minutes",
      "ansatze: [{label: tiny, type: ferminet, ferminet: {hidden_dims: [[8, 4]], determinants: 1}}]\n"
      "molecules: [he]\n"
      "minutes: 0.005\nwalkers: 8\neval_steps: 4\n"
      "overrides: [sampler.burn_in=2, sampler.steps_per_iteration=2, eval.burn_in=2, pretrain.steps=2,\n"
      "            run.threads=1]\n");
  const auto r = run("compare " + file + " --no-plots");
  ASSERT_EQ(r.code, 0) << r.out;
  std::ifstream cell_yaml(dir + "/cells/tiny__he/cell.yaml");
  const std::string yaml((std::istreambuf_iterator<char>(cell_yaml)), {});
  EXPECT_NE(yaml.find("  threads: 1 "), std::string::npos) << "an explicit run.threads holds\n" << yaml;
  const auto j = cell_json(dir, "tiny__he");
  EXPECT_EQ(j["status"], "done");
  EXPECT_FALSE(j["reached_iterations"].get<bool>());  // stopped by the 0.3 s budget
  EXPECT_GE(j["train_seconds"].get<double>(), 0.25);  // (the last iteration's bookkeeping is not in it)
  EXPECT_LT(j["train_seconds"].get<double>(), 0.3 + 10.0);  // ended near the budget, not at 10^8 iterations
  EXPECT_TRUE(j.contains("energy"));
  {  // the cell's summary.json says what ended its training
    const auto summary = nlohmann::json::parse(std::ifstream(dir + "/cells/tiny__he/summary.json"));
    EXPECT_EQ(summary["stopped_by"], "optim.minutes");
  }
  // The budget is the cell config's optim.minutes, so continuing the cell by hand ends where the
  // comparison did: the minutes are spent (the cell used to hold 10^8 iterations and no clock).
  EXPECT_NE(yaml.find("minutes: 0.005"), std::string::npos) << yaml;
  const auto resumed = run("train --resume " + dir + "/cells/tiny__he");
  ASSERT_EQ(resumed.code, 0) << resumed.out;
  const std::string ended = "optim.minutes = 0.005 reached after " + std::to_string(j["iterations"].get<long>()) + " of";
  EXPECT_NE(resumed.out.find(ended), std::string::npos) << resumed.out;
  // The comparison re-run with more minutes continues the cell that stopped on its clock (it used
  // to count it as done, while the report stated the new budget).
  const auto listed = run("compare " + file + " --list minutes=0.01");
  ASSERT_EQ(listed.code, 0) << listed.out;
  EXPECT_NE(listed.out.find("(1 continues)"), std::string::npos) << listed.out;
  // (its budget as given: it read "100000000 iterations or 0.01 min", a user audit)
  EXPECT_NE(listed.out.find("  0.01 min"), std::string::npos) << listed.out;
  EXPECT_EQ(listed.out.find("100000000"), std::string::npos) << listed.out;
  const auto more = run("compare " + file + " --no-plots minutes=0.01");
  ASSERT_EQ(more.code, 0) << more.out;
  EXPECT_NE(more.out.find("tiny__he: continuing from its checkpoint"), std::string::npos) << more.out;
  const auto k = cell_json(dir, "tiny__he");
  EXPECT_EQ(k["segments"], 2);
  EXPECT_GT(k["iterations"].get<long>(), j["iterations"].get<long>());
  EXPECT_GE(k["train_seconds"].get<double>(), 0.55);
  EXPECT_DOUBLE_EQ(k["minutes"].get<double>(), 0.01);
  const auto again = run("compare " + file + " --no-plots minutes=0.01");  // spent: nothing to continue
  ASSERT_EQ(again.code, 0) << again.out;
  EXPECT_EQ(cell_json(dir, "tiny__he")["segments"], 2);
  // A continuation that fails (here: a damaged checkpoint) leaves the cell done with its result.
  fs::resize_file(dir + "/cells/tiny__he/checkpoint.h5", 100);
  const auto broken = run("compare " + file + " --no-plots minutes=0.02");
  EXPECT_EQ(broken.code, 0) << broken.out;
  EXPECT_NE(broken.out.find("its continuation failed"), std::string::npos) << broken.out;
  const auto kept = cell_json(dir, "tiny__he");
  EXPECT_EQ(kept["status"], "done");
  EXPECT_EQ(kept["energy"], k["energy"]);
  EXPECT_TRUE(kept.contains("continuation_failed"));
  // A done cell without its checkpoint cannot train new minutes: said so, result kept (it tried,
  // and advised 'train --resume' or --force, neither of which helps a cell)
  fs::remove(dir + "/cells/tiny__he/checkpoint.h5");
  const auto gone = run("compare " + file + " --no-plots minutes=0.03");
  EXPECT_EQ(gone.code, 0) << gone.out;
  EXPECT_NE(gone.out.find("tiny__he: done, but its checkpoint.h5 is gone, so it cannot train its new minutes"),
            std::string::npos)
      << gone.out;
  EXPECT_EQ(cell_json(dir, "tiny__he")["energy"], k["energy"]);
}

// --retry-failed with --max-cells resets only the failed cells it runs now: the others keep their
// failure records (all were deleted, and the next plain run trained them as new cells: a user audit).
TEST(CompareCli, RetryFailedWithMaxCellsKeepsTheRecordsOfCellsNotRunYet) {
  const auto [file, dir] = setup("nnvmc_compare_retry_max",
                                 "ansatze: [{label: starved, type: ferminet, ferminet: {hidden_dims: [[8, 4]], "
                                 "determinants: 1}, overrides: [run.memory_budget=1KiB]}]\n"
                                 "molecules: [he, h]\niterations: 2\nwalkers: 8\neval_steps: 4\nthreads: 1\n");
  EXPECT_EQ(run("compare " + file + " --no-plots").code, 1);
  const auto first = run("compare " + file + " --no-plots --retry-failed --max-cells 1");
  EXPECT_EQ(first.code, 1) << first.out;
  EXPECT_NE(first.out.find("2 of 2 cells to run, 1 of them now (--max-cells) (0 done, 2 failed before: 1 retried)"),
            std::string::npos)
      << first.out;
  EXPECT_EQ(cell_json(dir, "starved__he")["segments"], 1);  // (reset, then run once more)
  const auto kept = cell_json(dir, "starved__h");
  EXPECT_EQ(kept["status"], "failed");
  EXPECT_TRUE(kept.contains("reason"));
  EXPECT_TRUE(fs::exists(dir + "/cells/starved__h/log.txt"));
  const auto plain = run("compare " + file + " --no-plots");  // both stay failed, neither runs
  EXPECT_EQ(plain.code, 1);
  EXPECT_EQ(plain.out.find("cells to run"), std::string::npos) << plain.out;
}

// A done cell cannot be given a smaller minutes budget than it trained under: the report would
// state that budget for cells trained longer (it exited 0, a user audit).
TEST(CompareCli, ASmallerMinutesBudgetThanADoneCellTrainedIsRefused) {
  const auto [file, dir] = setup(
      "nnvmc_compare_fewer_minutes",
      "ansatze: [{label: tiny, type: ferminet, ferminet: {hidden_dims: [[8, 4]], determinants: 1}}]\n"
      "molecules: [he]\nminutes: 0.004\nwalkers: 8\neval_steps: 4\n"
      "overrides: [sampler.burn_in=2, sampler.steps_per_iteration=2, eval.burn_in=2, pretrain.steps=2, run.threads=1]\n");
  ASSERT_EQ(run("compare " + file + " --no-plots").code, 0);
  const auto fewer = run("compare " + file + " --no-plots minutes=0.001");
  EXPECT_EQ(fewer.code, 2) << fewer.out;
  EXPECT_NE(fewer.out.find("holds cell tiny__he done after"), std::string::npos) << fewer.out;
  EXPECT_NE(fewer.out.find("more than the 0.001 now given (a trained cell cannot be untrained); give minutes 0.004 or more"),
            std::string::npos)
      << fewer.out;
  EXPECT_EQ(run("compare " + file + " --no-plots minutes=0.004").code, 0);  // its own budget: nothing to do
  // eval of the comparison's directory names its cells' runs (it said "no checkpoint.h5 here")
  const auto eval = run("eval " + dir + " --steps 2");
  EXPECT_NE(eval.code, 0);
  EXPECT_NE(eval.out.find("a comparison (nnvmc compare), not a run; its cells are runs: " + dir + "/cells/tiny__he"),
            std::string::npos)
      << eval.out;
}

// A cell whose final energy lies above the Hartree–Fock energy its pretraining targeted is marked
// in report.md, on stdout and in compare.csv (a user audit: a CH4 cell 13 Eh above HF was listed as
// done and reliable). The cell's record is edited to put its e_hf below, then above its energy.
TEST(CompareCli, ACellAboveItsHartreeFockEnergyIsMarked) {
  const auto [file, dir] = setup(
      "nnvmc_compare_above_hf",
      "ansatze: [{label: tiny, type: ferminet, ferminet: {hidden_dims: [[8, 4]], determinants: 1}}]\n"
      "molecules: [h]\niterations: 2\nwalkers: 8\neval_steps: 4\n"
      "overrides: [sampler.burn_in=2, sampler.steps_per_iteration=2, eval.burn_in=2, pretrain.steps=2, run.threads=1]\n");
  ASSERT_EQ(run("compare " + file + " --no-plots").code, 0);
  auto j = cell_json(dir, "tiny__h");
  ASSERT_TRUE(j.contains("e_hf")) << j.dump();
  EXPECT_NEAR(j["e_hf"].get<double>(), -0.471039, 1e-6);  // H's UHF energy in STO-6G, pretraining's default basis
  EXPECT_NE(j.value("e_hf_source", std::string()).find("pretrain"), std::string::npos) << j.dump();
  const double e = j["energy"].get<double>(), err = j["energy_err"].get<double>();
  for (const bool above : {true, false}) {
    j["e_hf"] = above ? e - 3.5 * err - 0.01 : e + 0.01;
    std::ofstream(dir + "/cells/tiny__h/cell.json") << j.dump();
    const auto again = run("compare " + file + " --no-plots");
    ASSERT_EQ(again.code, 0) << again.out;
    const auto rows = read_csv(dir + "/compare.csv");
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(std::stod(rows[0].at("above_hf")), above ? 1.0 : 0.0);
    EXPECT_NEAR(std::stod(rows[0].at("e_hf")), j["e_hf"].get<double>(), 1e-9);
    std::ifstream in(dir + "/report.md");
    const std::string report((std::istreambuf_iterator<char>(in)), {});
    EXPECT_EQ(report.find(" (above HF) |") != std::string::npos, above) << report;
    EXPECT_EQ(again.out.find("(above HF)") != std::string::npos, above) << again.out;
  }
}

// A run-config entry (a configs/models/ file, say) is a whole run config: `base:` does not apply
// to it, and the comparison says so rather than comparing it under other settings silently.
TEST(CompareCli, BaseThatDoesNotApplyToARunConfigEntryIsSaid) {
  const auto [file, dir] = setup("nnvmc_compare_base", "");
  const std::string model_file = dir + "_model.yaml";
  std::ofstream(model_file) << "model: {type: ferminet, ferminet: {hidden_dims: [[8, 4]], determinants: 1}}\n";
  std::ofstream(file) << "ansatze: [" << model_file << ", {type: ferminet}]\nmolecules: [he]\niterations: 2\n"
                      << "base: {pretrain: {steps: 0}}\noutput: " << dir << "\n";
  const auto r = run("compare " + file + " --list");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("is a run config: 'base:' does not apply to it"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("'ansatze[1]'"), std::string::npos) << r.out;  // the model block takes it
  EXPECT_EQ(r.out.find("its model.type"), std::string::npos) << r.out;
  // A base's model.type never reaches a model block of another type (it trained FermiNet without a word)
  std::ofstream(file) << "ansatze: [{type: ferminet}]\nmolecules: [he]\niterations: 2\n"
                      << "base: {model: {type: psiformer}}\noutput: " << dir << "\n";
  const auto typed = run("compare " + file + " --list");
  ASSERT_EQ(typed.code, 0) << typed.out;
  EXPECT_NE(typed.out.find("its model.type psiformer is replaced by the type each model block names (ferminet: ferminet); "
                           "the base's model.psiformer settings reach only psiformer blocks"),
            std::string::npos) << typed.out;
}

// A real Ctrl-C (SIGINT to the terminal's process group: nnvmc and the cell it runs) in the
// middle of a cell's training: the comparison stops with the cell marked interrupted and its
// checkpoint written; running the same command again continues that cell from its checkpoint
// (here with a shorter minutes budget, which cell_identity ignores, so it ends at once).
TEST(CompareCli, CtrlCToTheProcessGroupCheckpointsTheCellAndTheRerunContinuesIt) {
  const std::string body = kOneTinyCell;
  const auto [file, dir] = setup("nnvmc_compare_sigint", body + "minutes: 5\n");
  // setsid: the comparison leads its own group, as a shell job does; the signal goes to the group
  // once the cell has trained a few iterations (its result file has rows)
  const auto [first, log] = stop_tiny_cell(file, dir, "setsid ", "result.h5", "kill -INT -- -$pid");
  EXPECT_NE(first.out.find("rc=1"), std::string::npos) << first.out << log;
  EXPECT_NE(log.find("re-run the same command"), std::string::npos) << log;
  EXPECT_NE(log.find("tiny__h: interrupted at its checkpoint"), std::string::npos) << log;
  const auto j = cell_json(dir, "tiny__h");
  EXPECT_EQ(j["status"], "interrupted") << log;
  ASSERT_TRUE(fs::exists(dir + "/cells/tiny__h/checkpoint.h5")) << log;
  const auto rows_before = train_rows(dir, "tiny__h");
  EXPECT_GT(rows_before, 0);

  // (a budget below what it trained is refused: continued, it ended at once and then held that
  // budget, which the report stated: a review)
  if (const double trained = j.value("train_seconds", 0.0) / 60; trained > 1e-6) {
    std::ofstream(file) << kOneTinyCell << "minutes: " << trained / 2 << "\noutput: " << dir << "\n";
    const auto fewer = run("compare " + file + " --no-plots");
    EXPECT_EQ(fewer.code, 2) << fewer.out;
    EXPECT_NE(fewer.out.find("holds cell tiny__h interrupted after"), std::string::npos) << fewer.out;
  }
  continue_tiny_cell(file, dir);
  EXPECT_EQ(cell_json(dir, "tiny__h")["segments"], 2);
  EXPECT_GE(train_rows(dir, "tiny__h"), rows_before);  // the rows trained before the signal are kept
}

// A done comparison given more iterations trains its cells on from their checkpoints to the new
// budget and evaluates them again (it was refused: a user audit).
TEST(CompareCli, MoreIterationsContinueADoneCellFromItsCheckpoint) {
  const std::string body = kOneTinyCell;
  const auto [file, dir] = setup("nnvmc_compare_more_iterations", body + "iterations: 3\n");
  ASSERT_EQ(run("compare " + file + " --no-plots").code, 0);
  EXPECT_EQ(train_rows(dir, "tiny__h"), 3);
  const auto more = run("compare " + file + " --no-plots iterations=5");
  ASSERT_EQ(more.code, 0) << more.out;
  EXPECT_NE(more.out.find("tiny__h: continuing from its checkpoint"), std::string::npos) << more.out;
  const auto j = cell_json(dir, "tiny__h");
  EXPECT_EQ(j["status"], "done");
  EXPECT_EQ(j["iterations"], 5);
  EXPECT_EQ(j["segments"], 2);
  EXPECT_EQ(train_rows(dir, "tiny__h"), 5);
  EXPECT_TRUE(j.contains("energy")) << j.dump();
}

// A cell whose own process is killed from outside (kill -9: the out-of-memory killer, a
// scheduler) is interrupted, not failed: the re-run continues it from its checkpoint (a user
// audit: it was failed, and --retry-failed trained it from iteration 0 again).
TEST(CompareCli, ACellKilledFromOutsideContinuesFromItsCheckpoint) {
  const std::string body = kOneTinyCell;
  const auto [file, dir] = setup("nnvmc_compare_kill9", body + "minutes: 5\n");
  const auto [first, log] = stop_tiny_cell(file, dir, "", "checkpoint.h5", "pkill -KILL -P $pid");
  EXPECT_NE(first.out.find("rc=1"), std::string::npos) << first.out << log;
  EXPECT_NE(log.find("tiny__h: the cell's process ended with killed by signal 9"), std::string::npos) << log;
  EXPECT_NE(log.find("it continues from its checkpoint when the comparison runs again"), std::string::npos) << log;
  EXPECT_NE(log.find("re-run the same command to continue it from its checkpoint"), std::string::npos) << log;
  EXPECT_EQ(cell_json(dir, "tiny__h")["status"], "interrupted") << log;
  EXPECT_EQ(cell_json(dir, "tiny__h")["segments"], 1) << log;  // (counted when it started)
  const auto rows_before = train_rows(dir, "tiny__h");
  EXPECT_GT(rows_before, 0);

  const auto second = continue_tiny_cell(file, dir);
  EXPECT_EQ(cell_json(dir, "tiny__h")["segments"], 2);  // (it said 1 after a killed segment, a user audit)
  // the rows up to the checkpoint (every 5 iterations) before the kill are kept
  EXPECT_GE(train_rows(dir, "tiny__h"), rows_before - 5);
  // the stdout table's columns line up, also past an "(unreliable)" energy (8 walkers; it
  // shifted the error column, a user audit)
  const auto header = second.out.find("cell ");
  const auto row = second.out.find("tiny__h  ", header);
  ASSERT_NE(header, std::string::npos) << second.out;
  ASSERT_NE(row, std::string::npos) << second.out;
  const std::string head_line = second.out.substr(header, second.out.find('\n', header) - header);
  const std::string row_line = second.out.substr(row, second.out.find('\n', row) - row);
  EXPECT_NE(row_line.find("(unreliable)"), std::string::npos) << row_line;
  const auto column = head_line.find("error vs reference (mEh)");
  ASSERT_NE(column, std::string::npos) << head_line;
  ASSERT_GT(row_line.size(), column) << row_line;
  EXPECT_TRUE(row_line[column] == '+' || row_line[column] == '-') << head_line << "\n" << row_line;
}

// A Ctrl-C in a cell's pretraining, before its first checkpoint, is not said to leave one (found
// by a user audit: "interrupted at its checkpoint" with no checkpoint.h5).
TEST(CompareCli, CtrlCBeforeACellsFirstCheckpointSaysItStartsAgain) {
  const auto [file, dir] = setup("nnvmc_compare_sigint_pretrain",
                                 "ansatze: [{label: tiny, type: ferminet, ferminet: {hidden_dims: [[8, 4]], determinants: 1}}]\n"
                                 "molecules: [h]\niterations: 5\nwalkers: 8\neval_steps: 4\n"
                                 "overrides: [pretrain.steps=1000000, run.threads=1]\n");
  const std::string script =
      "setsid " + std::string(NNVMC_EXE) + " compare " + file + " --no-plots > " + dir + ".log 2>&1 & pid=$!; "
      "for i in $(seq 600); do grep -q pretrain " + dir + "/cells/tiny__h/log.txt 2>/dev/null && break; sleep 0.1; "
      "done; sleep 1; kill -INT -- -$pid; wait $pid; echo rc=$?";
  const auto r = run_shell("bash -c '" + script + "'");
  std::ifstream log_in(dir + ".log");
  const std::string log((std::istreambuf_iterator<char>(log_in)), {});
  EXPECT_NE(r.out.find("rc=1"), std::string::npos) << r.out << log;
  EXPECT_FALSE(fs::exists(dir + "/cells/tiny__h/checkpoint.h5")) << log;
  EXPECT_NE(log.find("tiny__h: interrupted before its first checkpoint; it starts again when the comparison resumes"),
            std::string::npos)
      << log;
  // Run again as it was, it says that it starts again (it said "continuing from its checkpoint",
  // which it did not have); stopped again in its pretraining
  const auto same = run_shell("timeout -s INT 8 " + std::string(NNVMC_EXE) + " compare " + file + " --no-plots");
  EXPECT_NE(same.out.find("tiny__h: starting again (it stopped before its first checkpoint)"), std::string::npos)
      << same.out;
  // ... and may start again with other settings, e.g. a shorter pretraining (a user audit: it was
  // refused as a cell "run with a different configuration")
  std::ofstream(file) << "ansatze: [{label: tiny, type: ferminet, ferminet: {hidden_dims: [[8, 4]], determinants: 1}}]\n"
                         "molecules: [h]\niterations: 5\nwalkers: 8\neval_steps: 4\n"
                         "overrides: [pretrain.steps=2, run.threads=1]\noutput: "
                      << dir << "\n";
  const auto again = run("compare " + file + " --no-plots");
  ASSERT_EQ(again.code, 0) << again.out;
  EXPECT_EQ(cell_json(dir, "tiny__h")["status"], "done");
}

// The rest of a comparison file and of the command line, end to end: an ansatz given as a run
// config (with its own overrides), a molecule given as a file, a dtype axis, --max-cells, the
// default plots, and --retry-failed.
TEST(CompareCli, RunConfigEntriesMoleculeFilesADtypeAxisMaxCellsPlotsAndRetries) {
  const auto tmp = fs::temp_directory_path();
  const std::string cfg = (tmp / "nnvmc_compare_entry.yaml").string(), mol = (tmp / "nnvmc_compare_h2.yaml").string();
  std::ofstream(cfg) << "system: {molecule: he}\n"
                        "model: {type: ferminet, ferminet: {hidden_dims: [[8, 4]], determinants: 1}}\n"
                        "optim: {type: adam, lr: 0.05}\n";
  std::ofstream(mol) << "units: bohr\natoms:\n  - [H, 0, 0, 0]\n  - [H, 0, 0, 1.4]\n";
  const auto [file, dir] = setup("nnvmc_compare_more",
                                 "ansatze:\n"
                                 "  - {config: " + cfg + ", label: fromfile, overrides: [optim.lr=0.01]}\n"
                                 "molecules: [" + mol + ", he]\n"
                                 "dtype: [float64, float32]\n"
                                 "iterations: 3\nwalkers: 8\neval_steps: 4\nthreads: 1\n"
                                 "overrides: [sampler.burn_in=2, sampler.steps_per_iteration=2, eval.burn_in=2,\n"
                                 "            pretrain.steps=2]\n");
  const auto first = run("compare " + file + " --no-plots --max-cells 1");
  ASSERT_EQ(first.code, 0) << first.out;
  EXPECT_NE(first.out.find("3 cells not run yet (--max-cells)"), std::string::npos) << first.out;
  const auto rest = run("compare " + file);  // with the plots
  ASSERT_EQ(rest.code, 0) << rest.out;
  const auto rows = read_csv(dir + "/compare.csv");
  ASSERT_EQ(rows.size(), 4u);
  std::map<std::string, int> dtypes;
  for (const auto& r : rows) {
    EXPECT_EQ(r.at("status"), "done") << r.at("cell");
    EXPECT_EQ(r.at("ansatz"), "fromfile");
    dtypes[r.at("dtype")] += 1;
  }
  EXPECT_EQ(dtypes["float64"], 2);
  EXPECT_EQ(dtypes["float32"], 2);
  const auto cell = rows[0].at("cell");
  std::ifstream cell_yaml(dir + "/cells/" + cell + "/cell.yaml");
  const std::string y((std::istreambuf_iterator<char>(cell_yaml)), {});
  EXPECT_NE(y.find("lr: 0.01"), std::string::npos) << y;  // the entry's override over its file's 0.05
  EXPECT_TRUE(fs::exists(dir + "/energy_vs_time.png"));
  EXPECT_TRUE(fs::exists(dir + "/final_errors.png"));
  {  // the report counts the axis's cells (it said "1 ansätze × 2 molecules = 4 cells")
    std::ifstream in(dir + "/report.md");
    const std::string md((std::istreambuf_iterator<char>(in)), {});
    EXPECT_NE(md.find("1 ansatz × 2 molecules × the axes' entries = 4 cells"), std::string::npos) << md;
  }
  // a report without plots has no old plots beside it (they stood beside "Not made")
  ASSERT_EQ(run("compare " + file + " --no-plots").code, 0);
  EXPECT_FALSE(fs::exists(dir + "/energy_vs_time.png"));
  EXPECT_FALSE(fs::exists(dir + "/final_errors.png"));

  // --retry-failed runs a failed cell again; without it a failed cell stays failed
  const auto [bad, bad_dir] = setup("nnvmc_compare_retry",
                                    "ansatze: [{label: starved, type: ferminet, ferminet: {hidden_dims: [[8, 4]], "
                                    "determinants: 1}, overrides: [run.memory_budget=1KiB]}]\n"
                                    "molecules: [he]\niterations: 2\nwalkers: 8\neval_steps: 4\n");
  EXPECT_EQ(run("compare " + bad + " --no-plots").code, 1);
  {  // without `threads:` a cell gets the cores divided by the cells run at once (--jobs 1: all)
    std::ifstream in(bad_dir + "/cells/starved__he/cell.yaml");
    const std::string y((std::istreambuf_iterator<char>(in)), {});
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    EXPECT_NE(y.find("\n  threads: " + std::to_string(cores) + " "), std::string::npos) << y;  // (then its comment)
  }
  const auto again = run("compare " + bad + " --no-plots");
  EXPECT_EQ(again.code, 1);
  EXPECT_EQ(again.out.find("cells to run"), std::string::npos) << again.out;  // nothing is run again
  const auto retried = run("compare " + bad + " --no-plots --retry-failed");
  EXPECT_EQ(retried.code, 1);
  EXPECT_NE(retried.out.find("1 of 1 cells to run (0 done, 1 failed before: 1 retried)"), std::string::npos)
      << retried.out;
}
