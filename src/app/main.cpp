/// nnvmc — neural-network variational Monte Carlo for molecules (command line).
#include <CLI/CLI.hpp>
#include <c10/util/Exception.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <new>
#include <regex>
#include <string>
#include <system_error>

#include "app/allocator_tuning.hpp"
#include "app/commands.hpp"
#include "batching/budget.hpp"
#include "batching/torch_lib_dir.hpp"
#include "core/data_paths.hpp"
#include "core/errors.hpp"
#include "core/log.hpp"
#include "parallel/communicator.hpp"
#include "scf/dense_kernels_torch.hpp"

namespace {

/// What to change when an allocation fails that the memory budget did not foresee, by the
/// command that ran (the settings each command has).
std::string out_of_memory_advice(const CLI::App& app) {
  static const std::map<std::string, std::string> advice = {
      {"scf", "a smaller molecule or basis, or --cholesky TAU (J and K from Cholesky vectors; with --df, a looser "
              "TAU instead, e.g. 1e-4, or a smaller --df-basis)"},
      {"ccsd", "a smaller molecule or basis, --cholesky TAU, --frozen-core, or a --memory below what this machine has"},
  };
  const auto commands = app.get_subcommands();
  const auto it = commands.empty() ? advice.end() : advice.find(commands.front()->get_name());
  return "\n  (use " +
         (it != advice.end() ? it->second
                             : std::string("fewer sampler.walkers, a smaller model or molecule, or a run.memory_budget "
                                           "below what this machine has")) +
         ")";
}

}  // namespace

