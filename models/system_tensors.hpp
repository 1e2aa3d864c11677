#pragma once
/// @file system_tensors.hpp
/// A molecule as the tensors an ansatz is evaluated on. Geometry is system data: it is passed
/// to WaveFunction::forward at every evaluation, never stored in a module (buffers and
/// parameters hold no nuclei), so a checkpoint's parameters carry no geometry and one set of
/// weights can be evaluated on another geometry (or, for transferable ansätze, molecule).
#include <torch/torch.h>

#include <array>
#include <vector>

#include "core/system.hpp"

namespace nnvmc {

/// Nuclei and electron counts of one molecule.
struct SystemTensors {
  torch::Tensor nuclei;             ///< [M, 3] nuclear positions (bohr), dtype/device of the walkers
  torch::Tensor charges;            ///< [M] nuclear charges Z, same dtype/device
  std::vector<int> atomic_numbers;  ///< Z per nucleus (host copy, for shapes and element lookups)
  int64_t n_up = 0;                 ///< spin-up electrons (first in r)
  int64_t n_down = 0;               ///< spin-down electrons

  int64_t n_electrons() const { return n_up + n_down; }
  int64_t n_atoms() const { return static_cast<int64_t>(atomic_numbers.size()); }
  /// [begin, end) of each nonempty spin group along the electron axis.
  std::vector<std::array<int64_t, 2>> spin_ranges() const;
  /// The same molecule with tensors converted to `options` (dtype/device).
  SystemTensors to(torch::TensorOptions options) const;
};

/// The tensors of `system` in `options` (dtype/device).
SystemTensors system_tensors(const System& system, torch::TensorOptions options);

}  // namespace nnvmc
