/// nnvmc config [CONFIG] [key=value ...] [--markdown]
/// The complete configuration a run config resolves to (every setting, with a comment each), as
/// `nnvmc train` would record it in config.yaml, without running anything: keys, values and
/// molecules, the basis sets the run builds and Orbformer's element range are checked; what needs
/// the model or the machine (memory budget, model.init_from) only when a run starts. Without
/// CONFIG, the defaults. --markdown: the settings reference (docs/settings.md).
#include <iostream>
#include <memory>

#include "app/commands.hpp"
#include "parallel/communicator.hpp"
#include "app/run_args.hpp"
#include "core/config.hpp"
#include "core/config_reference.hpp"
#include "core/errors.hpp"
#include "core/log.hpp"
#include "core/molecule_list.hpp"
#include "core/system.hpp"
#include "models/orbformer/limits.hpp"
#include "models/registry.hpp"
#include "scf/basis.hpp"

namespace nnvmc::app {

namespace {
struct ConfigArgs {
  std::vector<std::string> args;
  bool markdown = false;
};

/// The basis sets the run will build (pretraining's target, the hf and paulinet orbitals), on
/// each molecule. @throws ConfigError naming the key of an unknown basis, or of one without an
/// element of a molecule, as the run would refuse it
void check_bases(const Config& recorded, const std::vector<System>& molecules) {
  std::vector<std::pair<std::string, std::string>> used;  // key, basis
  if (recorded.pretrain.steps > 0) used.emplace_back("pretrain.basis", recorded.pretrain.basis);
  if (recorded.model.type == "hf") used.emplace_back("model.hf.basis", recorded.model.hf.basis);
  if (recorded.model.type == "paulinet") used.emplace_back("model.paulinet.basis", recorded.model.paulinet.basis);
  for (const auto& [key, basis] : used)
    for (const System& m : molecules) try {
        (void)scf::make_basis(basis, m);
      } catch (const InputError& e) {
        throw ConfigError("'" + key + "': " + e.what());
      }
}

/// The molecules the ansatz can describe, where that needs no model (Orbformer's element range and
/// its anions): `train` refused them while `config` passed them (a user audit).
/// @throws InputError naming the molecule
void check_ansatz_limits(const Config& recorded, const std::vector<System>& molecules) {
  if (recorded.model.type != "orbformer") return;
  const int max_z = recorded.model.orbformer.max_atomic_number();
  for (const System& m : molecules) {
    std::vector<int> z;
    for (const Atom& atom : m.atoms) z.push_back(atom.Z);
    try {
      check_orbformer_molecule(max_z, z, m.n_electrons());
    } catch (const InputError& e) {
      throw InputError("molecule '" + m.name + "': " + e.what());
    }
  }
}

void run_config_command(const ConfigArgs& a) {
  if (a.markdown) {
    if (!a.args.empty()) throw InputError("config: --markdown prints the settings reference; it takes no CONFIG");
    if (parallel::world().is_root()) std::cout << settings_markdown();  // (under mpirun: once)
    return;
  }
  const RunArgs ra = split_run_args(a.args);
  // (without a file, as `nnvmc train key=value ...` resolves it, run.name included)
  const Config config = !ra.file.empty()       ? load_config(ra.file, ra.overrides)
                        : ra.overrides.empty() ? parse_config("", {}, "defaults")
                                               : config_from_overrides(ra.overrides);
  const std::vector<System> molecules = resolve_molecules(config.system);  // (an impossible one is refused here)
  for (const System& m : molecules) log::info(m.electron_summary());
  check_model_type(config, ra);  // an unknown ansatz, named as a run names it
  const Config recorded = as_recorded(config, molecules.front().n_electrons());
  check_bases(recorded, molecules);
  check_ansatz_limits(recorded, molecules);
  if (parallel::world().is_root()) std::cout << to_yaml(recorded);  // every rank checks; rank 0 prints
}
}  // namespace

void add_config_command(CLI::App& app) {
  auto a = std::make_shared<ConfigArgs>();
  auto* cmd = app.add_subcommand(
      "config", "Print the complete configuration a run config resolves to (every setting, commented; without "
                "CONFIG: the defaults); keys, values, molecules and basis sets are checked, nothing is run");
  cmd->add_option("args", a->args, "CONFIG.yaml followed by key.path=value overrides (both optional)");
  cmd->add_flag("--markdown", a->markdown, "print the reference of every setting as Markdown (docs/settings.md)");
  cmd->callback([a] { run_config_command(*a); });
}

}  // namespace nnvmc::app
