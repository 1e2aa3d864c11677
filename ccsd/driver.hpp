#pragma once
/// @file driver.hpp
/// Molecule → RHF → MO integrals → CCSD(T), as the `nnvmc ccsd` command runs it.
#include <cstdint>
#include <string>

#include "ccsd/rccsd.hpp"
#include "core/system.hpp"
#include "scf/scf.hpp"

namespace nnvmc::ccsd {

/// What to run.
struct CcsdRunOptions {
  std::string basis = "cc-pvdz";  ///< basis set name
  double cholesky_tau = 0;        ///< Cholesky threshold of the AO ERIs; 0: conventional integrals
  /// With cholesky_tau > 0: the RHF on exact ERIs. Default (false): the RHF's J/K use the same
  /// Cholesky vectors as the CCSD, decomposed once (Psi4's scf_type cd with cc_type cd).
  bool exact_scf = false;
  bool frozen_core = false;       ///< freeze the chemical core orbitals
  scf::ScfOptions scf;            ///< the RHF's guess and convergence settings (its J/K as the options above say)
  bool memory_is_auto = false;    ///< ccsd.plan.budget_bytes is a share of the free memory (--memory auto), for messages
  CcsdOptions ccsd;               ///< solver, (T), batching options
};

/// Results of every stage.
struct CcsdRun {
  scf::ScfResult rhf;              ///< the reference
  CcsdResult cc;                   ///< CCSD(T)
  int n_frozen = 0;                ///< frozen orbitals
  int n_cholesky = 0;              ///< Cholesky vectors (0: conventional)
  bool scf_cholesky = false;       ///< the RHF's J/K came from the Cholesky vectors (not exact ERIs)
  double seconds_scf = 0;          ///< RHF wall time (without the Cholesky decomposition)
  double seconds_integrals = 0;    ///< MO integral (and Cholesky decomposition) wall time
};

/// No CCSD is planned under less working memory than this.
constexpr std::int64_t kMinimumBudgetBytes = std::int64_t(64) << 10;

/// The smallest working-memory budget worth planning a CCSD under: one doubles-amplitude block
/// (o²v² doubles, the CCSD holds several anyway), one AO matrix, with (T) one v³ block, and never
/// less than kMinimumBudgetBytes.
/// @return bytes
std::int64_t minimum_budget_bytes(std::int64_t n_basis, std::int64_t n_occupied, std::int64_t n_frozen, bool triples);

/// Refuses a budget (options.ccsd.plan.budget_bytes > 0) below minimum_budget_bytes, before any
/// integral is computed, and warns below four times it (many small batches run slowly).
/// @throws BudgetError
void check_memory_budget(const System& system, std::int64_t n_basis, const CcsdRunOptions& options);

/// Runs RHF and CC. @throws InputError (open shell, unknown basis), NumericalError, BudgetError.
CcsdRun run_ccsd(const System& system, const CcsdRunOptions& options);

}  // namespace nnvmc::ccsd