int main(int argc, char** argv) {
  nnvmc::app::tune_allocator();  // before the first large allocation
  nnvmc::scf::install_torch_dense_kernels();  // the SCF's GEMMs and triangular solves on MKL
  // A file-size limit (ulimit -f) then fails the write (EFBIG), which is a WriteError naming the
  // file, instead of killing the process half-way through it.
  std::signal(SIGXFSZ, SIG_IGN);
  // Output into a pipe whose reader has gone (`| head`, a `| tee` ended by Ctrl-C first) is lost,
  // not the run: SIGPIPE killed training without its checkpoint (a user audit).
  std::signal(SIGPIPE, SIG_IGN);
  // Under mpirun/srun: MPI is initialised and world() spans the ranks; otherwise one process.
  try {
    nnvmc::parallel::init_world(&argc, &argv);
  } catch (const nnvmc::InputError& e) {
    std::fprintf(stderr, "nnvmc: error: %s\n", e.what());
    return 2;
  }
  const bool root = nnvmc::parallel::world().is_root();
  {  // every rank runs the same command (an MPMD launch with other arguments ran a wrong job to exit 0)
    std::string command;
    for (int i = 1; i < argc; ++i) command += std::string(argv[i]) + "\n";
    const std::string difference = nnvmc::parallel::first_difference_across_ranks(nnvmc::parallel::world(), command);
    if (!difference.empty())
      return nnvmc::parallel::fail("the ranks were started with different arguments: " + difference +
                                       " (every rank must run the same nnvmc command)",
                                   2);
  }
  // Ranks share a machine's memory as they share its cores: 'auto' is each rank's share of its
  // node's free memory (the ranks on the node: MPI_COMM_TYPE_SHARED).
  // (Under ulimit -v each rank's limit is its own: nothing to divide.)
  if (const int ranks = nnvmc::parallel::world().local_size(); ranks > 1) {
    nnvmc::batching::MemoryBudget::set_cpu_sharers(ranks);  // (an explicit budget is each rank's)
    if (const auto host = nnvmc::batching::host_memory(); host.available > 0 && !host.available_per_process)
      nnvmc::batching::MemoryBudget::set_cpu_auto_bytes(
          static_cast<std::int64_t>(nnvmc::batching::MemoryBudget::kAutoFraction * double(host.share(ranks))));
  }
  CLI::App app{"nnvmc: neural-network variational Monte Carlo for molecules"};
  app.require_subcommand(1);
  app.fallthrough();  // global options (--log-level) may follow the subcommand
  // Command-line errors look like every other error ("nnvmc: error: ..."), then the help hint.
  app.failure_message([](const CLI::App* a, const CLI::Error& e) {
    std::string what = e.what();
    // an option given twice: CLI11 says "--basis: At Most 1 required but received 2"
    static const std::regex twice("^(.*): At Most 1 required but received ([0-9]+)$");
    what = std::regex_replace(what, twice, "$1 is given $2 times; it takes one value");
    std::string out = "nnvmc: error: " + what + "\n";
    if (a->get_help_ptr() != nullptr) out += "Run with " + a->get_help_ptr()->get_name() + " for more information.\n";
    return out;
  });
  std::string level = "info";
  app.add_option("--log-level", level, "debug | info | warn | error")
      ->check(CLI::IsMember({"debug", "info", "warn", "error"}));  // spdlog would read a typo as "off"
  // Other ranks compute the same numbers: only rank 0 prints progress (errors from any rank).
  app.parse_complete_callback([&] { nnvmc::setup_logging(root ? level : "error"); });
  app.add_flag_callback(
      "--version",
      [root] {
        if (root)  // (once under mpirun)
          std::printf("nnvmc %s\n  data root   %s\n  basis sets  %s\n  molecules   %s\n  scripts     %s\n  libtorch    %s\n",
                    NNVMC_VERSION, nnvmc::data_root().c_str(), nnvmc::basis_data_dir().c_str(),
                    nnvmc::molecules_data_dir().c_str(), nnvmc::scripts_data_dir().c_str(),
                    nnvmc::batching::loaded_torch_lib_dir().c_str());
        throw CLI::Success();
      },
      "print the version and where data files and libtorch are found");
  // Subcommands: explicit registration, one file each.
  nnvmc::app::add_train_command(app);
  nnvmc::app::add_eval_command(app);
  nnvmc::app::add_scf_command(app);
  nnvmc::app::add_ccsd_command(app);
  nnvmc::app::add_compare_command(app);
  nnvmc::app::add_profile_command(app);
  nnvmc::app::add_config_command(app);
  // `nnvmc trian ...`: CLI11 says only "A subcommand is required" (and with --help shows the main
  // help, exit 0); name the word it took for one.
  const auto unknown_command = [&]() -> int {
    for (int i = 1; i < argc; ++i) {
      const std::string word = argv[i];
      if (word == "--log-level") ++i;  // (its value)
      if (word.empty() || word[0] == '-') continue;
      for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
        if (sub->check_name(word)) return 0;
      std::string commands;
      for (const CLI::App* sub : app.get_subcommands([](CLI::App* s) { return !s->get_group().empty(); }))  // (not hidden ones)
        commands += (commands.empty() ? "" : ", ") + sub->get_name();
      const std::string message = "unknown command '" + word + "' (commands: " + commands + ")";
      if (nnvmc::parallel::world().size() > 1) return nnvmc::parallel::fail(message, 2);  // (as other errors)
      std::fprintf(stderr, "nnvmc: error: %s\nRun with --help for more information.\n", message.c_str());
      return 2;
    }
    return 0;
  };
  if (const int rc = unknown_command()) return rc;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Every rank parses the same command line, but a bound may depend on the node (scf
    // --threads): an error on some ranks only must not leave the others in a collective.
    if (e.get_exit_code() != 0 && nnvmc::parallel::world().size() > 1) return nnvmc::parallel::fail(e.what(), 2);
    const int rc = root ? app.exit(e) : (e.get_exit_code() == 0 ? 0 : 2);
    return rc == 0 ? 0 : 2;
  } catch (const nnvmc::InputError& e) {
    return nnvmc::parallel::fail(e.what(), 2);  // with several ranks: MPI_Abort, no rank left waiting
  } catch (const nnvmc::BudgetError& e) {  // the memory budget the user set cannot be met
    return nnvmc::parallel::fail(e.what(), 2);
  } catch (const c10::Error& e) {  // libtorch's (e.g. no usable CUDA driver): its message without the C++ backtrace
    std::string what = e.what_without_backtrace();
    // An allocation the memory budget did not foresee (CUDA: OutOfMemoryError; the CPU
    // allocator throws a plain c10::Error): say what to change.
    if (dynamic_cast<const c10::OutOfMemoryError*>(&e) != nullptr || what.find("can't allocate memory") != std::string::npos ||
        what.find("not enough memory") != std::string::npos)
      what = "out of memory: " + what + out_of_memory_advice(app);
    return nnvmc::parallel::fail(what, 1);
  } catch (const std::filesystem::filesystem_error& e) {  // a path std::filesystem could not follow
    // (it read "filesystem error: status: Too many levels of symbolic links [loop]"): the path
    // and the reason; a path the user gave that cannot be followed is bad input (exit 2)
    std::string what = e.path1().empty() ? std::string(e.what())
                                         : "'" + e.path1().string() + "'" +
                                               (e.path2().empty() ? "" : " ('" + e.path2().string() + "')") + ": " +
                                               e.code().message();
    const int c = e.code().value();
    const bool input = e.code().category() == std::generic_category() || e.code().category() == std::system_category();
    const bool users = input && (c == ELOOP || c == ENOENT || c == ENOTDIR || c == EACCES || c == EPERM || c == EROFS ||
                                 c == ENAMETOOLONG || c == EEXIST || c == EISDIR);
    return nnvmc::parallel::fail(what, users ? 2 : 1);
  } catch (const std::bad_alloc& e) {  // an allocation outside libtorch (e.g. a std::vector)
    return nnvmc::parallel::fail(std::string("out of memory: ") + e.what() + out_of_memory_advice(app), 1);
  } catch (const std::exception& e) {
    return nnvmc::parallel::fail(e.what(), 1);
  }
  // What a command printed (a --json result, a report) reached its reader: a closed or full
  // standard output is an error, not a silent success.
  std::cout.flush();
  if (!std::cout || std::fflush(stdout) != 0 || std::ferror(stdout))
    return nnvmc::parallel::fail("cannot write the result to standard output (closed, or a full disk?)", 1);
  return 0;
}
