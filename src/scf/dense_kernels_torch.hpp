#pragma once
/// @file dense_kernels_torch.hpp
/// libtorch's GEMM and triangular solve (MKL on x86-64) as the SCF's dense kernels
/// (scf/dense_kernels.hpp). This header does not include torch.

namespace nnvmc::scf {

/// Installs libtorch's kernels process-wide. They run on libtorch's intra-op threads (their
/// `threads` argument is not used): `threads` > 0 sets that count (at::set_num_threads), 0
/// leaves it. Call before any SCF runs.
void install_torch_dense_kernels(int threads = 0);

}  // namespace nnvmc::scf
