/// Integrals: normalisation, textbook values, ERI symmetry and consistency of the ERI forms.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/errors.hpp"
#include "core/system.hpp"
#include "scf/basis.hpp"
#include "scf/integrals.hpp"
#include "scf/jk_builder.hpp"
#include "test_helpers.hpp"

using namespace nnvmc;
using namespace nnvmc::scf;

namespace {
System h2() { return load_molecule("h2", scftest::kMolecules); }  // R = 1.4 bohr
System h2o() { return load_molecule("h2o", scftest::kMolecules); }
}  // namespace

TEST(Integrals, OverlapOfNormalisedFunctionsHasUnitDiagonal) {
  for (const char* b : {"sto-3g", "cc-pvdz", "cc-pvtz"}) {
    const auto S = overlap_matrix(make_basis(b, h2o()));
    for (int i = 0; i < S.rows(); ++i) EXPECT_NEAR(S(i, i), 1.0, 1e-12) << b << " function " << i;
    EXPECT_NEAR((S - S.transpose()).cwiseAbs().maxCoeff(), 0.0, 1e-15);
  }
}

// ⟨p_a|q_b⟩ between the functions of one atom at two places: with itself, the overlap matrix;
// two H 1s (STO-3G) 1.4 bohr apart, Szabo & Ostlund's S₁₂.
TEST(Integrals, CrossOverlapBetweenTwoGeometriesIsTheOverlapOfTheirFunctions) {
  const BasisSet b = make_basis("cc-pvdz", h2o());
  EXPECT_NEAR((cross_overlap_matrix(b, b) - overlap_matrix(b)).cwiseAbs().maxCoeff(), 0.0, 1e-14);
  System here, there;
  here.atoms = {Atom{1, {0, 0, 0}}};
  there.atoms = {Atom{1, {0, 0, 1.4}}};
  here.spin = there.spin = 1;
  const auto s = cross_overlap_matrix(make_basis("sto-3g", here), make_basis("sto-3g", there));
  ASSERT_EQ(s.rows(), 1);
  ASSERT_EQ(s.cols(), 1);
  EXPECT_NEAR(s(0, 0), 0.6593, 1e-4);
}

TEST(Integrals, H2Sto3gMatchesSzaboOstlund) {
  // Szabo & Ostlund, Modern Quantum Chemistry, §3.5.2 (H2, STO-3G, R = 1.4 bohr).
  const System s = h2();
  const BasisSet b = make_basis("sto-3g", s);
  const auto S = overlap_matrix(b);
  const auto T = kinetic_matrix(b);
  const auto V = nuclear_attraction_matrix(b, s);
  EXPECT_NEAR(S(0, 1), 0.6593, 1e-4);
  EXPECT_NEAR(T(0, 0), 0.7600, 1e-4);
  EXPECT_NEAR(T(0, 1), 0.2365, 1e-4);
  EXPECT_NEAR(V(0, 0), -1.2266 - 0.6538, 1e-4);  // V¹₁₁ + V²₁₁
  EXPECT_NEAR(V(0, 1), 2 * -0.5974, 1e-4);
  const auto eri = eri_full(b);
  auto at = [&](int p, int q, int r, int t) { return eri[((p * 2 + q) * 2 + r) * 2 + t]; };
  EXPECT_NEAR(at(0, 0, 0, 0), 0.7746, 1e-4);
  EXPECT_NEAR(at(0, 0, 1, 1), 0.5697, 1e-4);
  EXPECT_NEAR(at(1, 0, 0, 0), 0.4441, 1e-4);
  EXPECT_NEAR(at(1, 0, 1, 0), 0.2970, 1e-4);
}

TEST(Integrals, KineticAndNuclearOfHydrogenSTermsAreExactForOnePrimitive) {
  // One normalised s Gaussian e^{-α r²}: T = 3α/2, ⟨−1/r⟩ = −2 sqrt(2α/π).
  const std::string text = "BASIS \"ao basis\" SPHERICAL\nH S\n 0.8 1.0\nEND\n";
  System s;
  s.atoms = {Atom{1, {0, 0, 0}}};
  const std::string dir = ::testing::TempDir() + "/nnvmc_basis_one";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/one.nw") << text;
  BasisOptions opts;
  opts.directory = dir;
  const BasisSet b = make_basis("one", s, opts);
  EXPECT_NEAR(kinetic_matrix(b)(0, 0), 1.5 * 0.8, 1e-13);
  EXPECT_NEAR(nuclear_attraction_matrix(b, s)(0, 0), -2 * std::sqrt(2 * 0.8 / M_PI), 1e-13);
  // (ss|ss) of four identical normalised s Gaussians = 2 sqrt(α/π).
  EXPECT_NEAR(eri_full(b)[0], 2 * std::sqrt(0.8 / M_PI), 1e-13);
}

