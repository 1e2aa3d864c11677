#pragma once
/// @file wavefunction.hpp
/// The WaveFunction contract shared by every ansatz (see docs/design.md).
#include <torch/torch.h>

#include <map>
#include <optional>
#include <string>

#include "blocks/blocks.hpp"
#include "blocks/fwdlap.hpp"
#include "models/hartree_fock_energy.hpp"
#include "models/system_tensors.hpp"

namespace nnvmc {

/// A many-electron wavefunction ψ(r; molecule). Positions r are [B, N, 3] (bohr), electrons
/// ordered spin-up first. The molecule (nuclei, electron counts) is passed at every
/// evaluation; a module holds no geometry. Must be differentiable by libtorch autograd in r
/// (twice) and in parameters. forward/forward_laplacian may run on several threads at once on
/// different walkers (parallel::for_each_walker_part): a cache set on first use needs a lock.
class WaveFunction : public torch::nn::Module {
 public:
  ~WaveFunction() override = default;
  /// @param r [B, N, 3] @param sys the molecule @return sign [B], log|ψ| [B]
  virtual LogPsi forward(const torch::Tensor& r, const SystemTensors& sys) = 0;
  /// Orbital matrices for HF pretraining: [B, K, N, N] (K determinants), element (i, j) =
  /// orbital j at electron i. @throws Error if the ansatz has no orbitals.
  virtual torch::Tensor orbitals(const torch::Tensor& r, const SystemTensors& sys);
  /// log|ψ| with its Jacobian and Laplacian in the 3N electron coordinates in one forward pass
  /// (the ansatz's `Blocks<FwdLap>` program; the `forward` Laplacian method calls this).
  /// @param r Blocks<FwdLap>::positions([B, N, 3]) @return sign [B], log|ψ| (global: value [B],
  /// jac [B, 3N], lap [B]) @throws ConfigError when the ansatz has no forward-Laplacian program.
  virtual SignedFwdLap forward_laplacian(const FwdLap& r, const SystemTensors& sys);
  /// log softmax over the K determinants of log|det_k| ([B, K]; oneqmc's determinant
  /// distribution, see determinant_balance_penalty), or an undefined tensor when the ansatz
  /// does not provide it (the default).
  virtual torch::Tensor determinant_log_weights(const torch::Tensor& r, const SystemTensors& sys);
  /// Registry key of the ansatz, e.g. "ferminet".
  virtual std::string type() const = 0;
  /// True when one set of parameters describes molecules with other atoms and electron counts
  /// (e.g. Orbformer). Other ansätze evaluate only molecules with the atoms (Z, in order) and
  /// electron counts they were built for, at any geometry.
  virtual bool transferable() const { return false; }
  /// Checks that `sys` can be evaluated by this ansatz. @throws InputError naming the mismatch.
  virtual void check_system(const SystemTensors& sys) const;
  /// Buffers (by name, detached copies) that define ψ but are not trained, e.g. PauliNet's
  /// frozen Hartree–Fock orbitals: checkpoints keep them, so that a resumed or evaluated model
  /// is the trained function even where recomputing them could come out otherwise (an SCF on
  /// other cores may rotate degenerate orbitals, to which the backflow is not invariant).
  /// Default: none.
  virtual std::map<std::string, torch::Tensor> frozen_state() const { return {}; }
  /// The Hartree–Fock energy of a determinant built into the ansatz (PauliNet's baseline), which
  /// training starts from and should end below; none by default (the trainer then uses
  /// pretraining's target, when there is one).
  virtual std::optional<HartreeFockEnergy> built_in_hartree_fock() const { return std::nullopt; }
  /// Copies `state` into the buffers frozen_state() names (converted to their dtype/device).
  /// @throws CheckpointError for a missing name or another shape.
  void load_frozen_state(const std::map<std::string, torch::Tensor>& state);

 protected:
  /// Remembers the atoms and electron counts the ansatz was built for (check_system's default).
  void set_built_for(const System& system);

 private:
  std::vector<int> built_z_;
  int64_t built_up_ = -1, built_down_ = -1;
};

}  // namespace nnvmc
