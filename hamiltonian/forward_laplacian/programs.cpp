#include "hamiltonian/forward_laplacian/programs.hpp"

#include "models/analytic/hydrogenic.hpp"
#include "models/ferminet/ferminet_body.hpp"

namespace nnvmc {

// FermiNet's forward-Laplacian pass, callable from anywhere that sees fwdlap.hpp.
template SignedFwdLap FermiNet::log_psi<FwdLap>(const FwdLap& r);
template FwdLap FermiNet::orbitals_electron_major<FwdLap>(const FwdLap& r);

namespace {

/// Hydrogenic product: log|ψ| = −ζ Σ_i |r_i − R_0| written with the blocks (its parameters
/// are read by name; the class keeps them private).
SignedFwdLap hydrogenic(WaveFunction& wf, const FwdLap& r) {
  using Op = Blocks<FwdLap>;
  const auto zeta = wf.named_parameters()["zeta"];
  const auto centre = wf.named_buffers()["centre"].view({1, 3});
  const auto d = Op::reshape_features(Op::norm(Op::sub_centres(r, centre)), 1, {1});  // [B, N, 1]
  const auto l = Op::mul_const(Op::sum_electrons(d, 1), -zeta);                        // [B, 1]
  return Op::signed_logsumexp(torch::ones_like(l.value), l);
}

}  // namespace

std::map<std::string, ForwardLaplacianProgram>& forward_laplacian_programs() {
  static std::map<std::string, ForwardLaplacianProgram> programs = {
      {"ferminet",
       [](WaveFunction& wf, const FwdLap& r) { return static_cast<FermiNet&>(wf).log_psi<FwdLap>(r); }},
      {"hydrogenic", hydrogenic},
  };
  return programs;
}

void register_forward_laplacian_program(const std::string& type, ForwardLaplacianProgram program) {
  forward_laplacian_programs()[type] = std::move(program);
}

}  // namespace nnvmc
