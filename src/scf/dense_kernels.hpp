#pragma once
/// @file dense_kernels.hpp
/// The SCF's large dense products — the three-index (Cholesky / density-fitted) J/K build, the
/// Cholesky decomposition's block updates, the fitted vectors' triangular solve — go through
/// these two kernels. The default is Eigen's (this module stays torch-free), split over the
/// caller's threads; a program linked with libtorch installs libtorch's (MKL, AVX2/AVX-512 at run
/// time) with scf/dense_kernels_torch.hpp, 3–4× faster per core than Eigen built for baseline
/// x86-64. All matrices are column-major with leading dimensions, as in BLAS.
#include <cstddef>
#include <cstdint>
#include <functional>

namespace nnvmc::scf {

/// C [m, n] = alpha·op(A)·op(B) + beta·C with op(A) [m, k], op(B) [k, n] (op: transpose when
/// trans_*); beta = 0 ignores C's old values (NaN included). `threads`: the caller's budget.
using GemmKernel = void (*)(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, double alpha,
                            const double* a, std::int64_t lda, const double* b, std::int64_t ldb, double beta,
                            double* c, std::int64_t ldc, int threads);

/// X [m, k] ← X·U⁻¹ in place, U [k, k] upper triangular with a nonzero diagonal (only its upper
/// triangle is read).
using TrsmKernel = void (*)(double* x, std::int64_t m, std::int64_t k, std::int64_t ldx, const double* u,
                            std::int64_t ldu, int threads);

/// Calls fn(i) for i = 0 … n−1 on the threads the kernels run on, for the memory-bound loops between
/// kernel calls (libtorch's OpenMP threads spin-wait after a call: a loop on other threads
/// competed with them, 20 % slower SCF iterations on two threads).
using ParallelLoop = void (*)(std::size_t n, int threads, const std::function<void(std::size_t)>& fn);

/// The kernels in use. Installing is process-wide and not synchronised: do it before any SCF runs.
struct DenseKernels {
  GemmKernel gemm = nullptr;        ///< nullptr: Eigen's
  TrsmKernel trsm = nullptr;        ///< nullptr: Eigen's
  ParallelLoop parallel = nullptr;  ///< nullptr: std::threads (scf/parallel.hpp)
  const char* name = "eigen";       ///< which (logged by the SCF)
};
void set_dense_kernels(const DenseKernels& kernels);
const DenseKernels& dense_kernels();

/// Calls the installed GEMM (see GemmKernel).
void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, double alpha, const double* a,
          std::int64_t lda, const double* b, std::int64_t ldb, double beta, double* c, std::int64_t ldc, int threads);

/// Calls the installed triangular solve (see TrsmKernel).
void trsm_upper_right(double* x, std::int64_t m, std::int64_t k, std::int64_t ldx, const double* u, std::int64_t ldu,
                      int threads);

/// Calls the installed loop (see ParallelLoop).
void parallel_loop(std::size_t n, int threads, const std::function<void(std::size_t)>& fn);

/// Eigen's kernels, whatever is installed (for comparisons).
void eigen_gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, double alpha,
                const double* a, std::int64_t lda, const double* b, std::int64_t ldb, double beta, double* c,
                std::int64_t ldc, int threads);
void eigen_trsm_upper_right(double* x, std::int64_t m, std::int64_t k, std::int64_t ldx, const double* u,
                            std::int64_t ldu, int threads);

}  // namespace nnvmc::scf
