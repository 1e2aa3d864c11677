/// @file psiformer.cpp
/// Psiformer construction, the autograd entry points, and the body's instantiations for
/// torch::Tensor and FwdLap.
#include "models/psiformer/psiformer.hpp"

#include <cmath>

#include "core/errors.hpp"
#include "models/psiformer/psiformer_body.hpp"

namespace nnvmc {

namespace {
/// FermiNet's initialisation (network_blocks.init_linear_layer): weights N(0, 1/fan_in),
/// biases N(0, 1).
torch::nn::Linear ferminet_linear(int in, int out, bool bias) {
  torch::nn::Linear lin(torch::nn::LinearOptions(in, out).bias(bias));
  torch::NoGradGuard ng;
  lin->weight.normal_(0.0, 1.0 / std::sqrt(static_cast<double>(in)));
  if (bias) lin->bias.normal_(0.0, 1.0);
  return lin;
}
}  // namespace

PsiformerLayerImpl::PsiformerLayerImpl(int width, int heads_, const std::vector<int>& mlp_hidden,
                                       bool layer_norm_)
    : heads(heads_), layer_norm(layer_norm_) {
  q = register_module("q", ferminet_linear(width, width, false));
  k = register_module("k", ferminet_linear(width, width, false));
  v = register_module("v", ferminet_linear(width, width, false));
  out = register_module("out", ferminet_linear(width, width, false));
  int in = width;
  std::vector<int> dims = mlp_hidden;
  dims.push_back(width);  // the MLP ends with a (tanh) projection back to the stream width
  for (size_t i = 0; i < dims.size(); ++i) {
    mlp.push_back(register_module("mlp" + std::to_string(i), ferminet_linear(in, dims[i], true)));
    in = dims[i];
  }
  if (layer_norm) {
    const auto opts = torch::TensorOptions().dtype(torch::kFloat64);
    const char* where[2] = {"attention", "mlp"};
    for (int i = 0; i < 2; ++i) {
      norm_scale[i] = register_parameter(std::string("norm_") + where[i] + "_scale", torch::ones({width}, opts));
      norm_offset[i] = register_parameter(std::string("norm_") + where[i] + "_offset", torch::zeros({width}, opts));
    }
  }
}

Psiformer::Psiformer(const PsiformerOptions& options, const System& system)
    : options_(options),
      n_up_(system.n_up()),
      n_down_(system.n_down()),
      n_atoms_(static_cast<int64_t>(system.atoms.size())) {
  if (options.envelope != "isotropic")
    throw ConfigError("'model.psiformer.envelope': unknown envelope '" + options.envelope + "'");
  if (options.jastrow != "simple_ee" && options.jastrow != "none")
    throw ConfigError("'model.psiformer.jastrow': unknown Jastrow factor '" + options.jastrow +
                      "' (known: simple_ee, none)");
  if (options.layers <= 0 || options.heads <= 0 || options.head_dim <= 0 || options.determinants <= 0)
    throw ConfigError("'model.psiformer': layers, heads, head_dim and determinants must be > 0");
  if (n_up_ > 0) spins_.push_back({0, n_up_});
  if (n_down_ > 0) spins_.push_back({n_up_, n_up_ + n_down_});
  set_built_for(system);
  const auto opts = torch::TensorOptions().dtype(torch::kFloat64);
  const int d = static_cast<int>(width()), in = 4 * static_cast<int>(n_atoms_) + 1;

  torch::Tensor embed;
  {
    torch::NoGradGuard ng;
    embed = torch::randn({d, in}, opts) / std::sqrt(static_cast<double>(in));
  }
  embed_ = register_parameter("embed", embed);
  for (int l = 0; l < options.layers; ++l)
    layers_.push_back(register_module("layer" + std::to_string(l),
                                      PsiformerLayer(d, options.heads, options.mlp_hidden_dims, options.layer_norm)));
  const int64_t n = n_up_ + n_down_, k = options.determinants;
  for (size_t s = 0; s < spins_.size(); ++s) {
    const std::string tag = std::to_string(s);
    projections_.push_back(register_module("orbital" + tag, ferminet_linear(d, static_cast<int>(k * n), false)));
    env_pi_.push_back(register_parameter("envelope_pi" + tag, torch::ones({k * n, n_atoms_}, opts)));
    env_sigma_.push_back(register_parameter("envelope_sigma" + tag, torch::ones({k * n, n_atoms_}, opts)));
  }
  if (options.jastrow == "simple_ee") {
    alpha_same_ = register_parameter("jastrow_alpha_same", torch::ones({1}, opts));
    alpha_opposite_ = register_parameter("jastrow_alpha_opposite", torch::ones({1}, opts));
  }
  this->to(torch::kFloat64);
}

void Psiformer::check_shapes(int64_t electrons, const SystemTensors& sys) const {
  if (electrons != n_up_ + n_down_ || sys.n_atoms() != n_atoms_)
    throw InputError("Psiformer built for " + std::to_string(n_up_ + n_down_) + " electrons and " +
                     std::to_string(n_atoms_) + " nuclei got " + std::to_string(electrons) + " electrons and " +
                     std::to_string(sys.n_atoms()) + " nuclei");
}

torch::Tensor Psiformer::orbitals(const torch::Tensor& r, const SystemTensors& sys) {
  check_shapes(r.size(1), sys);
  auto phi = orbitals_electron_major<torch::Tensor>(r, sys).permute({0, 2, 1, 3});  // [B, K, N, N]
  if (alpha_same_.defined() && r.size(1) > 1)
    phi = phi * torch::exp(jastrow<torch::Tensor>(r) / static_cast<double>(r.size(1))).view({-1, 1, 1, 1});
  return phi;
}

LogPsi Psiformer::forward(const torch::Tensor& r, const SystemTensors& sys) {
  check_shapes(r.size(1), sys);
  return log_psi<torch::Tensor>(r, sys);
}

SignedFwdLap Psiformer::forward_laplacian(const FwdLap& r, const SystemTensors& sys) {
  check_shapes(r.value.size(1), sys);
  return log_psi<FwdLap>(r, sys);
}

template torch::Tensor Psiformer::electron_features<torch::Tensor>(const torch::Tensor&, const SystemTensors&);
template FwdLap Psiformer::electron_features<FwdLap>(const FwdLap&, const SystemTensors&);

}  // namespace nnvmc
