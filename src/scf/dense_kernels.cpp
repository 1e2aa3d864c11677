/// Dense kernels of the SCF: the installed ones, and Eigen's split over threads.
#include "scf/dense_kernels.hpp"

#include <Eigen/Dense>

#include <algorithm>

#include "scf/parallel.hpp"

namespace nnvmc::scf {
namespace {

using Stride = Eigen::OuterStride<>;
using ConstMap = Eigen::Map<const Eigen::MatrixXd, 0, Stride>;
using Map = Eigen::Map<Eigen::MatrixXd, 0, Stride>;

/// Below this many multiply-adds a product runs on the calling thread (thread start-up ~ 20 µs).
constexpr double kMinParallelWork = 4e6;

DenseKernels& installed() {
  static DenseKernels kernels;
  return kernels;
}

/// C.block = alpha·opA.rows·opB.cols + beta·C.block for rows [i0, i1) and columns [j0, j1).
template <class OpA, class OpB>
void product_block(const OpA& op_a, const OpB& op_b, double alpha, double beta, Map& c, Eigen::Index i0, Eigen::Index i1,
                   Eigen::Index j0, Eigen::Index j1) {
  auto out = c.block(i0, j0, i1 - i0, j1 - j0);
  if (beta == 0)
    out.noalias() = alpha * (op_a.middleRows(i0, i1 - i0) * op_b.middleCols(j0, j1 - j0));
  else {
    if (beta != 1) out *= beta;
    out.noalias() += alpha * (op_a.middleRows(i0, i1 - i0) * op_b.middleCols(j0, j1 - j0));
  }
}

/// Slices C's longer side over the threads.
template <class OpA, class OpB>
void product(const OpA& op_a, const OpB& op_b, double alpha, double beta, Map& c, int threads) {
  const Eigen::Index m = c.rows(), n = c.cols();
  const double work = double(m) * double(n) * double(op_a.cols());
  const int t = work < kMinParallelWork ? 1 : resolve_threads(threads);
  const bool by_columns = n >= m;
  const Eigen::Index len = by_columns ? n : m;
  const std::size_t slices = std::size_t(std::min<Eigen::Index>(t, std::max<Eigen::Index>(len, 1)));
  parallel_for(slices, t, [&](std::size_t s, int) {
    const Eigen::Index lo = len * Eigen::Index(s) / Eigen::Index(slices), hi = len * (Eigen::Index(s) + 1) / Eigen::Index(slices);
    if (by_columns)
      product_block(op_a, op_b, alpha, beta, c, 0, m, lo, hi);
    else
      product_block(op_a, op_b, alpha, beta, c, lo, hi, 0, n);
  });
}

}  // namespace

void set_dense_kernels(const DenseKernels& kernels) { installed() = kernels; }
const DenseKernels& dense_kernels() { return installed(); }

void eigen_gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, double alpha,
                const double* a, std::int64_t lda, const double* b, std::int64_t ldb, double beta, double* c,
                std::int64_t ldc, int threads) {
  if (m == 0 || n == 0) return;
  Map C(c, m, n, Stride(ldc));
  const ConstMap A(a, trans_a ? k : m, trans_a ? m : k, Stride(lda)), B(b, trans_b ? n : k, trans_b ? k : n, Stride(ldb));
  if (trans_a && trans_b)
    product(A.transpose(), B.transpose(), alpha, beta, C, threads);
  else if (trans_a)
    product(A.transpose(), B, alpha, beta, C, threads);
  else if (trans_b)
    product(A, B.transpose(), alpha, beta, C, threads);
  else
    product(A, B, alpha, beta, C, threads);
}

void eigen_trsm_upper_right(double* x, std::int64_t m, std::int64_t k, std::int64_t ldx, const double* u,
                            std::int64_t ldu, int threads) {
  if (m == 0 || k == 0) return;
  Map X(x, m, k, Stride(ldx));
  const ConstMap U(u, k, k, Stride(ldu));
  // row by row independent: slices of rows on the threads
  constexpr Eigen::Index kRows = 512;
  const std::size_t n_slices = std::size_t((m + kRows - 1) / kRows);
  parallel_for(n_slices, resolve_threads(threads), [&](std::size_t s, int) {
    const Eigen::Index r0 = Eigen::Index(s) * kRows;
    auto slice = X.middleRows(r0, std::min<Eigen::Index>(kRows, m - r0));
    U.triangularView<Eigen::Upper>().solveInPlace<Eigen::OnTheRight>(slice);
  });
}

void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, double alpha, const double* a,
          std::int64_t lda, const double* b, std::int64_t ldb, double beta, double* c, std::int64_t ldc, int threads) {
  const GemmKernel kernel = installed().gemm ? installed().gemm : &eigen_gemm;
  kernel(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, threads);
}

void trsm_upper_right(double* x, std::int64_t m, std::int64_t k, std::int64_t ldx, const double* u, std::int64_t ldu,
                      int threads) {
  const TrsmKernel kernel = installed().trsm ? installed().trsm : &eigen_trsm_upper_right;
  kernel(x, m, k, ldx, u, ldu, threads);
}

void parallel_loop(std::size_t n, int threads, const std::function<void(std::size_t)>& fn) {
  if (installed().parallel)
    installed().parallel(n, threads, fn);
  else
    parallel_for(n, resolve_threads(threads), [&](std::size_t i, int) { fn(i); });
}

}  // namespace nnvmc::scf
