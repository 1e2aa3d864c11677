/// @file schnet.cpp
/// Construction of PauliNet's graph network (the forward bodies are in schnet_body.hpp).
#include "models/paulinet/schnet.hpp"

#include <cmath>

namespace nnvmc {

std::vector<int> log_widths(int start, int end, int layers) {
  std::vector<int> w;
  for (int k = 0; k <= layers; ++k) {
    const double q = static_cast<double>(k) / layers;
    w.push_back(static_cast<int>(std::lround(std::pow(start, 1 - q) * std::pow(end, q))));
  }
  return w;
}

MlpImpl::MlpImpl(const std::vector<int>& widths, bool last_bias) {
  for (size_t k = 0; k + 1 < widths.size(); ++k) {
    const bool bias = k + 2 < widths.size() || last_bias;
    layers.push_back(register_module("linear" + std::to_string(k),
                                     torch::nn::Linear(torch::nn::LinearOptions(widths[k], widths[k + 1]).bias(bias))));
  }
}

SchNetLayerImpl::SchNetLayerImpl(int features, int kernel, int embedding) {
  const auto filter = log_widths(features, kernel, 2);
  auto linear = [](int in, int out) { return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(false)); };
  w_same = register_module("w_same", Mlp(filter, false));
  w_anti = register_module("w_anti", Mlp(filter, false));
  w_nuc = register_module("w_nuc", Mlp(filter, false));
  h = register_module("h", linear(embedding, kernel));
  g_same = register_module("g_same", linear(kernel, embedding));
  g_anti = register_module("g_anti", linear(kernel, embedding));
  g_nuc = register_module("g_nuc", linear(kernel, embedding));
}

SchNetImpl::SchNetImpl(int64_t up, int64_t down, int64_t n_atoms, const PaulinetOptions& o)
    : n_up(up), n_down(down) {
  const int64_t kinds = up == down ? 1 : 2;
  electron_embedding = register_parameter("electron_embedding", torch::randn({kinds, o.embedding_dim}));
  nuclear_embedding = register_parameter("nuclear_embedding", torch::randn({n_atoms, o.kernel_dim}));
  for (int l = 0; l < o.interactions; ++l)
    layers.push_back(register_module("layer" + std::to_string(l),
                                     SchNetLayer(o.distance_features, o.kernel_dim, o.embedding_dim)));
  const int q = o.distance_features;
  const double delta = 1.0 / (2 * q);
  const auto qs = torch::linspace(delta, 1 - delta, q, torch::kFloat64);
  // Buffers: they follow the module to its device and dtype (a forward pass reads no host data).
  mu = register_buffer("mu", o.cutoff * qs.square());
  inv_sigma2 = register_buffer("inv_sigma2", 49.0 / (1 + o.cutoff * qs).square());
}

}  // namespace nnvmc
