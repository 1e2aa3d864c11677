#pragma once
/// @file fwdlap_detail.hpp
/// Helpers shared by the FwdLap op implementations (not part of the interface).
#include <string>

#include "blocks/fwdlap.hpp"

namespace nnvmc::fwdlap_detail {

/// View of the own-electron blocks of a dense Jacobian [B, E, 3N, *F] whose rows are
/// electrons offset..offset+E−1: [B, 3, *F, E] (writable).
torch::Tensor own_view(torch::Tensor& dense_jac, int64_t offset, int64_t electrons);
/// x's layout and offsets with new tensors.
FwdLap like(const FwdLap& x, torch::Tensor value, torch::Tensor jac, torch::Tensor lap);
/// @throws Error("forward Laplacian: what") unless ok.
void require(bool ok, const std::string& what);

}  // namespace nnvmc::fwdlap_detail
