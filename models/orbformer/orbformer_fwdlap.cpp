/// @file orbformer_fwdlap.cpp
/// The Orbformer's forward-Laplacian program: the electron half instantiated with FwdLap.
#include "models/orbformer/orbformer_body.hpp"

namespace nnvmc {

SignedFwdLap Orbformer::forward_laplacian(const FwdLap& r, const SystemTensors& sys) {
  return log_psi<FwdLap>(r, sys, molecule(sys));
}

}  // namespace nnvmc
