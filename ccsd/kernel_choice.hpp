#pragma once
/// @file kernel_choice.hpp
/// Which implementation of CCSD's elementwise / layout kernels runs: fused host loops (CPU) or
/// torch ops (any device). Both compute the same quantities; the torch ops are the device path,
/// selectable on the CPU so that CI runs it.
#include <torch/types.h>

namespace nnvmc::ccsd {

/// `automatic` takes the fused host loops for contiguous CPU float64 / float32 tensors, (T)'s
/// CUDA kernels for CUDA ones (triples_kernels.cpp, in a CUDA build) and the torch ops
/// otherwise; `torch_ops` always takes the torch ops.
enum class KernelChoice { automatic, torch_ops };

/// True when `choice` and `x` (CPU, float64 / float32, and contiguous unless `any_strides`)
/// select the fused host loops.
inline bool use_host_kernels(const torch::Tensor& x, KernelChoice choice, bool any_strides = false) {
  return choice == KernelChoice::automatic && x.device().is_cpu() && (any_strides || x.is_contiguous()) &&
         (x.scalar_type() == torch::kFloat64 || x.scalar_type() == torch::kFloat32);
}

}  // namespace nnvmc::ccsd
