#pragma once
/// @file integrals.hpp
/// Gaussian integrals over a BasisSet through libint2: one-electron matrices, Schwarz
/// bounds, and electron-repulsion integrals (ERIs) in the forms post-HF code needs.
///
/// Conventions (all functions here):
///  - n = basis.n_functions(); functions numbered as in BasisSet (shell by shell,
///    libint2 order inside a shell, offsets from BasisSet::shell_offsets()).
///  - ERIs are in chemists' notation (pq|rs) = ∫∫ φ_p(1) φ_q(1) r₁₂⁻¹ φ_r(2) φ_s(2), real
///    functions, so (pq|rs) = (qp|rs) = (pq|sr) = (rs|pq).
///  - Matrices are Eigen::MatrixXd (column-major); flat vectors are row-major
///    (the last index runs fastest).
///  - `threads` ≤ 0 means all hardware threads.
#include <Eigen/Dense>

#include <array>
#include <memory>
#include <cstddef>
#include <utility>
#include <vector>

#include "core/system.hpp"
#include "scf/basis.hpp"

namespace nnvmc::scf {

/// Accuracy and parallelism of integral evaluation.
struct IntegralOptions {
  int threads = 0;                   ///< worker threads; ≤ 0 = all hardware threads
  double schwarz_threshold = 1e-12;  ///< skip ERI quartets (of shells or ERI units) with Q_PQ·Q_RS below this (hartree)
  double engine_precision = 1e-15;   ///< libint2 primitive-level screening precision
};

/// Initialises libint2 once per process (thread-safe, idempotent). Every function in this
/// header calls it; call it yourself only before using libint2 engines directly.
void ensure_libint_initialized();

/// Overlap S_pq = ⟨p|q⟩, [n, n]. Spherical and s/p functions have unit diagonal; Cartesian
/// d+ components follow libint2 (only the x^l, y^l, z^l components are unit-normalised).
Eigen::MatrixXd overlap_matrix(const BasisSet& basis, const IntegralOptions& options = {});

/// Overlap between two sets of basis functions, e.g. one molecule's at two geometries:
/// S_pq = ⟨p_a|q_b⟩, [n_a, n_b].
Eigen::MatrixXd cross_overlap_matrix(const BasisSet& a, const BasisSet& b, const IntegralOptions& options = {});

/// Kinetic energy T_pq = ⟨p|−½∇²|q⟩, [n, n].
Eigen::MatrixXd kinetic_matrix(const BasisSet& basis, const IntegralOptions& options = {});

/// Nuclear attraction V_pq = ⟨p| −Σ_I Z_I/|r − R_I| |q⟩, [n, n] (negative definite).
Eigen::MatrixXd nuclear_attraction_matrix(const BasisSet& basis, const System& system,
                                          const IntegralOptions& options = {});

/// Core Hamiltonian H = T + V, [n, n].
Eigen::MatrixXd core_hamiltonian(const BasisSet& basis, const System& system,
                                 const IntegralOptions& options = {});

/// Schwarz bounds per shell pair: Q_PQ = max_{p∈P,q∈Q} sqrt|(pq|pq)|, [n_shells, n_shells];
/// |(pq|rs)| ≤ Q_PQ·Q_RS. Computed without primitive screening (engine_precision is not
/// used): (pq|pq) ~ S_pq² can be far below it while (pq|rs) ~ S_pq is not. Generally contracted
/// shells are computed together from their shared primitives (scf/eri_units.hpp).
Eigen::MatrixXd schwarz_bounds(const BasisSet& basis, const IntegralOptions& options = {});

/// The most eri_full holds by default (4 GiB: n ≈ 152 basis functions).
constexpr std::size_t kMaxFullEriBytes = std::size_t{4} << 30;

/// Full AO ERI tensor, flat row-major [n, n, n, n]: element (pq|rs) at ((p·n + q)·n + r)·n + s.
/// Needs 8·n⁴ bytes (n = 100 → 800 MB): for small bases and tests only.
/// @throws BudgetError if n⁴ doubles exceed `max_bytes`.
std::vector<double> eri_full(const BasisSet& basis, const IntegralOptions& options = {},
                             std::size_t max_bytes = kMaxFullEriBytes);

/// ERI diagonal (pq|pq), flat row-major [n, n] (element p·n + q). This is the starting
/// diagonal of a pivoted Cholesky decomposition of the ERI matrix (pq)×(rs); computed with
/// the same engine_precision as eri_columns, so the two agree to rounding.
std::vector<double> eri_diagonal(const BasisSet& basis, const IntegralOptions& options = {});

/// ERI columns for a list of shell pairs: for each pair (R, S) (shell indices, any order)
/// all (pq|rs) with p, q over every function and r ∈ R, s ∈ S.
/// Result: [n·n, m] column-major matrix, row p·n + q, with m = Σ_k size(R_k)·size(S_k);
/// the columns of pair k start at Σ_{j<k} size(R_j)·size(S_j) and run over (r, s) in
/// row-major order (column offset + r_local·size(S_k) + s_local).
/// Rows are not Schwarz-screened (exact up to engine_precision).
/// @throws InputError for a shell index out of range.
Eigen::MatrixXd eri_columns(const BasisSet& basis,
                            const std::vector<std::pair<int, int>>& shell_pairs,
                            const IntegralOptions& options = {});

/// ERI columns over the unique function pairs p ≥ q, for a pivoted Cholesky decomposition of
/// the ERI matrix: one engine per thread for all calls, and bra shell pairs whose Schwarz bound
/// with the column's shell pair is below options.schwarz_threshold left at zero.
/// Rows: the pair (p, q), p ≥ q, is row p(p+1)/2 + q.
class EriPairColumns {
 public:
  explicit EriPairColumns(const BasisSet& basis, const IntegralOptions& options = {});
  ~EriPairColumns();
  EriPairColumns(const EriPairColumns&) = delete;
  EriPairColumns& operator=(const EriPairColumns&) = delete;

  std::size_t n_rows() const;  ///< n(n+1)/2
  /// Diagonal (pq|pq) per row (the same engine precision as columns()).
  std::vector<double> diagonal() const;
  /// All (pq|rs) with r ∈ R, s ∈ S as out[c · n_rows() + row(p, q)], c = r_local·|S| + s_local
  /// (|R|·|S| columns; `out` must hold that many n_rows() blocks and is overwritten).
  void columns(int R, int S, double* out) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Shell containing function p, and its index inside the shell (binary search in offsets).
std::pair<int, int> function_to_shell(const BasisSet& basis, std::size_t p);

}  // namespace nnvmc::scf
