#include "models/orbformer/orbformer.hpp"
#include "models/orbformer/limits.hpp"

#include <cmath>
#include <numeric>

#include "blocks/per_sample.hpp"
#include "core/elements.hpp"
#include "core/errors.hpp"
#include "core/log.hpp"
#include "models/orbformer/init.hpp"
#include "models/orbformer/orbformer_body.hpp"

namespace nnvmc {

using orbformer::make_linear;

OrbformerElectronsImpl::OrbformerElectronsImpl(const OrbformerOptions& o)
    : width(o.heads * o.head_dim), heads(o.heads), featurization_heads(o.featurization_heads),
      edge_features(o.edge_features) {
  en_edges = register_module("en_edges", make_linear(40, width, false));
  encoder = register_module("encoder", make_linear(width, width, true));
  // Queries, keys, values and gates as haiku VarianceScaling(1, fan_in, normal).
  auto normal = [&](bool bias) {
    auto lin = make_linear(width, width, bias);
    torch::NoGradGuard ng;
    lin->weight.normal_(0.0, 1.0 / std::sqrt(static_cast<double>(width)));
    return lin;
  };
  for (int l = 0; l < o.layers; ++l) {
    const std::string t = std::to_string(l);
    query.push_back(register_module("query" + t, normal(false)));
    key.push_back(register_module("key" + t, normal(false)));
    value.push_back(register_module("value" + t, normal(false)));
    gate.push_back(register_module("gate" + t, normal(true)));
    out.push_back(register_module("out" + t, make_linear(width, width, false)));
    dense.push_back(register_module("dense" + t, make_linear(width, width, true)));
    // Heads start with distance scales 2^-2 … 2^3 (oneqmc's logspace initialisation); without
    // edge features there are none (no parameter the wavefunction does not depend on).
    if (edge_features)
      edge_scale.push_back(register_parameter(
        "edge_scale" + t, torch::pow(2.0, torch::linspace(-2.0, 3.0, heads, torch::kFloat64)).unsqueeze(1)));
  }
}

Orbformer::Orbformer(const OrbformerOptions& options) : options_(options), max_z_(options.max_atomic_number()) {
  const auto& o = options_;
  const int64_t w = o.heads * o.head_dim, wo = o.orbital_heads * o.orbital_head_dim, k = o.determinants;
  const int64_t s_env = o.envelopes_per_nucleus, dn = o.nuclear_feature_dim;
  nuclei_ = register_module("nuclei", orbformer::NucleiGnn(max_z_, dn, o.nuclear_layers, o.nuclear_heads));
  generator_ = register_module("orbital_generator",
                               orbformer::OrbitalGenerator(max_z_, wo, o.orbital_layers, o.orbital_heads, dn));
  electrons_ = register_module("electrons", OrbformerElectrons(o));
  projection_ = register_module("projection", make_linear(dn, 18, false));
  spin_embedding_ = register_parameter("spin_embedding", torch::empty({2, w}, torch::kFloat64));
  orbformer::truncated_normal_(spin_embedding_, 1.0);
  sender_nuclei_ = register_module("sender_nuclei", make_linear(dn, w, true));
  const char* tag[2] = {"up", "down"};
  for (int s = 0; s < 2; ++s) {
    orbital_gate_[s] = register_module(std::string("orbital_gate_") + tag[s], make_linear(wo, wo, true));
    envelope_coef_[s] = register_module(std::string("envelope_coef_") + tag[s], make_linear(wo, s_env * k, false));
    orbformer::determinants_approx_equal_(envelope_coef_[s]->weight, k, 1.0 / std::sqrt(static_cast<double>(wo)));
    orbital_projection_[s] =
        register_module(std::string("orbital_projection_") + tag[s], make_linear(wo, w * k, false));
    orbformer::determinants_approx_equal_(orbital_projection_[s]->weight, k,
                                          1.0 / std::sqrt(static_cast<double>(wo * w)));
  }
  // ζ_{Z,s} starts at clip(Z/s, 1, max_z + 1) for s = 1..S (hydrogen-like shells), stored
  // through the inverse of ζ = 0.1 + softplus(·).
  auto zeta = (torch::arange(1, max_z_ + 1, torch::kFloat64).unsqueeze(1) /
               torch::arange(1, s_env + 1, torch::kFloat64))
                  .clamp(1.0, static_cast<double>(max_z_ + 1));
  exponent_embedding_ = register_parameter("exponent_embedding", torch::log(torch::expm1(zeta - 0.1)));
  jastrow_alpha_ = register_parameter("jastrow_alpha", torch::full({2}, std::log(std::expm1(1.0)), torch::kFloat64));
  this->to(torch::kFloat64);
  log::info(strfmt("orbformer: %lld parameters (elements H-%s, %d heads x %d, %d layers, %d determinants)",
                   static_cast<long long>(parameter_count()), element_symbol(static_cast<int>(max_z_)).c_str(),
                   o.heads, o.head_dim, o.layers, o.determinants));
}

int64_t Orbformer::parameter_count() const {
  int64_t n = 0;
  for (const auto& p : parameters()) n += p.numel();
  return n;
}

void Orbformer::check_system(const SystemTensors& sys) const {
  check_orbformer_molecule(static_cast<int>(max_z_), sys.atomic_numbers, sys.n_electrons());
}

OrbformerMolecule Orbformer::molecule(const SystemTensors& sys) {
  check_system(sys);
  const auto& o = options_;
  const int64_t m = sys.n_atoms(), n = sys.n_electrons(), k = o.determinants, s_env = o.envelopes_per_nucleus;
  const int64_t w = electrons_->width;
  OrbformerMolecule mol;
  const auto edges = orbformer::nuclear_edges(sys.nuclei);
  mol.nuclear_features = nuclei_->forward(sys.charges, edges);  // [M, D]
  const auto nf = mol.nuclear_features;
  // Gate of the electron–nucleus features: spin embedding (row 1 up, 0 down) + nuclear linear.
  const auto nuc = per_sample::shared_linear(sender_nuclei_, nf);  // [M, W]
  std::vector<torch::Tensor> gates;
  if (sys.n_up > 0) gates.push_back(spin_embedding_[1].expand({sys.n_up, w}));
  if (sys.n_down > 0) gates.push_back(spin_embedding_[0].expand({sys.n_down, w}));
  mol.gate = torch::sigmoid((torch::cat(gates, 0).unsqueeze(1) + nuc.unsqueeze(0)) / std::sqrt(2.0));  // [N, M, W]
  // Per-nucleus 6×3 projection of r_i − R_m as one block-diagonal [6M, 3M] map.
  const auto p = per_sample::shared_linear(projection_, nf).view({m, 6, 3}) / std::sqrt(3.0);
  const auto eye = torch::eye(m, p.options());
  mol.projection = torch::einsum("mac,mn->manc", {p, eye}).reshape({6 * m, 3 * m});
  const auto index = sys.charges.round().to(torch::kLong) - 1;  // [M] element rows, on the device
  mol.exponents = 0.1 + torch::softplus(exponent_embedding_.index_select(0, index));  // [M, S]
  const auto orb = generator_->forward(sys.atomic_numbers, sys.charges, n, edges, nf);  // [N, M, Wo]
  for (int s = 0; s < 2; ++s) {
    const auto f = orb * torch::sigmoid(per_sample::shared_linear(orbital_gate_[s], orb));
    const auto coef = per_sample::shared_linear(envelope_coef_[s], f).view({n, m, s_env, k}) / std::sqrt(static_cast<double>(s_env));
    mol.envelope_weight[s] = coef.permute({3, 0, 1, 2}).reshape({k * n, m * s_env});
    const auto proj = per_sample::shared_linear(orbital_projection_[s], f.sum(1)).view({n, w, k});
    mol.orbital_weight[s] = proj.permute({2, 0, 1}).reshape({k * n, w});
  }
  mol.jastrow_alpha = torch::softplus(jastrow_alpha_);
  return mol;
}

torch::Tensor Orbformer::electron_features(const torch::Tensor& r, const SystemTensors& sys) {
  return electron_stream<torch::Tensor>(r, sys, molecule(sys));
}

LogPsi Orbformer::forward(const torch::Tensor& r, const SystemTensors& sys) {
  return log_psi<torch::Tensor>(r, sys, molecule(sys));
}

torch::Tensor Orbformer::orbitals(const torch::Tensor& r, const SystemTensors& sys) {
  const auto mol = molecule(sys);
  const auto phi = orbitals_electron_major<torch::Tensor>(r, sys, mol).permute({0, 2, 1, 3});  // [B, K, N, N]
  const auto j = jastrow<torch::Tensor>(r, sys, mol);                                           // [B]
  return phi * torch::exp(j / static_cast<double>(sys.n_electrons())).view({-1, 1, 1, 1});
}

torch::Tensor Orbformer::determinant_log_weights(const torch::Tensor& r, const SystemTensors& sys) {
  const auto det = Blocks<torch::Tensor>::log_det(orbitals_electron_major<torch::Tensor>(r, sys, molecule(sys)));
  return torch::log_softmax(det.logabs, -1);  // [B, K]
}

}  // namespace nnvmc
