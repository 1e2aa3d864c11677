/// The SCF's dense kernels (scf/dense_kernels.hpp): Eigen's, split over threads, and libtorch's
/// (scf/dense_kernels_torch.hpp) against plain products, and the SCF energies on each.
#include <gtest/gtest.h>

#include <Eigen/Dense>

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <string>

#include "core/system.hpp"
#include "scf/basis.hpp"
#include "scf/dense_kernels.hpp"
#include "scf/dense_kernels_torch.hpp"
#include "scf/density_fitting.hpp"
#include "scf/jk_builder.hpp"
#include "scf/scf.hpp"
#include "test_helpers.hpp"

using namespace nnvmc;
using namespace nnvmc::scf;

namespace {

/// Installs libtorch's kernels for one test and puts Eigen's back after it.
struct TorchKernels {
  TorchKernels() { install_torch_dense_kernels(); }
  ~TorchKernels() { set_dense_kernels({}); }
};

Eigen::MatrixXd random_matrix(Eigen::Index rows, Eigen::Index cols, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  Eigen::MatrixXd m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = u(rng);
  return m;
}

/// op(A)·op(B) stored in column-major buffers with leading dimensions 3 larger than their rows,
/// against Eigen's plain product, for C = alpha·op(A)op(B) + beta·C.
void check_gemm(GemmKernel kernel, bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, double alpha,
                double beta, int threads) {
  const Eigen::MatrixXd opa = random_matrix(m, k, 1), opb = random_matrix(k, n, 2), c0 = random_matrix(m, n, 3);
  const Eigen::MatrixXd a = ta ? Eigen::MatrixXd(opa.transpose()) : opa, b = tb ? Eigen::MatrixXd(opb.transpose()) : opb;
  const std::int64_t lda = a.rows() + 3, ldb = b.rows() + 3, ldc = m + 3;
  Eigen::MatrixXd abuf = Eigen::MatrixXd::Constant(lda, a.cols(), 1e300), bbuf = Eigen::MatrixXd::Constant(ldb, b.cols(), 1e300);
  abuf.topRows(a.rows()) = a, bbuf.topRows(b.rows()) = b;
  // beta = 0 must ignore C's old values, NaN included
  Eigen::MatrixXd cbuf = Eigen::MatrixXd::Constant(ldc, n, 7.0);
  cbuf.topRows(m) = beta == 0 ? Eigen::MatrixXd::Constant(m, n, std::numeric_limits<double>::quiet_NaN()) : c0;
  kernel(ta, tb, m, n, k, alpha, abuf.data(), lda, bbuf.data(), ldb, beta, cbuf.data(), ldc, threads);
  const Eigen::MatrixXd expected = alpha * opa * opb + (beta == 0 ? Eigen::MatrixXd::Zero(m, n) : Eigen::MatrixXd(beta * c0));
  const std::string what = std::string(ta ? "T" : "N") + (tb ? "T" : "N") + " " + std::to_string(m) + "x" +
                           std::to_string(n) + "x" + std::to_string(k) + " beta " + std::to_string(beta);
  ASSERT_TRUE(cbuf.topRows(m).allFinite()) << what;
  EXPECT_LT((cbuf.topRows(m) - expected).cwiseAbs().maxCoeff(), 1e-12 * (1 + double(k))) << what;
  EXPECT_TRUE((cbuf.bottomRows(3).array() == 7.0).all()) << what << ": wrote past the rows of C";
}

void check_gemm_kernel(GemmKernel kernel) {
  for (const bool ta : {false, true})
    for (const bool tb : {false, true}) {
      check_gemm(kernel, ta, tb, 37, 29, 41, 1.0, 0.0, 1);
      check_gemm(kernel, ta, tb, 300, 250, 120, -0.5, 1.0, 2);  // large enough to split over the threads (rows)
      check_gemm(kernel, ta, tb, 120, 400, 150, 1.0, 0.0, 3);   // (columns)
      check_gemm(kernel, ta, tb, 1000, 1, 300, 2.0, 1.5, 2);    // a matrix-vector product
      check_gemm(kernel, ta, tb, 20, 30, 0, 1.0, 2.0, 1);       // no inner dimension: C = beta·C
    }
}

/// X U⁻¹ for X [m, k] with leading dimension m + 5, against X recovered by multiplying back.
void check_trsm(TrsmKernel kernel, std::int64_t m, std::int64_t k, int threads) {
  Eigen::MatrixXd u = random_matrix(k, k, 4);
  u.diagonal().array() += 4.0;  // well conditioned
  Eigen::MatrixXd u_buf = Eigen::MatrixXd::Constant(k + 2, k, 1e300);  // leading dimension k + 2
  u_buf.topRows(k) = u;
  u_buf.topRows(k).triangularView<Eigen::StrictlyLower>().setConstant(1e300);  // must not be read
  const Eigen::MatrixXd x0 = random_matrix(m, k, 5);
  const std::int64_t ldx = m + 5;
  Eigen::MatrixXd xbuf = Eigen::MatrixXd::Constant(ldx, k, 9.0);
  xbuf.topRows(m) = x0;
  kernel(xbuf.data(), m, k, ldx, u_buf.data(), k + 2, threads);
  const Eigen::MatrixXd back = xbuf.topRows(m) * Eigen::MatrixXd(u.triangularView<Eigen::Upper>());
  EXPECT_LT((back - x0).cwiseAbs().maxCoeff(), 1e-12) << m << "x" << k;
  EXPECT_TRUE((xbuf.bottomRows(5).array() == 9.0).all());
}

}  // namespace

