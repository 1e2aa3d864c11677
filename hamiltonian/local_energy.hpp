#pragma once
/// @file local_energy.hpp
/// E_L = −½(∇²log|ψ| + |∇log|ψ||²) + V_ee + V_en + V_nn, evaluated in walker chunks.
#include <torch/torch.h>

#include <memory>

#include "core/system.hpp"
#include "hamiltonian/laplacian.hpp"

namespace nnvmc {

/// Local energy and its parts per walker (all detached).
struct LocalEnergyTerms {
  torch::Tensor energy;     ///< [B] E_L
  torch::Tensor kinetic;    ///< [B] −½(∇²log|ψ| + |∇log|ψ||²)
  torch::Tensor potential;  ///< [B] V
};

/// Evaluates local energies of a molecule with a chosen Laplacian method.
class LocalEnergy {
 public:
  /// @param chunk walkers per evaluation chunk (0: all at once)
  LocalEnergy(const System& system, std::unique_ptr<LaplacianMethod> method,
              torch::TensorOptions options, int64_t chunk = 0);
  /// @param r [B, N, 3] @return terms per walker
  LocalEnergyTerms operator()(WaveFunction& wf, const torch::Tensor& r);
  void set_chunk(int64_t chunk) { chunk_ = chunk; }
  int64_t chunk() const { return chunk_; }
  LaplacianMethod& method() { return *method_; }

 private:
  std::unique_ptr<LaplacianMethod> method_;
  torch::Tensor nuclei_, charges_;
  double e_nn_;
  int64_t chunk_;
};

}  // namespace nnvmc
