#pragma once
/// @file batched_vjp.hpp
/// Many vector–Jacobian products through one autograd graph in one backward pass.
#include <torch/torch.h>

#include <vector>

namespace nnvmc {

/// Σ_i J_iᵀ v_i for c cotangent sets at once: one backward pass of the autograd graph from
/// `outputs` to `inputs`, with every cotangent carrying a leading batch axis of size c. The
/// batch axis goes through the backward ops by functorch's vmap (its batching rules), so the
/// c products cost one pass of c-times-larger tensors, not c passes.
/// @param outputs the roots y_i (repeats allowed; their cotangents add)
/// @param cotangents per output: [c, *outputs[i].shape], in the output's dtype and device
/// @param retain_graph keep the graph for a later backward
/// @return per input: [c, *inputs[j].shape], or undefined when no output depends on it
std::vector<torch::Tensor> batched_vjp(const std::vector<torch::Tensor>& outputs, const std::vector<torch::Tensor>& inputs,
                                       const std::vector<torch::Tensor>& cotangents, bool retain_graph);

}  // namespace nnvmc
