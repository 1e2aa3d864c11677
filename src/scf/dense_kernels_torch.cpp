/// libtorch's GEMM and triangular solve as the SCF's dense kernels.
#include "scf/dense_kernels_torch.hpp"

#include <torch/torch.h>

#include <algorithm>
#include <cstdint>
#include <functional>

#include "scf/dense_kernels.hpp"

namespace nnvmc::scf {
namespace {

const auto kF64 = torch::TensorOptions().dtype(torch::kFloat64);

/// A column-major matrix [rows, cols] with leading dimension ld is the row-major tensor of its
/// transpose, [cols, rows] with strides {ld, 1}.
torch::Tensor transposed_view(const double* p, std::int64_t rows, std::int64_t cols, std::int64_t ld) {
  return torch::from_blob(const_cast<double*>(p), {cols, rows}, {ld, 1}, kF64);
}

void torch_gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, double alpha,
                const double* a, std::int64_t lda, const double* b, std::int64_t ldb, double beta, double* c,
                std::int64_t ldc, int /*threads*/) {
  if (m == 0 || n == 0) return;
  // Cᵀ [n, m] = op(B)ᵀ [n, k] · op(A)ᵀ [k, m]
  auto c_t = transposed_view(c, m, n, ldc);
  const auto a_t = trans_a ? transposed_view(a, k, m, lda).t() : transposed_view(a, m, k, lda);
  const auto b_t = trans_b ? transposed_view(b, n, k, ldb).t() : transposed_view(b, k, n, ldb);
  c_t.addmm_(b_t, a_t, beta, alpha);
}

void torch_trsm_upper_right(double* x, std::int64_t m, std::int64_t k, std::int64_t ldx, const double* u,
                            std::int64_t ldu, int /*threads*/) {
  if (m == 0 || k == 0) return;
  // X ← X U⁻¹  ⇔  Xᵀ ← U⁻ᵀ Xᵀ with Uᵀ lower triangular: the tensor views of Xᵀ [k, m], Uᵀ [k, k]
  const auto u_t = transposed_view(u, k, k, ldu);
  auto x_t = transposed_view(x, m, k, ldx);
  constexpr std::int64_t kColumns = 4096;  // bounds the solve's temporary copies
  for (std::int64_t c0 = 0; c0 < m; c0 += kColumns) {
    auto slice = x_t.narrow(1, c0, std::min(kColumns, m - c0));
    slice.copy_(torch::linalg_solve_triangular(u_t, slice, /*upper=*/false, /*left=*/true));
  }
}

void torch_parallel_loop(std::size_t n, int /*threads*/, const std::function<void(std::size_t)>& fn) {
  at::parallel_for(0, static_cast<std::int64_t>(n), 1, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) fn(static_cast<std::size_t>(i));
  });
}

}  // namespace

void install_torch_dense_kernels(int threads) {
  if (threads > 0) at::set_num_threads(threads);
  set_dense_kernels({&torch_gemm, &torch_trsm_upper_right, &torch_parallel_loop, "libtorch"});
}

}  // namespace nnvmc::scf