TEST(Integrals, FullEriHasEightfoldSymmetryAndMatchesColumnsAndDiagonal) {
  const BasisSet b = make_basis("cc-pvdz", load_molecule("lih", scftest::kMolecules));
  const std::size_t n = b.n_functions();
  const auto eri = eri_full(b);
  auto at = [&](std::size_t p, std::size_t q, std::size_t r, std::size_t s) {
    return eri[((p * n + q) * n + r) * n + s];
  };
  double asym = 0;
  for (std::size_t p = 0; p < n; p += 3)
    for (std::size_t q = 0; q < n; q += 2)
      for (std::size_t r = 0; r < n; ++r)
        for (std::size_t s = 0; s < n; ++s) {
          const double v = at(p, q, r, s);
          asym = std::max({asym, std::abs(v - at(q, p, r, s)), std::abs(v - at(p, q, s, r)),
                           std::abs(v - at(r, s, p, q))});
        }
  EXPECT_LT(asym, 1e-14);

  const auto diag = eri_diagonal(b);
  for (std::size_t p = 0; p < n; ++p)
    for (std::size_t q = 0; q < n; ++q) EXPECT_NEAR(diag[p * n + q], at(p, q, p, q), 1e-14);

  const std::vector<std::pair<int, int>> pairs{{0, 0}, {4, 1}, {1, 4}, {static_cast<int>(b.n_shells()) - 1, 2}};
  const Eigen::MatrixXd cols = eri_columns(b, pairs);
  const auto& off = b.shell_offsets();
  std::size_t col = 0;
  for (const auto& [R, S] : pairs)
    for (std::size_t r = off[R]; r < off[R + 1]; ++r)
      for (std::size_t s = off[S]; s < off[S + 1]; ++s, ++col)
        for (std::size_t p = 0; p < n; ++p)
          for (std::size_t q = 0; q < n; ++q) ASSERT_NEAR(cols(p * n + q, col), at(p, q, r, s), 1e-14);
  EXPECT_EQ(col, static_cast<std::size_t>(cols.cols()));

  // the same columns over the unique pairs p ≥ q (what the on-demand Cholesky reads)
  const EriPairColumns unique(b);
  ASSERT_EQ(unique.n_rows(), n * (n + 1) / 2);
  const auto udiag = unique.diagonal();
  for (std::size_t p = 0; p < n; ++p)
    for (std::size_t q = 0; q <= p; ++q) EXPECT_NEAR(udiag[p * (p + 1) / 2 + q], at(p, q, p, q), 1e-14);
  for (const auto& [R, S] : pairs) {
    const std::size_t nrs = (off[R + 1] - off[R]) * (off[S + 1] - off[S]);
    std::vector<double> block(nrs * unique.n_rows(), -1.0);
    unique.columns(R, S, block.data());
    for (std::size_t r = off[R], c = 0; r < off[R + 1]; ++r)
      for (std::size_t s = off[S]; s < off[S + 1]; ++s, ++c)
        for (std::size_t p = 0; p < n; ++p)
          for (std::size_t q = 0; q <= p; ++q)
            ASSERT_NEAR(block[c * unique.n_rows() + p * (p + 1) / 2 + q], at(p, q, r, s), 1e-14);
  }
  EXPECT_THROW(unique.columns(int(b.n_shells()), 0, nullptr), InputError);
}

TEST(Integrals, SchwarzBoundsHoldForEveryQuartetOfASpreadOutMolecule) {
  // A water dimer has shell pairs with tiny overlap, where (ab|ab) ~ S_ab² is far below
  // (ab|cd) ~ S_ab: the bound must not be screened to zero.
  const BasisSet b = make_basis("cc-pvdz", scftest::water_cluster(2));
  const std::size_t n = b.n_functions();
  const auto Q = schwarz_bounds(b);
  const auto eri = eri_full(b);
  const auto& off = b.shell_offsets();
  double worst = 0;
  for (std::size_t P = 0; P < b.n_shells(); ++P)
    for (std::size_t R = 0; R < b.n_shells(); ++R)
      for (std::size_t p = off[P]; p < off[P + 1]; ++p)
        for (std::size_t q = off[R]; q < off[R + 1]; ++q)
          for (std::size_t r = 0; r < n; ++r) {
            const std::size_t S = function_to_shell(b, r).first;
            for (std::size_t T = 0; T < b.n_shells(); ++T)
              for (std::size_t s = off[T]; s < off[T + 1]; ++s)
                worst = std::max(worst, std::abs(eri[((p * n + q) * n + r) * n + s]) - Q(P, R) * Q(S, T));
          }
  EXPECT_LT(worst, 1e-12);
}

TEST(Integrals, FunctionToShellInvertsOffsets) {
  const BasisSet b = make_basis("cc-pvdz", h2o());
  for (std::size_t p = 0; p < b.n_functions(); ++p) {
    const auto [s, i] = function_to_shell(b, p);
    EXPECT_EQ(b.shell_offsets()[s] + i, p);
  }
  EXPECT_THROW(function_to_shell(b, b.n_functions()), InputError);
}

