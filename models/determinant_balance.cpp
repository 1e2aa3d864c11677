#include "models/determinant_balance.hpp"

#include <algorithm>

namespace nnvmc {

torch::Tensor energy_std(const torch::Tensor& e) {
  const auto centred = e.detach() - e.detach().mean();
  return (centred.square().sum() / static_cast<double>(std::max<std::int64_t>(1, e.numel() - 1))).sqrt();
}

torch::Tensor determinant_balance_penalty(WaveFunction& wf, const torch::Tensor& r, const SystemTensors& sys,
                                          double energy_std) {
  const auto log_p = wf.determinant_log_weights(r, sys);  // [B, K]
  if (!log_p.defined()) return {};
  return -energy_std * log_p.mean();
}

torch::Tensor determinant_balance_penalty(WaveFunction& wf, const torch::Tensor& r, const SystemTensors& sys,
                                          const torch::Tensor& energy_std) {
  const auto log_p = wf.determinant_log_weights(r, sys);  // [B, K]
  if (!log_p.defined()) return {};
  return -energy_std.detach().to(log_p.options()) * log_p.mean();
}

}  // namespace nnvmc
