#pragma once
/// @file laplacian_methods.hpp
/// Constructors of the built-in Laplacian methods (registered in laplacian.cpp).
#include "hamiltonian/laplacian.hpp"

namespace nnvmc {

/// Reverse-over-reverse: gradient with a graph, then 3N backward passes (exact).
std::unique_ptr<LaplacianMethod> make_reverse_laplacian();
/// Forward-over-reverse: 3N forward-mode tangents pushed through the gradient (exact).
std::unique_ptr<LaplacianMethod> make_jvp_laplacian();
/// Hutchinson: E_v[vᵀHv] with `probes` Rademacher/Gaussian probes per walker (unbiased).
std::unique_ptr<LaplacianMethod> make_hutchinson_laplacian(const HutchinsonOptions& options,
                                                           std::uint64_t seed);

}  // namespace nnvmc
