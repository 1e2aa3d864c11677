/// Closed-shell (T): for every occupied triple (i, j, k)
///   W_abc = P[(ia)(jb)(kc)] ( Σ_d (bd|ck) t_ij^ad − Σ_l (lj|ck) t_il^ab ),
///   V_abc = W_abc + (bj|ck) t_i^a + (ai|ck) t_j^b + (ai|bj) t_k^c,
///   E(T) = Σ (4 W_abc + W_bca + W_cab)(V_abc − V_cba) / (3 D_ijk^abc),
/// where P sums the six simultaneous permutations of the pairs and
/// D = ε_i + ε_j + ε_k − ε_a − ε_b − ε_c.
#include <torch/torch.h>

#include <array>

#include "ccsd/dressed.hpp"
#include "ccsd/rccsd.hpp"

namespace nnvmc::ccsd {

double triples_correction(const MoIntegrals& mo, const torch::Tensor& t1, const torch::Tensor& t2,
                          Contractor& contract) {
  const auto& s = mo.space;
  const std::int64_t o = s.n_act_occ(), v = s.n_vir();
  DressedHamiltonian h(mo, contract);
  h.dress(torch::zeros({o, v}, torch::kFloat64));
  // (bd|ck) as [k][d, b, c] so that Σ_d t_ij[a, d] · G_k[d, (b c)] is one matrix product
  const torch::Tensor g_vvvo = h.block("vvvo");                              // [b, d, c, k]
  const torch::Tensor gk = g_vvvo.permute({3, 1, 0, 2}).contiguous().view({o, v, v * v});
  const torch::Tensor g_oovo = h.block("oovo");                              // [l, j, c, k]
  const torch::Tensor g_vovo = h.block("vovo");                              // [a, i, b, j]
  const torch::Tensor t2_ij = t2.permute({0, 2, 1, 3}).contiguous();         // [i, j, a, d]
  const torch::Tensor eo = mo.eps.narrow(0, s.n_frozen, o), ev = mo.eps.narrow(0, s.n_occ, v);
  const torch::Tensor ev3 = ev.view({v, 1, 1}) + ev.view({1, v, 1}) + ev.view({1, 1, v});
  const auto e_o = eo.accessor<double, 1>();
  // X(i,j,k)[a,b,c] = Σ_d (bd|ck) t_ij^ad − Σ_l (lj|ck) t_il^ab
  auto x = [&](std::int64_t i, std::int64_t j, std::int64_t k) {
    torch::Tensor r = t2_ij[i][j].matmul(gk[k]).view({v, v, v});
    // Σ_l t[i, a, l, b] g[l, j, c, k]
    const torch::Tensor tl = t2[i].permute({0, 2, 1}).reshape({v * v, o});   // [(a b), l]
    r -= tl.matmul(g_oovo.select(3, k).select(1, j)).view({v, v, v});       // g[l, c]
    return r;
  };
  // the six permutations σ of (0,1,2): occupied triple (o_σ0, o_σ1, o_σ2) pairs with
  // virtual axes in the same order; permute back to (a, b, c)
  static const std::array<std::array<int, 3>, 6> perms{{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}}};
  double e_t = 0;
  for (std::int64_t i = 0; i < o; ++i)
    for (std::int64_t j = 0; j < o; ++j)
      for (std::int64_t k = 0; k < o; ++k) {
        const std::array<std::int64_t, 3> occ{i, j, k};
        torch::Tensor w = torch::zeros({v, v, v}, torch::kFloat64);
        for (const auto& p : perms) {
          const torch::Tensor xp = x(occ[p[0]], occ[p[1]], occ[p[2]]);
          // xp axis q carries virtual label p[q]; result axis t needs the q with p[q] == t
          std::array<std::int64_t, 3> inv{};
          for (int q = 0; q < 3; ++q) inv[p[q]] = q;
          w += xp.permute({inv[0], inv[1], inv[2]});
        }
        torch::Tensor vt = w + t1[i].view({v, 1, 1}) * g_vovo.select(3, k).select(1, j).view({1, v, v}) +
                           t1[j].view({1, v, 1}) * g_vovo.select(3, k).select(1, i).view({v, 1, v}) +
                           t1[k].view({1, 1, v}) * g_vovo.select(3, j).select(1, i).view({v, v, 1});
        const torch::Tensor d = (e_o[i] + e_o[j] + e_o[k]) - ev3;
        const torch::Tensor z = 4 * w + w.permute({2, 0, 1}) + w.permute({1, 2, 0});
        e_t += ((z * (vt - vt.permute({2, 1, 0}))) / d).sum().item<double>() / 3.0;
      }
  return e_t;
}

}  // namespace nnvmc::ccsd