TEST(JKBuilder, InCoreAndDirectAgreeWithContractionsOfTheFullTensor) {
  const BasisSet b = make_basis("6-31g*", h2o());
  const std::size_t n = b.n_functions();
  const auto eri = eri_full(b);
  Eigen::MatrixXd D = Eigen::MatrixXd::Random(n, n);
  D = (D + D.transpose()).eval();
  Eigen::MatrixXd J_ref = Eigen::MatrixXd::Zero(n, n), K_ref = Eigen::MatrixXd::Zero(n, n);
  for (std::size_t p = 0; p < n; ++p)
    for (std::size_t q = 0; q < n; ++q)
      for (std::size_t r = 0; r < n; ++r)
        for (std::size_t s = 0; s < n; ++s) {
          J_ref(p, q) += eri[((p * n + q) * n + r) * n + s] * D(r, s);
          K_ref(p, q) += eri[((p * n + r) * n + q) * n + s] * D(r, s);
        }
  for (std::size_t mb : {std::size_t{2048}, std::size_t{0}}) {
    JKOptions o;
    o.max_incore_mb = mb;
    const JKBuilder jk(b, o);
    EXPECT_EQ(jk.in_core(), mb > 0);
    Eigen::MatrixXd J;
    std::vector<Eigen::MatrixXd> K;
    jk.build(D, {D, 2 * D}, J, K);
    EXPECT_LT((J - J_ref).cwiseAbs().maxCoeff(), 1e-12);
    EXPECT_LT((K[0] - K_ref).cwiseAbs().maxCoeff(), 1e-12);
    EXPECT_LT((K[1] - 2 * K_ref).cwiseAbs().maxCoeff(), 1e-12);
  }
}

// Cholesky J/K: the residual of the decomposition is positive semi-definite with diagonal below
// tau, so every ERI is off by at most tau (Cauchy–Schwarz) and |ΔJ|, |ΔK| ≤ tau·Σ|D_rs|; an
// indefinite D (as an incremental or DIIS density can be) is handled through its signed
// eigen-factorisation.
TEST(JKBuilder, CholeskyJKIsWithinTauOfTheExactOneAndConverges) {
  const BasisSet b = make_basis("6-31g*", h2o());
  const std::size_t n = b.n_functions();
  Eigen::MatrixXd D = Eigen::MatrixXd::Random(n, n);
  D = (D + D.transpose()).eval();
  const JKBuilder exact(b);
  Eigen::MatrixXd J_ref;
  std::vector<Eigen::MatrixXd> K_ref;
  exact.build(D, {D}, J_ref, K_ref);
  double previous = 1e300;
  for (double tau : {1e-3, 1e-6, 1e-9}) {
    JKOptions o;
    o.cholesky_tau = tau;
    const JKBuilder jk(b, o);
    EXPECT_GT(jk.cholesky_vectors(), 0u);
    EXPECT_LT(jk.cholesky_vectors(), n * (n + 1) / 2);
    Eigen::MatrixXd J;
    std::vector<Eigen::MatrixXd> K;
    jk.build(D, {D, -D}, J, K);
    const double bound = tau * D.cwiseAbs().sum();
    const double dj = (J - J_ref).cwiseAbs().maxCoeff(), dk = (K[0] - K_ref[0]).cwiseAbs().maxCoeff();
    EXPECT_LE(dj, bound) << tau;
    EXPECT_LE(dk, bound) << tau;
    EXPECT_LT((K[1] + K_ref[0]).cwiseAbs().maxCoeff(), bound) << tau;  // K is linear in D
    EXPECT_LT(std::max(dj, dk), previous) << tau;
    previous = std::max(dj, dk);
  }
}

TEST(JKBuilder, RepeatedBuildsOnSeveralThreadsAreBitIdentical) {
  // Resumed runs must equal uninterrupted ones bit for bit, and PauliNet's baseline comes from
  // this SCF: J and K may not depend on which thread happened to take which quartets.
  const BasisSet b = make_basis("6-31g*", h2o());
  const std::size_t n = b.n_functions();
  Eigen::MatrixXd D = Eigen::MatrixXd::Random(n, n);
  D = (D + D.transpose()).eval();
  for (std::size_t mb : {std::size_t{2048}, std::size_t{0}}) {
    JKOptions o;
    o.max_incore_mb = mb;
    o.integrals.threads = 4;
    const JKBuilder jk(b, o);
    Eigen::MatrixXd J0, J;
    std::vector<Eigen::MatrixXd> K0, K;
    jk.build(D, {D}, J0, K0);
    for (int repeat = 0; repeat < 20; ++repeat) {
      jk.build(D, {D}, J, K);
      ASSERT_TRUE(J == J0) << "repeat " << repeat << ", in core " << jk.in_core();
      ASSERT_TRUE(K[0] == K0[0]) << "repeat " << repeat << ", in core " << jk.in_core();
    }
  }
}
