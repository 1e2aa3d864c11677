/// Pivoted Cholesky of the AO ERI matrix: the largest remaining diagonal is the next
/// pivot; its shell pair's columns are computed once and reused for every pivot inside it.
#include "ccsd/cholesky.hpp"

#include "core/errors.hpp"
#include "scf/integrals.hpp"

namespace nnvmc::ccsd {

Eigen::MatrixXd cholesky_ao_eri(const scf::BasisSet& basis, double tau) {
  if (!(tau > 0)) throw InputError("Cholesky threshold must be positive");
  const Eigen::Index n = Eigen::Index(basis.n_functions()), nn = n * n;
  const auto diag_v = scf::eri_diagonal(basis);
  Eigen::VectorXd d = Eigen::Map<const Eigen::VectorXd>(diag_v.data(), nn);
  const auto& off = basis.shell_offsets();
  Eigen::Index n_vec = 0;
  Eigen::MatrixXd store(nn, std::min<Eigen::Index>(nn, 8 * n));
  while (true) {
    Eigen::Index piv = 0;
    const double dmax = d.maxCoeff(&piv);
    if (dmax < tau) break;
    const auto [P, p_in] = scf::function_to_shell(basis, std::size_t(piv / n));
    const auto [Q, q_in] = scf::function_to_shell(basis, std::size_t(piv % n));
    (void)p_in, (void)q_in;
    const Eigen::MatrixXd block = scf::eri_columns(basis, {{P, Q}});  // [nn, |P||Q|]
    const Eigen::Index np = Eigen::Index(off[P + 1] - off[P]), nq = Eigen::Index(off[Q + 1] - off[Q]);
    // pivot inside this shell pair while its diagonals stay above tau
    while (true) {
      Eigen::Index best = -1;
      double best_d = tau;
      for (Eigen::Index a = 0; a < np; ++a)
        for (Eigen::Index b = 0; b < nq; ++b) {
          const Eigen::Index row = (Eigen::Index(off[P]) + a) * n + Eigen::Index(off[Q]) + b;
          if (d(row) > best_d && d(row) > 1e-2 * dmax) best_d = d(row), best = a * nq + b;
        }
      if (best < 0) break;
      const Eigen::Index a = best / nq, b = best % nq;
      const Eigen::Index row = (Eigen::Index(off[P]) + a) * n + Eigen::Index(off[Q]) + b;
      if (n_vec == store.cols()) store.conservativeResize(nn, store.cols() * 2);
      Eigen::VectorXd v = block.col(best);
      if (n_vec > 0) v.noalias() -= store.leftCols(n_vec) * store.leftCols(n_vec).row(row).transpose();
      v /= std::sqrt(best_d);
      d -= v.cwiseAbs2();
      d(row) = 0;
      store.col(n_vec++) = v;
      if (n_vec >= nn) break;
    }
    if (n_vec >= nn) break;
  }
  return store.leftCols(n_vec);
}

}  // namespace nnvmc::ccsd
