/// @file blocks_check.cpp
/// Compile-time check that both Blocks specialisations provide every op of BuildingBlocks.
#include "blocks/blocks.hpp"
#include "blocks/fwdlap.hpp"
#include "blocks/tensor_blocks.hpp"

namespace nnvmc {
static_assert(BuildingBlocks<torch::Tensor>, "Blocks<torch::Tensor> lacks an op of BuildingBlocks");
static_assert(BuildingBlocks<FwdLap>, "Blocks<FwdLap> lacks an op of BuildingBlocks");
}  // namespace nnvmc
