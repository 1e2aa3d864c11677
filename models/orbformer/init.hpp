#pragma once
/// @file init.hpp
/// Parameter initialisers of the Orbformer as oneqmc's haiku modules use them: haiku's
/// defaults differ from libtorch's (truncated normals, zero biases).
#include <torch/torch.h>

namespace nnvmc::orbformer {

/// Fills `t` with N(0, 1) samples truncated to [−2, 2], times `stddev` (haiku's
/// TruncatedNormal; the spread of the result is 0.88·stddev).
void truncated_normal_(torch::Tensor t, double stddev);

/// A linear layer initialised as haiku's hk.Linear: weight truncated normal with
/// stddev 1/√in, bias zero. @param in, out widths @param bias with a bias
torch::nn::Linear make_linear(int64_t in, int64_t out, bool bias);

/// Re-initialises `weight` [G·K, in] (output index g·K + k) as oneqmc's
/// DeterminantApproxEqualInit: one truncated-normal draw per (g, input) shared by the K
/// determinants, plus 1e-3 relative noise, so the K determinants start nearly equal.
void determinants_approx_equal_(torch::Tensor weight, int64_t k, double stddev);

}  // namespace nnvmc::orbformer
