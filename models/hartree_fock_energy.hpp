#pragma once
/// @file hartree_fock_energy.hpp
/// A Hartree–Fock energy with what it is (no torch: summary.json's writer uses it).
#include <limits>
#include <string>

namespace nnvmc {

/// A Hartree–Fock energy a trained ψ should end below (a Slater determinant it improves on).
struct HartreeFockEnergy {
  double energy = std::numeric_limits<double>::quiet_NaN();  ///< hartree
  std::string source;  ///< what it is, e.g. "RHF/sto-6g, the PauliNet baseline"
};

}  // namespace nnvmc
