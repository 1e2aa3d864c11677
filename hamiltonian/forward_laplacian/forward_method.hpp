#pragma once
/// @file forward_method.hpp
/// The `forward` Laplacian method (config `hamiltonian.laplacian: forward`).
#include <memory>

#include "hamiltonian/laplacian.hpp"

namespace nnvmc {

/// Forward Laplacian: one graph-free forward pass carrying value, Jacobian and Laplacian
/// (exact). @throws ConfigError from compute() for ansätze without a FwdLap program.
std::unique_ptr<LaplacianMethod> make_forward_laplacian();

}  // namespace nnvmc
