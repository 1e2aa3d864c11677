#pragma once
/// Walker batches of the optimizer tests' toy wave functions.
#include <torch/torch.h>

#include <vector>

#include "train/optimizer.hpp"

namespace nnvmc::test {

/// One batch of walkers r [B, N, 3] with local energies e [B] of a system without nuclei.
inline std::vector<WalkerBatch> one_batch(const torch::Tensor& r, const torch::Tensor& e) {
  static const SystemTensors none;
  return {WalkerBatch{&none, r, e}};
}

}  // namespace nnvmc::test
