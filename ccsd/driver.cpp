#include "ccsd/driver.hpp"

#include <chrono>

#include "ccsd/mo_integrals.hpp"
#include "core/errors.hpp"

namespace nnvmc::ccsd {

CcsdRun run_ccsd(const System& system, const CcsdRunOptions& options) {
  using clock = std::chrono::steady_clock;
  CcsdRun run;
  auto t0 = clock::now();
  if (system.n_electrons() % 2 != 0 || system.spin != 0)  // (run_rhf's message points to UHF, which CCSD does not take)
    throw InputError("CCSD here is closed-shell (RCCSD on an RHF reference), but " +
                     (system.name.empty() ? std::string("the molecule") : system.name) + " has " +
                     std::to_string(system.n_electrons()) + " electrons and spin " + std::to_string(system.spin));
  const scf::BasisSet basis = scf::make_basis(options.basis, system);
  run.rhf = scf::run_rhf(system, basis);
  run.seconds_scf = std::chrono::duration<double>(clock::now() - t0).count();
  run.n_frozen = options.frozen_core ? frozen_core_orbitals(system) : 0;
  t0 = clock::now();
  const MoIntegrals mo = options.cholesky_tau > 0
                             ? cholesky_integrals(run.rhf, basis, run.n_frozen, options.cholesky_tau)
                             : conventional_integrals(run.rhf, basis, run.n_frozen);
  run.n_cholesky = mo.cholesky() ? int(mo.chol.size(0)) : 0;
  run.seconds_integrals = std::chrono::duration<double>(clock::now() - t0).count();
  run.cc = run_rccsd(mo, options.ccsd);
  return run;
}

}  // namespace nnvmc::ccsd
