#include "models/orbformer/nuclei.hpp"

#include <cmath>
#include <vector>

#include "blocks/per_sample.hpp"
#include "core/errors.hpp"
#include "models/orbformer/init.hpp"

namespace nnvmc::orbformer {

// Everything here is molecule-level: linear maps go through per_sample::shared_linear, so a
// recorded pass writes their per-sample gradients directly (train/recorded_pass.cpp).
using per_sample::shared_linear;

torch::Tensor featurize_vectors(const torch::Tensor& v, const std::vector<double>& shifts,
                                const std::vector<double>& scales) {
  // |v| with oneqmc's 1e-26 under the root: finite derivatives at v = 0 (self-edges).
  const auto r = (v.square().sum(-1, true) + 1e-26).sqrt();
  std::vector<torch::Tensor> exps, sigs, out;
  for (double s : scales) exps.push_back(s * torch::exp(-s * r));
  for (double t : shifts) sigs.push_back(torch::sigmoid(t - r) / t);
  out.insert(out.end(), exps.begin(), exps.end());
  out.insert(out.end(), sigs.begin(), sigs.end());
  for (const auto& e : exps) out.push_back(v * e);
  for (const auto& s : sigs) out.push_back(v * s);
  return torch::cat(out, -1);
}

torch::Tensor nuclear_edges(const torch::Tensor& nuclei) {
  return featurize_vectors(nuclei.unsqueeze(1) - nuclei.unsqueeze(0), {2, 4, 6}, {1});
}

NuclearMessagePassingImpl::NuclearMessagePassingImpl(int64_t width, int64_t heads_, int64_t node_dim,
                                                     bool orbital_)
    : heads(heads_), orbital(orbital_) {
  edge = register_module("edge", make_linear(kNuclearEdgeFeatures, width, false));
  receiver = register_module("receiver", make_linear(width, width, false));
  sender = register_module("sender", make_linear(width, width, false));
  if (node_dim > 0) {
    receiver_node = register_module("receiver_node", make_linear(node_dim, width, false));
    sender_node = register_module("sender_node", make_linear(node_dim, width, false));
  }
  dense = register_module("dense", make_linear(width, width, /*bias=*/!orbital));
}

torch::Tensor NuclearMessagePassingImpl::norm(const torch::Tensor& x) const {
  const auto c = x - x.mean(-1, true);
  auto var = c.square().mean(-1, true);
  // Orbital layer norm: one scale per orbital (and head) from the largest variance over the
  // nuclei, so an orbital's weight on one nucleus is not blown up relative to another.
  if (orbital) var = std::get<0>(var.max(1, true));
  return c * torch::rsqrt(var + 1.0);
}

torch::Tensor NuclearMessagePassingImpl::forward(const torch::Tensor& x, const torch::Tensor& edges,
                                                 const torch::Tensor& node) {
  const int64_t a = x.size(0), m = x.size(1), w = x.size(2), d = w / heads;
  const double inv_sqrt2 = 1.0 / std::sqrt(2.0);
  const auto y = norm(x);
  const auto e = shared_linear(edge, edges).view({m, m, heads, d});                      // [s, r, H, D]
  const auto rv = shared_linear(receiver, y).view({a, 1, m, heads, d}) * inv_sqrt2;      // receivers
  const auto sd = shared_linear(sender, y).view({a, m, 1, heads, d}) * inv_sqrt2;        // senders
  auto msg = torch::tanh(rv + sd);                                        // [A, s, r, H, D]
  if (receiver_node) {
    const auto rn = shared_linear(receiver_node, node).view({1, m, heads, d}), sn = shared_linear(sender_node, node).view({m, 1, heads, d});
    msg = msg * torch::sigmoid((rn + sn) * inv_sqrt2);
  }
  // Self-edges (s = r) carry messages too, as in oneqmc (whose attempt to zero them is a no-op).
  const auto update = norm((msg * e).sum(1)).reshape({a, m, w});  // per-head layer norm
  auto out = x + update;
  return out + torch::tanh(shared_linear(dense, orbital ? norm(out) : out));
}

NucleiGnnImpl::NucleiGnnImpl(int64_t max_z, int64_t dim, int64_t layers, int64_t heads) {
  embedding = register_parameter("embedding", torch::empty({max_z, dim}, torch::kFloat64));
  truncated_normal_(embedding, 1.0);
  for (int64_t l = 0; l < layers; ++l)
    blocks.push_back(register_module("block" + std::to_string(l), NuclearMessagePassing(dim, heads, 0, false)));
}

torch::Tensor NucleiGnnImpl::forward(const torch::Tensor& charges, const torch::Tensor& edges) {
  // Element rows from the charges on the device (no host data in the pass: a CUDA graph can
  // capture it, and a functorch transform has nothing to write through).
  const auto index = charges.round().to(torch::kLong) - 1;  // [M]
  auto x = embedding.index_select(0, index).unsqueeze(0);  // [1, M, D]
  for (auto& b : blocks) x = b->forward(x, edges, {});
  const auto c = x - x.mean(-1, true);
  return (c * torch::rsqrt(c.square().mean(-1, true) + 1.0)).squeeze(0);
}

OrbitalGeneratorImpl::OrbitalGeneratorImpl(int64_t max_z_, int64_t width, int64_t layers, int64_t heads,
                                           int64_t node_dim)
    : max_z(max_z_) {
  embedding = register_module("embedding", make_linear(max_z * (max_z + 1) / 2, width, false));
  truncated_normal_(embedding->weight, 1.0);
  for (int64_t l = 0; l < layers; ++l)
    blocks.push_back(register_module("block" + std::to_string(l),
                                     NuclearMessagePassing(width, heads, node_dim, true)));
}

torch::Tensor OrbitalGeneratorImpl::forward(const std::vector<int>& z, const torch::Tensor& charges, int64_t n_orbitals,
                                            const torch::Tensor& edges, const torch::Tensor& nuclear_features) {
  const int64_t m = static_cast<int64_t>(z.size()), slots = max_z * (max_z + 1) / 2;
  int64_t capacity = 0;
  for (int v : z) capacity += v;
  if (n_orbitals > capacity)
    throw InputError("orbformer: " + std::to_string(n_orbitals) + " electrons exceed the nuclei's " +
                     std::to_string(capacity) + " atomic slots (anions with more electrons than protons are not supported)");
  // Orbital o is slot k of atom n (atoms in order, each filling its Z slots), one-hot at
  // (o, n, Z(Z−1)/2 + k); built with device operations from the charges (no host data).
  const auto zl = charges.round().to(torch::kLong);                                    // [M]
  const auto end = torch::cumsum(zl, 0);                                              // [M]
  const auto o = torch::arange(n_orbitals, zl.options());                             // [N]
  const auto atom = torch::searchsorted(end, o, /*out_int32=*/false, /*right=*/true);  // [N]
  const auto za = zl.index_select(0, atom);
  const auto slot = torch::div(za * (za - 1), 2, "floor") + o - (end - zl).index_select(0, atom);  // [N]
  const auto opts = embedding->weight.options();
  const auto on_atom = (atom.unsqueeze(1) == torch::arange(m, zl.options()).unsqueeze(0)).to(opts);      // [N, M]
  const auto on_slot = (slot.unsqueeze(1) == torch::arange(slots, zl.options()).unsqueeze(0)).to(opts);  // [N, S]
  const auto onehot = on_atom.unsqueeze(2) * on_slot.unsqueeze(1);                                      // [N, M, S]
  auto x = shared_linear(embedding, onehot);  // [N, M, width]
  for (auto& b : blocks) x = b->forward(x, edges, nuclear_features);
  return x;
}

}  // namespace nnvmc::orbformer
