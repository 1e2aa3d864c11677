#pragma once
/// @file pretrain.hpp
/// Hartree–Fock pretraining (Pfau et al. 2020): fit the ansatz's orbital matrices
/// (WaveFunction::orbitals, [B, K, N, N]) to the occupied UHF orbitals by least squares,
/// on walkers sampled from an equal mixture of |ψ_HF|² and |ψ_net|². With several molecules,
/// every step fits all of them (each on its own walkers, against its own UHF orbitals) and the
/// loss is the mean of their losses.
#include <vector>

#include "core/timer.hpp"
#include "train/setup.hpp"

namespace nnvmc {

/// Pretraining of one molecule.
struct MoleculePretrain {
  double initial_loss = 0;  ///< mean squared orbital mismatch at step 1
  double final_loss = 0;    ///< at the last step
  double e_hf = 0;          ///< UHF energy of the target (hartree)
};

/// Result of pretraining.
struct PretrainResult {
  int steps = 0;            ///< optimisation steps taken
  double initial_loss = 0;  ///< mean over molecules, step 1
  double final_loss = 0;    ///< mean over molecules, last step
  std::vector<MoleculePretrain> molecules;  ///< per molecule of the setup, in order
};

/// Pretraining of at least this many steps warns about a molecule whose orbital loss ended
/// above half its first step's (a working fit falls by orders of magnitude).
constexpr int kPretrainStallSteps = 50;

/// Runs `options.steps` Adam steps (lr = options.lr) on the parameters of setup.wf.
/// Uses each molecule's sampler (initialised if needed) and leaves its walkers equilibrated in
/// the mixture; the caller burns in on |ψ_net|² afterwards.
/// @throws Error if the ansatz has no orbitals().
PretrainResult pretrain(VmcSetup& setup, const PretrainOptions& options, StageTimers& timers);

}  // namespace nnvmc
