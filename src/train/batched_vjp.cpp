/// @file batched_vjp.cpp
/// Batched vector–Jacobian products: functorch's vmap level around one call of the autograd
/// engine (the C++ side of what torch.func.vjp + vmap do in Python).
#include "train/batched_vjp.hpp"

#include "blocks/transform_level.hpp"
#include "core/errors.hpp"

namespace nnvmc {

std::vector<torch::Tensor> batched_vjp(const std::vector<torch::Tensor>& outputs, const std::vector<torch::Tensor>& inputs,
                                       const std::vector<torch::Tensor>& cotangents, bool retain_graph) {
  if (outputs.size() != cotangents.size() || outputs.empty())
    throw Error("batched_vjp: one cotangent per output, at least one output");
  const std::int64_t c = cotangents.front().size(0);
  for (size_t i = 0; i < outputs.size(); ++i)
    if (cotangents[i].dim() != outputs[i].dim() + 1 || cotangents[i].size(0) != c ||
        cotangents[i].sizes().slice(1) != outputs[i].sizes())
      throw Error("batched_vjp: cotangent " + std::to_string(i) + " is not [c, *output.shape] with a common c");
  const auto vmap = TransformLevel::vmap(c);  // popped on every exit
  std::vector<torch::Tensor> batched;
  batched.reserve(cotangents.size());
  for (const auto& v : cotangents) batched.push_back(vmap.batch(v, 0));
  const auto g = torch::autograd::grad(outputs, inputs, batched, retain_graph, /*create_graph=*/false,
                                       /*allow_unused=*/true);
  std::vector<torch::Tensor> result;
  result.reserve(g.size());
  for (const auto& t : g) result.push_back(t.defined() ? vmap.unbatch(t, c) : torch::Tensor());
  return result;
}

}  // namespace nnvmc
