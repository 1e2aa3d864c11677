#pragma once
/// @file outer_sum_tensors.hpp
/// outer_sum's arguments from tensors.
#include <torch/torch.h>

#include "train/outer_sum.hpp"

namespace nnvmc::outer_sum {

/// The arguments of c[b] (+)= g[b]ᵀ x[b] for float64 CPU tensors whose innermost axes are
/// contiguous. @param g [B, S, O] @param x [B, S, I] (batch stride 0: shared)
/// @param c [B, O, I] rows contiguous (e.g. a view of a Jacobian's columns)
inline Args tensor_args(const torch::Tensor& g, const torch::Tensor& x, torch::Tensor& c, bool accumulate) {
  Args a;
  a.positions = g.size(1);
  a.out = g.size(2);
  a.in = x.size(2);
  a.g = g.data_ptr<double>();
  a.g_batch = g.stride(0);
  a.g_pos = g.stride(1);
  a.x = x.data_ptr<double>();
  a.x_batch = x.stride(0);
  a.x_pos = x.stride(1);
  a.c = c.data_ptr<double>();
  a.c_batch = c.stride(0);
  a.c_row = c.stride(1);
  a.accumulate = accumulate;
  return a;
}

}  // namespace nnvmc::outer_sum
