#include "models/orbformer/init.hpp"

#include <cmath>

namespace nnvmc::orbformer {

void truncated_normal_(torch::Tensor t, double stddev) {
  torch::NoGradGuard ng;
  auto x = torch::randn(t.sizes(), t.options());
  for (auto out = x.abs() > 2; out.any().item<bool>(); out = x.abs() > 2)
    x = torch::where(out, torch::randn(t.sizes(), t.options()), x);  // redraw the tails
  t.copy_(x * stddev);
}

torch::nn::Linear make_linear(int64_t in, int64_t out, bool bias) {
  torch::nn::Linear lin(torch::nn::LinearOptions(in, out).bias(bias));
  truncated_normal_(lin->weight, 1.0 / std::sqrt(static_cast<double>(in)));
  if (bias) {
    torch::NoGradGuard ng;
    lin->bias.zero_();
  }
  return lin;
}

void determinants_approx_equal_(torch::Tensor weight, int64_t k, double stddev) {
  torch::NoGradGuard ng;
  const int64_t groups = weight.size(0) / k, in = weight.size(1);
  auto base = torch::empty({groups, 1, in}, weight.options());
  truncated_normal_(base, stddev);
  auto noise = torch::empty_like(weight);
  truncated_normal_(noise, stddev * 1e-3);
  weight.copy_(base.expand({groups, k, in}).reshape({groups * k, in}) + noise);
}

}  // namespace nnvmc::orbformer
