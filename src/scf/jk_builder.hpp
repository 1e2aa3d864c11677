#pragma once
/// @file jk_builder.hpp
/// Coulomb and exchange matrices J[D], K[D] from ERIs, for the SCF Fock build.
/// Unique quartets of ERI units (8-fold symmetry; scf/eri_units.hpp: a shell, or the generally
/// contracted shells sharing primitives) that survive Schwarz screening are computed
/// once and kept in memory when they fit in the budget (in-core); otherwise they are
/// recomputed on every build (direct). Both paths run multithreaded. With cholesky_tau > 0 the
/// ERIs are replaced by pivoted Cholesky vectors (scf/cholesky_eri.hpp, error per ERI below
/// tau): J = Σ_x L_x (L_x·D), K = Σ_x (L_x W)(L_x W)ᵀ with D = W S Wᵀ its eigen-factorisation
/// (S = ±1), i.e. GEMMs over n²·M values instead of the shell quartets. With an auxiliary
/// basis (df_basis) the same three-index build runs on density-fitted vectors
/// (scf/density_fitting.hpp) instead.
#include <Eigen/Dense>

#include <cstddef>
#include <memory>
#include <vector>

#include "scf/basis.hpp"
#include "scf/integrals.hpp"

namespace nnvmc::scf {

/// Options of the J/K builder.
struct JKOptions {
  IntegralOptions integrals;          ///< threads and screening thresholds
  /// in-core ERI storage limit (MB), and at most half of what the host leaves this process
  /// (core/host_memory.hpp); above it the build is direct
  std::size_t max_incore_mb = 2048;
  double cholesky_tau = 0;            ///< > 0: J/K from Cholesky vectors of the ERIs to this threshold
  /// With cholesky_tau > 0: vectors already decomposed to that threshold, in cholesky_eri_pairs'
  /// layout [n(n+1)/2, n_vec], shared with a later user (Cholesky CCSD); null: decomposed here.
  std::shared_ptr<const Eigen::MatrixXd> cholesky_pairs;
  /// Non-null: J/K density-fitted with this auxiliary basis (on the molecule's atoms, in its atom
  /// order); excludes cholesky_tau > 0
  std::shared_ptr<const BasisSet> df_basis;
};

/// Builds J_pq = Σ_rs (pq|rs) D_rs and K_pq = Σ_rs (pr|qs) D_rs for symmetric densities.
class JKBuilder {
 public:
  /// Screens shell pairs and, when they fit in memory, computes and stores the ERIs.
  /// @throws BudgetError (advising Cholesky ERIs) when the list of screened unit quartets
  /// alone would take more than 60 % of what the host leaves this process
  JKBuilder(const BasisSet& basis, const JKOptions& options = {});
  ~JKBuilder();
  JKBuilder(const JKBuilder&) = delete;
  JKBuilder& operator=(const JKBuilder&) = delete;

  /// J for `d_coulomb` and one K per matrix of `d_exchange` (all [n, n], symmetric).
  /// RHF: d_coulomb = D_total, d_exchange = {D_total}; UHF: {D_α + D_β}, {D_α, D_β}.
  void build(const Eigen::MatrixXd& d_coulomb, const std::vector<Eigen::MatrixXd>& d_exchange,
             Eigen::MatrixXd& J, std::vector<Eigen::MatrixXd>& K) const;

  bool in_core() const;                 ///< true when ERIs are stored
  /// Three-index vectors the J/K build runs on: Cholesky vectors, or with df_basis the
  /// density-fitted ones (0: exact ERIs)
  std::size_t cholesky_vectors() const;
  std::size_t n_quartets() const;       ///< unique ERI-unit quartets kept after screening
  std::size_t stored_doubles() const;   ///< ERIs held in memory (0 when direct)

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace nnvmc::scf
