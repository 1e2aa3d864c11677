#pragma once
/// Shared checks for Laplacian tests: finite differences of log|ψ| and relative comparison.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>

#include "hamiltonian/laplacian.hpp"

namespace nnvmc::test {

/// Runs Laplacian method `method` on (wf, r).
inline KineticTerms kinetic(const std::string& method, WaveFunction& wf, const torch::Tensor& r) {
  HamiltonianOptions o;
  o.laplacian = method;
  return make_laplacian(o, 3)->compute(wf, r);
}

/// Fourth-order central finite differences of log|ψ|: ∇² and |∇|² per walker.
inline KineticTerms finite_differences(WaveFunction& wf, const torch::Tensor& r, double h) {
  torch::NoGradGuard ng;
  const int64_t b = r.size(0), d = 3 * r.size(1);
  const auto x = r.reshape({b, d});
  const auto f0 = wf.forward(r).logabs;
  auto lap = torch::zeros({b}, r.options()), gsq = torch::zeros({b}, r.options());
  auto at = [&](int64_t k, double step) {
    auto xs = x.clone();
    xs.select(1, k) += step;
    return wf.forward(xs.view(r.sizes())).logabs;
  };
  for (int64_t k = 0; k < d; ++k) {
    const auto f1 = at(k, h), fm1 = at(k, -h), f2 = at(k, 2 * h), fm2 = at(k, -2 * h);
    lap += (-f2 + 16 * f1 - 30 * f0 + 16 * fm1 - fm2) / (12 * h * h);
    gsq += ((-f2 + 8 * f1 - 8 * fm1 + fm2) / (12 * h)).square();
  }
  return {lap, gsq};
}

/// max|a − b| ≤ rel · max|b| + abs_tol
inline void expect_close(const torch::Tensor& a, const torch::Tensor& b, double rel, double abs_tol,
                         const std::string& what = "") {
  const auto err = (a.to(torch::kFloat64) - b.to(torch::kFloat64)).abs().max().item<double>();
  const auto scale = b.abs().max().item<double>();
  EXPECT_LE(err, rel * scale + abs_tol) << what << ": max error " << err << " scale " << scale;
}

}  // namespace nnvmc::test
