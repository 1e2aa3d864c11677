#pragma once
/// Shared checks for Laplacian tests: finite differences of log|ψ| and relative comparison.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <array>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "hamiltonian/laplacian.hpp"
#include "hamiltonian/local_energy.hpp"

namespace nnvmc::test {

/// Runs Laplacian method `method` on (wf, sys, r); test functions without nuclei take the
/// empty molecule.
inline KineticTerms kinetic(const std::string& method, WaveFunction& wf, const SystemTensors& sys,
                            const torch::Tensor& r) {
  HamiltonianOptions o;
  o.laplacian = method;
  return make_laplacian(o, 3)->compute(wf, sys, r);
}
inline KineticTerms kinetic(const std::string& method, WaveFunction& wf, const torch::Tensor& r) {
  return kinetic(method, wf, SystemTensors{}, r);
}

/// Checks that the Hutchinson estimator with options `o` (laplacian: hutchinson) is unbiased on
/// walkers r: the mean of `draws` independent estimates (each a fresh draw of probes) is within
/// `sigmas` standard errors of `exact` [B] for every walker, and the estimates vary.
/// Returns the standard errors [B].
inline torch::Tensor expect_hutchinson_unbiased(const HamiltonianOptions& o, WaveFunction& wf,
                                                const SystemTensors& sys, const torch::Tensor& r,
                                                const torch::Tensor& exact, int draws, double sigmas) {
  auto method = make_laplacian(o, 11);
  std::vector<torch::Tensor> est;
  for (int i = 0; i < draws; ++i) {
    method->begin_evaluation();  // a new draw of probes
    est.push_back(method->compute(wf, sys, r).laplacian);
  }
  const auto all = torch::stack(est);  // [draws, B]
  const auto mean = all.mean(0), se = all.std(0) / std::sqrt(double(draws));
  EXPECT_TRUE(((mean - exact).abs() <= sigmas * se + 1e-12).all().item<bool>())
      << o.hutchinson.distribution << " probes\nmean " << mean << "\nexact " << exact << "\nse " << se;
  EXPECT_GT(se.min().item<double>(), 0.0);  // it is stochastic
  return se;
}

/// Fourth-order central finite differences of log|ψ|: ∇² and |∇|² per walker.
inline KineticTerms finite_differences(WaveFunction& wf, const SystemTensors& sys, const torch::Tensor& r,
                                       double h) {
  torch::NoGradGuard ng;
  const int64_t b = r.size(0), d = 3 * r.size(1);
  const auto x = r.reshape({b, d});
  const auto f0 = wf.forward(r, sys).logabs;
  auto lap = torch::zeros({b}, r.options()), gsq = torch::zeros({b}, r.options());
  auto at = [&](int64_t k, double step) {
    auto xs = x.clone();
    xs.select(1, k) += step;
    return wf.forward(xs.view(r.sizes()), sys).logabs;
  };
  for (int64_t k = 0; k < d; ++k) {
    const auto f1 = at(k, h), fm1 = at(k, -h), f2 = at(k, 2 * h), fm2 = at(k, -2 * h);
    lap += (-f2 + 16 * f1 - 30 * f0 + 16 * fm1 - fm2) / (12 * h * h);
    gsq += ((-f2 + 8 * f1 - 8 * fm1 + fm2) / (12 * h)).square();
  }
  return {lap, gsq};
}
inline KineticTerms finite_differences(WaveFunction& wf, const torch::Tensor& r, double h) {
  return finite_differences(wf, SystemTensors{}, r, h);
}

/// Compares `exact` with finite differences at steps h and h/2, walker by walker, with a
/// tolerance taken from the finite differences themselves: |exact − fd(h/2)| ≤
/// 2·|fd(h) − fd(h/2)| + rel·|exact| (the step-halving difference bounds the FD error, both
/// truncation and rounding). Walkers near a node of ψ, where no single h is accurate, thus get
/// an honest tolerance instead of a failure or a test-wide loose one. To keep the check sharp,
/// at least half of the walkers must have an FD error estimate below 1e-6 relative.
inline void expect_matches_finite_differences(const KineticTerms& exact, WaveFunction& wf, const SystemTensors& sys,
                                              const torch::Tensor& r, double h, double rel = 1e-7) {
  const auto a = finite_differences(wf, sys, r, h), b = finite_differences(wf, sys, r, h / 2);
  const std::pair<const char*, std::array<torch::Tensor, 3>> parts[] = {
      {"laplacian", {exact.laplacian, a.laplacian, b.laplacian}}, {"grad_sq", {exact.grad_sq, a.grad_sq, b.grad_sq}}};
  for (const auto& [name, t] : parts) {
    const auto x = t[0].to(torch::kFloat64), fd_h = t[1].to(torch::kFloat64), fd_h2 = t[2].to(torch::kFloat64);
    const auto estimate = (fd_h - fd_h2).abs();
    const auto err = (x - fd_h2).abs();
    const auto tol = 2 * estimate + rel * x.abs();
    for (int64_t w = 0; w < x.size(0); ++w)
      EXPECT_LE(err[w].item<double>(), tol[w].item<double>())
          << name << " walker " << w << ": exact " << x[w].item<double>() << " fd " << fd_h2[w].item<double>()
          << " fd error estimate " << estimate[w].item<double>();
    const auto sharp = (estimate <= 1e-6 * x.abs()).sum().item<int64_t>();
    EXPECT_GE(2 * sharp, x.size(0)) << name << ": finite differences too poor at h = " << h;
  }
}

/// max|a − b| ≤ rel · max|b| + abs_tol
inline void expect_close(const torch::Tensor& a, const torch::Tensor& b, double rel, double abs_tol,
                         const std::string& what = "") {
  const auto err = (a.to(torch::kFloat64) - b.to(torch::kFloat64)).abs().max().item<double>();
  const auto scale = b.abs().max().item<double>();
  EXPECT_LE(err, rel * scale + abs_tol) << what << ": max error " << err << " scale " << scale;
}

/// Coefficient of 1/r₁₂ in E_L as the up and the down electron of He approach each other:
/// (E_L(ε₂) − E_L(ε₁)) / (1/ε₂ − 1/ε₁) from two separations along one direction.
inline double inverse_distance_coefficient(WaveFunction& net, const System& he, const char* method) {
  HamiltonianOptions o;
  o.laplacian = method;
  LocalEnergy le(he, make_laplacian(o, 0), torch::TensorOptions().dtype(torch::kFloat64));
  const auto p = torch::tensor({0.7, -0.3, 0.5}, torch::kFloat64);
  const auto u = torch::tensor({0.48, 0.6, -0.64}, torch::kFloat64);  // unit vector
  auto at = [&](double eps) {
    const auto r = torch::stack({p, p + eps * u}).unsqueeze(0);  // [1, 2, 3]
    return le(net, r).energy.item<double>();
  };
  const double e1 = 1e-3, e2 = 1e-5;
  return (at(e2) - at(e1)) / (1 / e2 - 1 / e1);
}

}  // namespace nnvmc::test
