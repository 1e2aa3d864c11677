#pragma once
/// @file finite_walkers.hpp
/// Walkers with a non-finite local energy (a walker on a node of ψ, where an orbital matrix is
/// exactly singular, or an overflow) are excluded from energies and gradients and counted; more
/// than a few of them in one batch mean something else is wrong, and the step fails.
#include <torch/torch.h>

#include <cstdint>

namespace nnvmc {

/// The finite part of one batch of local energies.
struct FiniteWalkers {
  torch::Tensor mask;         ///< [B] bool, true where E_L is finite
  std::int64_t excluded = 0;  ///< walkers with a non-finite E_L
  bool ok = true;             ///< excluded <= max_excluded_walkers(B) and no rank left without walkers
  int empty_rank = -1;        ///< the first rank all of whose walkers are excluded (−1: none)
};

/// Most non-finite walkers a batch of B may have and still be used: max(1, B / 100).
std::int64_t max_excluded_walkers(std::int64_t b);

/// Splits a batch of local energies into finite walkers and excluded ones. @param e [B] all
/// walkers, split over `ranks` ranks as parallel::partition splits them: a rank left with no
/// walker fails the step too (its optimizer would skip the collectives the others make).
FiniteWalkers finite_walkers(const torch::Tensor& e, int ranks = 1);

}  // namespace nnvmc
