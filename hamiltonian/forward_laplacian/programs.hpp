#pragma once
/// @file programs.hpp
/// Which ansätze the forward Laplacian can evaluate: a registry from WaveFunction::type() to
/// a function running that ansatz's `Blocks<T>` code with T = FwdLap. An ansatz written once
/// over `Blocks<T>` (like FermiNet::log_psi<T>) is added with one line in programs.cpp.
#include <functional>
#include <map>
#include <string>

#include "hamiltonian/forward_laplacian/fwdlap.hpp"

namespace nnvmc {

/// Runs an ansatz on FwdLap positions. @param r Blocks<FwdLap>::positions([B, N, 3])
/// @return sign [B] and log|ψ| (global FwdLap: value [B], jac [B, 3N], lap [B])
using ForwardLaplacianProgram = std::function<SignedFwdLap(WaveFunction& wf, const FwdLap& r)>;

/// The programs by ansatz type; built-ins are filled on first use. Further ansätze (also test
/// ansätze) are added with register_forward_laplacian_program.
std::map<std::string, ForwardLaplacianProgram>& forward_laplacian_programs();

/// Adds or replaces the program of ansatz `type`.
void register_forward_laplacian_program(const std::string& type, ForwardLaplacianProgram program);

}  // namespace nnvmc
