#pragma once
/// @file driver.hpp
/// Molecule → RHF → MO integrals → CCSD(T), as the `nnvmc ccsd` command runs it.
#include <string>

#include "ccsd/rccsd.hpp"
#include "core/system.hpp"
#include "scf/scf.hpp"

namespace nnvmc::ccsd {

/// What to run.
struct CcsdRunOptions {
  std::string basis = "cc-pvdz";  ///< basis set name
  double cholesky_tau = 0;        ///< Cholesky threshold of the AO ERIs; 0: conventional integrals
  bool frozen_core = false;       ///< freeze the chemical core orbitals
  CcsdOptions ccsd;               ///< solver, (T), batching options
};

/// Results of every stage.
struct CcsdRun {
  scf::ScfResult rhf;              ///< the reference
  CcsdResult cc;                   ///< CCSD(T)
  int n_frozen = 0;                ///< frozen orbitals
  int n_cholesky = 0;              ///< Cholesky vectors (0: conventional)
  double seconds_scf = 0;          ///< RHF wall time
  double seconds_integrals = 0;    ///< MO integral (and Cholesky) wall time
};

/// Runs RHF and CC. @throws InputError (open shell, unknown basis), NumericalError, BudgetError.
CcsdRun run_ccsd(const System& system, const CcsdRunOptions& options);

}  // namespace nnvmc::ccsd
