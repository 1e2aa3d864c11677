/// CCSD iterations: dress, residual, Jacobi update with orbital-energy denominators, DIIS.
#include "ccsd/rccsd.hpp"

#include <torch/torch.h>

#include <chrono>
#include <cmath>

#include "ccsd/diis.hpp"
#include "ccsd/dressed.hpp"
#include "ccsd/residual.hpp"
#include "core/errors.hpp"
#include "core/log.hpp"

namespace nnvmc::ccsd {

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

CcsdResult run_rccsd(const MoIntegrals& mo, const CcsdOptions& options) {
  const auto& s = mo.space;
  const std::int64_t o = s.n_act_occ(), v = s.n_vir();
  Contractor c(options.plan, options.explain);
  DressedHamiltonian h(mo, c);
  const torch::Tensor eo = mo.eps.narrow(0, s.n_frozen, o), ev = mo.eps.narrow(0, s.n_occ, v);
  const torch::Tensor d1 = eo.unsqueeze(1) - ev.unsqueeze(0);                      // [o, v]
  const torch::Tensor d2 = (d1.unsqueeze(2).unsqueeze(3) + d1.unsqueeze(0).unsqueeze(0)).contiguous();  // [o,v,o,v]
  torch::Tensor t1 = torch::zeros({o, v}, torch::kFloat64);
  torch::Tensor t2 = torch::zeros({o, v, o, v}, torch::kFloat64);
  Diis diis(options.diis_size);
  CcsdResult res;
  res.e_hf = mo.e_hf;
  double e_old = 0;
  const auto t_start = std::chrono::steady_clock::now();
  const Usage u_start = Usage::now();
  for (int it = 1; it <= options.max_iterations; ++it) {
    h.dress(t1);
    const Residual r = ccsd_residual(h, c, t1, t2);
    torch::Tensor n1 = t1 + r.r1 / d1, n2 = t2 + r.r2 / d2;
    const torch::Tensor flat = torch::cat({n1.flatten(), n2.flatten()});
    const torch::Tensor err = flat - torch::cat({t1.flatten(), t2.flatten()});
    const double dnorm = err.norm().item<double>();
    const torch::Tensor next = diis.extrapolate(flat, err);
    t1 = next.narrow(0, 0, o * v).view({o, v}).clone();
    t2 = next.narrow(0, o * v, o * v * o * v).view({o, v, o, v}).clone();
    t2 = 0.5 * (t2 + t2.permute({2, 3, 0, 1}));  // keep t_ij^ab = t_ji^ba exactly
    const double e = ccsd_correlation_energy(h.block("ovov"), t1, t2);
    res.iterations = it;
    if (options.verbose)
      log::info(strfmt("ccsd iter %3d  E_corr %.12f  dE %.2e  |dt| %.2e", it, e, e - e_old, dnorm));
    const bool done = std::abs(e - e_old) < options.energy_tolerance && dnorm < options.residual_tolerance;
    e_old = e;
    if (done) {
      res.converged = true;
      break;
    }
  }
  res.seconds_per_iteration = seconds_since(t_start) / std::max(res.iterations, 1);
  res.usage_per_iteration = (Usage::now() - u_start).scaled(1.0 / std::max(res.iterations, 1));
  if (!res.converged && options.require_convergence)
    throw NumericalError("CCSD did not converge in " + std::to_string(options.max_iterations) + " iterations");
  // energy of the final amplitudes with the bare ovov block (equal to the dressed one)
  res.e_corr = e_old;
  res.e_ccsd = res.e_hf + res.e_corr;
  res.t1 = t1;
  res.t2 = t2;
  if (options.triples && res.converged) {
    const auto t0 = std::chrono::steady_clock::now();
    res.e_t = triples_correction(mo, t1, t2, c);
    res.seconds_triples = seconds_since(t0);
  }
  res.e_ccsd_t = res.e_ccsd + res.e_t;
  res.terms = c.stats();
  res.plans = c.plans();
  return res;
}

}  // namespace nnvmc::ccsd
