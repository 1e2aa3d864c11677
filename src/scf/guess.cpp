/// @file guess.cpp
/// Core-Hamiltonian and SAD initial densities.
#include "scf/guess.hpp"

#include <map>
#include <memory>

#include "scf/density_fitting.hpp"
#include "scf/integrals.hpp"
#include "scf/scf_loop.hpp"

namespace nnvmc::scf {

Eigen::MatrixXd core_density(const Eigen::MatrixXd& H, const Eigen::MatrixXd& S, double electrons,
                             double lindep_threshold) {
  const Eigen::MatrixXd X = detail::orthogonalizer(S, lindep_threshold);
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(X.transpose() * H * X);
  const Eigen::MatrixXd C = X * es.eigenvectors();
  const Eigen::VectorXd occ = detail::aufbau_occupations(es.eigenvalues(), electrons, 2.0, true);
  return C * occ.asDiagonal() * C.transpose();
}

Eigen::MatrixXd sad_density(const System& system, const BasisSet& basis, const ScfOptions& options,
                            const JKBuilder* molecule_jk) {
  const std::size_t n = basis.n_functions();
  Eigen::MatrixXd D = Eigen::MatrixXd::Zero(n, n);
  const auto& shells = basis.shells();
  const auto& off = basis.shell_offsets();
  const auto& shell_atom = basis.shell_atoms();
  std::map<int, Eigen::MatrixXd> atomic;  // density per element, in its own functions

  for (std::size_t a = 0; a < system.atoms.size(); ++a) {
    // This atom's shells (contiguous in BasisSet order).
    std::vector<libint2::Shell> own;
    std::size_t first = n;
    for (std::size_t s = 0; s < shells.size(); ++s)
      if (shell_atom[s] == static_cast<int>(a)) {
        own.push_back(shells[s]);
        first = std::min(first, off[s]);
      }
    if (own.empty()) continue;
    const int Z = system.atoms[a].Z;
    auto it = atomic.find(Z);
    if (it == atomic.end()) {
      System atom;
      atom.atoms = {system.atoms[a]};
      const BasisSet ab(basis.name(), own, std::vector<int>(own.size(), 0));
      const Eigen::MatrixXd S = overlap_matrix(ab, options.jk.integrals);
      const Eigen::MatrixXd H = core_hamiltonian(ab, atom, options.jk.integrals);
      std::unique_ptr<JKBuilder> atom_jk;  // (null: the molecule's, when it is this atom)
      if (molecule_jk == nullptr || system.atoms.size() != 1) {
        JKOptions atom_options = options.jk;
        atom_options.cholesky_pairs = nullptr;  // vectors given for the molecule are not the atom's
        if (options.jk.df_basis)  // (the atom's own auxiliary functions)
          atom_options.df_basis = std::make_shared<const BasisSet>(atom_subset(*options.jk.df_basis, int(a)));
        atom_jk = std::make_unique<JKBuilder>(ab, atom_options);
      }
      const JKBuilder& jk = atom_jk ? *atom_jk : *molecule_jk;
      ScfOptions ao = options;
      ao.max_iterations = 40;
      ao.energy_tolerance = 1e-7;
      ao.commutator_tolerance = 1e-5;
      ao.level_shift = 0;
      ao.damping = 0;
      detail::ScfProblem pb{S, H, jk, 0.0, {static_cast<double>(Z)}, true};
      const auto st = detail::solve_scf(pb, {core_density(H, S, Z, ao.lindep_threshold)}, ao);
      it = atomic.emplace(Z, st.D[0]).first;
    }
    D.block(first, first, it->second.rows(), it->second.cols()) = it->second;
  }
  return D;
}

}  // namespace nnvmc::scf
