/// nnvmc — neural-network variational Monte Carlo for molecules (command line).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>

#include "app/commands.hpp"
#include "core/errors.hpp"
#include "core/log.hpp"

int main(int argc, char** argv) {
  CLI::App app{"nnvmc: neural-network variational Monte Carlo for molecules"};
  app.require_subcommand(1);
  app.fallthrough();  // global options (--log-level) may follow the subcommand
  std::string level = "info";
  app.add_option("--log-level", level, "debug | info | warn | error");
  app.parse_complete_callback([&] { nnvmc::setup_logging(level); });
  // Subcommands: explicit registration, one file each.
  nnvmc::app::add_train_command(app);
  nnvmc::app::add_eval_command(app);
  nnvmc::app::add_scf_command(app);
  nnvmc::app::add_ccsd_command(app);
  nnvmc::app::add_compare_command(app);
  nnvmc::app::add_profile_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  } catch (const nnvmc::InputError& e) {
    std::fprintf(stderr, "nnvmc: error: %s\n", e.what());
    return 2;
  } catch (const nnvmc::BudgetError& e) {  // the memory budget the user set cannot be met
    std::fprintf(stderr, "nnvmc: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "nnvmc: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
