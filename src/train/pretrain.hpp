#pragma once
/// @file pretrain.hpp
/// Hartree–Fock pretraining (Pfau et al. 2020): fit the ansatz's orbital matrices
/// (WaveFunction::orbitals, [B, K, N, N]) to the occupied UHF orbitals by least squares,
/// on walkers sampled from an equal mixture of |ψ_HF|² and |ψ_net|².
#include "core/timer.hpp"
#include "train/setup.hpp"

namespace nnvmc {

/// Result of pretraining.
struct PretrainResult {
  int steps = 0;            ///< optimisation steps taken
  double initial_loss = 0;  ///< mean squared orbital mismatch at step 1
  double final_loss = 0;    ///< at the last step
  double e_hf = 0;          ///< UHF energy of the target (hartree)
};

/// Runs `options.steps` Adam steps (lr = options.lr) on the parameters of setup.wf.
/// Uses setup.sampler's walkers (initialised if needed) and leaves them equilibrated in
/// the mixture; the caller burns in on |ψ_net|² afterwards.
/// @throws Error if the ansatz has no orbitals().
PretrainResult pretrain(VmcSetup& setup, const PretrainOptions& options, StageTimers& timers);

}  // namespace nnvmc