TEST(DenseKernels, EigenGemmSplitOverThreadsMatchesThePlainProduct) { check_gemm_kernel(&eigen_gemm); }

TEST(DenseKernels, LibtorchGemmMatchesThePlainProductForEveryLayout) {
  TorchKernels torch_kernels;
  ASSERT_STREQ(dense_kernels().name, "libtorch");
  check_gemm_kernel(dense_kernels().gemm);
}

TEST(DenseKernels, BothTriangularSolvesInvertTheUpperFactorOnTheRight) {
  check_trsm(&eigen_trsm_upper_right, 1500, 60, 2);
  TorchKernels torch_kernels;
  check_trsm(dense_kernels().trsm, 9000, 40, 2);  // several of its 4096-row slices
  check_trsm(dense_kernels().trsm, 7, 3, 1);
}

// The three-index J/K over several blocks of vectors (C4H4/cc-pVDZ fitted: 76 functions, 372
// vectors, blocks of 181, 181 and 10) equals the direct sums J = Σ_x L_x tr(L_x D),
// K = Σ_x L_x D L_x, for an indefinite D and its negative, on both kernels.
TEST(DenseKernels, ThreeIndexJKOverSeveralBlocksEqualsTheDirectSums) {
  const System c4h4 = load_molecule("c4h4", scftest::kMolecules);
  const BasisSet basis = make_basis("cc-pvdz", c4h4);
  JKOptions o;
  o.integrals.threads = 2;
  o.df_basis = std::make_shared<const BasisSet>(make_fitting_basis(kDefaultFittingBasis, c4h4));
  const Eigen::MatrixXd pairs = density_fitted_pairs(basis, *o.df_basis, o.integrals);
  const Eigen::Index n = Eigen::Index(basis.n_functions()), M = pairs.cols();
  ASSERT_GT(M, 2 * ((Eigen::Index(1) << 20) / (n * n)));  // (at least three blocks)
  const Eigen::MatrixXd D = [&] {
    const Eigen::MatrixXd r = random_matrix(n, n, 6);
    return Eigen::MatrixXd(r + r.transpose());
  }();
  Eigen::MatrixXd J_ref = Eigen::MatrixXd::Zero(n, n), K_ref = Eigen::MatrixXd::Zero(n, n), Lx(n, n);
  for (Eigen::Index x = 0; x < M; ++x) {
    for (Eigen::Index p = 0; p < n; ++p)
      for (Eigen::Index q = 0; q <= p; ++q) Lx(p, q) = Lx(q, p) = pairs(p * (p + 1) / 2 + q, x);
    J_ref += Lx * (Lx.cwiseProduct(D)).sum();
    K_ref += Lx * D * Lx;
  }
  const double scale = K_ref.cwiseAbs().maxCoeff() + J_ref.cwiseAbs().maxCoeff();
  const auto check = [&](const char* kernels) {
    const JKBuilder jk(basis, o);
    ASSERT_EQ(Eigen::Index(jk.cholesky_vectors()), M);
    Eigen::MatrixXd J;
    std::vector<Eigen::MatrixXd> K;
    jk.build(D, {D, -D}, J, K);
    EXPECT_LT((J - J_ref).cwiseAbs().maxCoeff(), 1e-12 * scale) << kernels;
    EXPECT_LT((K[0] - K_ref).cwiseAbs().maxCoeff(), 1e-12 * scale) << kernels;
    EXPECT_LT((K[1] + K_ref).cwiseAbs().maxCoeff(), 1e-12 * scale) << kernels;
  };
  check("eigen");
  TorchKernels torch_kernels;
  check("libtorch");
}

// The three-index J/K (Cholesky and density-fitted RHF, fitted UHF) gives the same SCF energies
// on libtorch's kernels as on Eigen's.
TEST(DenseKernels, ScfEnergiesAreTheSameOnLibtorchKernels) {
  const System h2o = load_molecule("h2o", scftest::kMolecules), li = load_molecule("li", scftest::kMolecules);
  const auto energies = [&] {
    std::vector<double> e;
    ScfOptions o;
    o.jk.integrals.threads = 2;
    ScfOptions chol = o;
    chol.jk.cholesky_tau = 1e-6;
    e.push_back(run_rhf(h2o, make_basis("cc-pvdz", h2o), chol).energy);
    ScfOptions df = o;
    df.jk.df_basis = std::make_shared<const BasisSet>(make_fitting_basis(kDefaultFittingBasis, h2o));
    e.push_back(run_rhf(h2o, make_basis("cc-pvdz", h2o), df).energy);
    df.jk.df_basis = std::make_shared<const BasisSet>(make_fitting_basis(kDefaultFittingBasis, li));
    e.push_back(run_uhf(li, make_basis("cc-pvdz", li), df).energy);
    return e;
  };
  const std::vector<double> eigen = energies();
  TorchKernels torch_kernels;
  const std::vector<double> torch = energies();
  for (std::size_t i = 0; i < eigen.size(); ++i) EXPECT_NEAR(torch[i], eigen[i], 1e-10) << "case " << i;
}
