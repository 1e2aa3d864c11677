/// Closed-shell (T): for every occupied triple (i, j, k)
///   W_abc = P[(ia)(jb)(kc)] ( Σ_d (bd|ck) t_ij^ad − Σ_l (lj|ck) t_il^ab ),
///   V_abc = W_abc + (bj|ck) t_i^a + (ai|ck) t_j^b + (ai|bj) t_k^c,
///   E(T) = Σ (4 W_abc + W_bca + W_cab)(V_abc − V_cba) / (3 D_ijk^abc),
/// where P sums the six simultaneous permutations of the pairs and
/// D = ε_i + ε_j + ε_k − ε_a − ε_b − ε_c. Only i ≥ j ≥ k are visited (weighted), and the
/// GEMMs of the six permutations run as two batched contractions per triple through the
/// batching layer (term "triples": planned under the memory budget, reported per term).
#include <torch/torch.h>

#include <array>
#include <vector>

#include "ccsd/dressed.hpp"
#include "parallel/communicator.hpp"
#include "ccsd/rccsd.hpp"

namespace nnvmc::ccsd {

double triples_correction(const MoIntegrals& mo, const torch::Tensor& t1, const torch::Tensor& t2,
                          Contractor& contract) {
  const auto& s = mo.space;
  const std::int64_t o = s.n_act_occ(), v = s.n_vir();
  DressedHamiltonian h(mo, contract);
  h.dress(torch::zeros({o, v}, t1.options()));
  // (bd|ck) as [k][d, b, c] so that Σ_d t_ij[a, d] · G_k[d, (b c)] is one matrix product
  const torch::Tensor g_vvvo = h.block("vvvo");                              // [b, d, c, k]
  const torch::Tensor gk = g_vvvo.permute({3, 1, 0, 2}).contiguous().view({o, v, v * v});
  const torch::Tensor g_oovo = h.block("oovo");                              // [l, j, c, k]
  const torch::Tensor g_vovo = h.block("vovo");                              // [a, i, b, j]
  const torch::Tensor t2_ij = t2.permute({0, 2, 1, 3}).contiguous();         // [i, j, a, d]
  const torch::Tensor eo = mo.eps.narrow(0, s.n_frozen, o), ev = mo.eps.narrow(0, s.n_occ, v);
  const torch::Tensor ev3 = ev.view({v, 1, 1}) + ev.view({1, v, 1}) + ev.view({1, 1, v});
  const torch::Tensor eo_host = eo.to(torch::kCPU);  // the triple loop's scalars
  const auto e_o = eo_host.accessor<double, 1>();
  const torch::Tensor tl_all = t2.permute({0, 1, 3, 2}).reshape({o, v * v, o});  // [i, (a b), l]
  // the six permutations σ of (0,1,2): occupied triple (o_σ0, o_σ1, o_σ2) pairs with
  // virtual axes in the same order; the inverse permutation puts them back to (a, b, c)
  static const std::array<std::array<int, 3>, 6> perms{{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}}};
  // Only i ≥ j ≥ k are visited: the six orderings of a triple share W and V up to a
  // permutation of the virtual axes; `weight` is how many distinct orderings there are
  // (6 all different, 3 two equal, 1 all equal).
  // Across ranks (parallel::world()): triple number n goes to rank n mod K (round robin keeps
  // the i-dependent costs balanced); the partial sums are added at the end.
  auto& comm = parallel::world();
  std::int64_t triple = -1;
  // accumulated where the amplitudes live: one device-to-host read at the end, not one per triple
  torch::Tensor total = torch::zeros({}, t1.options());
  for (std::int64_t i = 0; i < o; ++i)
    for (std::int64_t j = 0; j <= i; ++j)
      for (std::int64_t k = 0; k <= j; ++k) {
        if (++triple % comm.size() != comm.rank()) continue;
        const std::array<std::int64_t, 3> occ{i, j, k};
        const double weight = (i == j && j == k) ? 1.0 : (i == j || j == k) ? 3.0 : 6.0;
        // X_s[a,b,c] = Σ_d t_pq[a,d] (bd|cr) − Σ_l t_p[a,b,l] (lq|cr) for the six (p,q,r) = σ(i,j,k),
        // as two batched contractions over s (planned and split like every CCSD term)
        std::vector<torch::Tensor> tp, gr, th, gh;
        for (const auto& p : perms) {
          const std::int64_t a = occ[p[0]], b = occ[p[1]], c = occ[p[2]];
          tp.push_back(t2_ij[a][b]);
          gr.push_back(gk[c].view({v, v, v}));
          th.push_back(tl_all[a].view({v, v, o}));
          gh.push_back(g_oovo.select(3, c).select(1, b));  // [l, c]
        }
        const torch::Tensor xs = contract("triples", "sad,sdbc->sabc", {torch::stack(tp), torch::stack(gr)}) -
                                 contract("triples", "sabl,slc->sabc", {torch::stack(th), torch::stack(gh)});
        torch::Tensor w = torch::zeros({v, v, v}, t1.options());
        for (std::size_t si = 0; si < perms.size(); ++si) {
          const auto& p = perms[si];
          // xs[si] axis q carries virtual label p[q]; result axis t needs the q with p[q] == t
          std::array<std::int64_t, 3> inv{};
          for (int q = 0; q < 3; ++q) inv[p[q]] = q;
          w += xs[std::int64_t(si)].permute({inv[0], inv[1], inv[2]});
        }
        torch::Tensor vt = w + t1[i].view({v, 1, 1}) * g_vovo.select(3, k).select(1, j).view({1, v, v}) +
                           t1[j].view({1, v, 1}) * g_vovo.select(3, k).select(1, i).view({v, 1, v}) +
                           t1[k].view({1, 1, v}) * g_vovo.select(3, j).select(1, i).view({v, v, 1});
        // W and V of a reordered triple σ(i, j, k) are W and V with permuted virtual axes
        // (D is symmetric in a, b, c), so the orderings cost elementwise work only; summing
        // all six and scaling by weight/6 counts each distinct ordering once.
        const torch::Tensor d = (e_o[i] + e_o[j] + e_o[k]) - ev3;
        torch::Tensor sum = torch::zeros({}, t1.options());
        for (const auto& p : perms) {
          const auto ws = w.permute({p[0], p[1], p[2]}), vs = vt.permute({p[0], p[1], p[2]});
          const torch::Tensor z = 4 * ws + ws.permute({2, 0, 1}) + ws.permute({1, 2, 0});
          sum += ((z * (vs - vs.permute({2, 1, 0}))) / d).sum();
        }
        total.add_(sum, weight / 18.0);
      }
  double e_t = total.item<double>();
  comm.allreduce_sum(&e_t, 1);
  return e_t;
}

}  // namespace nnvmc::ccsd
