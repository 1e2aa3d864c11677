#pragma once
/// @file potential.hpp
/// Coulomb potential energy of electrons and nuclei.
#include <torch/torch.h>

namespace nnvmc {

/// V_ee + V_en + V_nn per walker.
/// @param r [B, N, 3] @param nuclei [M, 3] @param charges [M] @param e_nn nuclear repulsion
/// @return [B]
torch::Tensor potential_energy(const torch::Tensor& r, const torch::Tensor& nuclei,
                               const torch::Tensor& charges, double e_nn);

}  // namespace nnvmc
