/// Closed-shell (T): for every occupied triple (i, j, k)
///   W_abc = P[(ia)(jb)(kc)] ( Σ_d (bd|ck) t_ij^ad − Σ_l (lj|ck) t_il^ab ),
///   V_abc = W_abc + (bj|ck) t_i^a + (ai|ck) t_j^b + (ai|bj) t_k^c,
///   E(T) = Σ (4 W_abc + W_bca + W_cab)(V_abc − V_cba) / (3 D_ijk^abc),
/// where P sums the six simultaneous permutations of the pairs and
/// D = ε_i + ε_j + ε_k − ε_a − ε_b − ε_c. Only i ≥ j ≥ k are visited: the orderings of a
/// triple share W and V up to a permutation of the virtual axes, and each distinct ordering
/// contributes (1/3)·Σ_abc W_abc r3(V)_abc / D_abc of this triple's W and V (triples_kernels.hpp;
/// all six permutations together 2·Σ). The GEMMs run
/// through the batching layer (term "triples": planned under the memory budget, reported per
/// term), one per distinct occupied index they share an operand on, and the orderings of a
/// triple with two equal indices that coincide are computed once.
#include <torch/torch.h>

#include <algorithm>
#include <array>
#include <vector>

#include "ccsd/dressed.hpp"
#include "ccsd/rccsd.hpp"
#include "ccsd/triples_kernels.hpp"
#include "parallel/communicator.hpp"

namespace nnvmc::ccsd {

namespace {

using Ordering = std::array<std::int64_t, 3>;

/// Positions (in `distinct`) of the orderings whose element `slot` is `value`.
std::vector<std::size_t> sharing(const std::vector<Ordering>& distinct, int slot, std::int64_t value) {
  std::vector<std::size_t> out;
  for (std::size_t u = 0; u < distinct.size(); ++u)
    if (distinct[u][std::size_t(slot)] == value) out.push_back(u);
  return out;
}

}  // namespace

double triples_correction(const MoIntegrals& mo, const torch::Tensor& t1, const torch::Tensor& t2,
                          Contractor& contract, KernelChoice kernels) {
  const auto& s = mo.space;
  const std::int64_t o = s.n_act_occ(), v = s.n_vir();
  DressedHamiltonian h(mo, contract);
  h.dress(torch::zeros({o, v}, t1.options()));
  // (bd|cr) as [r][d, (b c)] so that Σ_d t_pq[a, d] · G_r[d, (b c)] is one matrix product
  const torch::Tensor gk = h.block("vvvo").permute({3, 1, 0, 2}).contiguous().view({o, v, v * v});  // from [b, d, c, k]
  const torch::Tensor g_oovo = h.block("oovo");                                                       // [l, q, c, r]
  const torch::Tensor g_pair = h.block("vovo").permute({1, 3, 0, 2}).contiguous();  // [p, q, x, y] = (x p|y q)
  const torch::Tensor t2_pq = t2.permute({0, 2, 1, 3}).contiguous();                // [p, q, a, d]
  const torch::Tensor t2_p = t2.permute({0, 1, 3, 2}).reshape({o, v * v, o});       // [p, (a b), l]
  const torch::Tensor eo = mo.eps.narrow(0, s.n_frozen, o), ev = mo.eps.narrow(0, s.n_occ, v);
  const torch::Tensor eo_host = eo.to(torch::kCPU, torch::kFloat64);  // the triple loop's scalars
  const auto e_o = eo_host.accessor<double, 1>();
  // the six permutations σ of (0,1,2): occupied ordering (o_σ0, o_σ1, o_σ2) pairs with virtual
  // axes in the same order; the inverse permutation puts them back to (a, b, c)
  static const std::array<std::array<int, 3>, 6> perms{{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}}};
  // Across ranks (parallel::world()): triple number n goes to rank n mod K (round robin keeps
  // the i-dependent costs balanced); the partial sums are added at the end.
  // Where the amplitudes and integrals share a device (the host, or a GPU with resident data)
  // the second part of X is subtracted inside the first part's output (addmm_: a BLAS call with
  // β = 1 and no extra memory, timed and counted under "triples"), and W sums six arrays. Under
  // KernelChoice::torch_ops, or with operands the batching layer moves, both parts run through
  // the batching layer and the sum reads twelve.
  const bool subtract_in_place = kernels == KernelChoice::automatic && t2_p.device() == g_oovo.device();
  auto& comm = parallel::world();
  std::int64_t triple = -1;
  // accumulated where the amplitudes live: one device-to-host read at the end, not one per triple
  torch::Tensor total = torch::zeros({}, t1.options().dtype(torch::kFloat64));
  for (std::int64_t i = 0; i < o; ++i)
    for (std::int64_t j = 0; j <= i; ++j)
      for (std::int64_t k = 0; k <= j; ++k) {
        if (++triple % comm.size() != comm.rank()) continue;
        const Ordering occ{i, j, k};
        // distinct orderings (p, q, r) = σ(i, j, k) (6, 3 or 1) and which one each σ gives
        std::vector<Ordering> distinct;
        std::array<std::size_t, 6> of{};
        for (std::size_t si = 0; si < perms.size(); ++si) {
          const Ordering u{occ[std::size_t(perms[si][0])], occ[std::size_t(perms[si][1])], occ[std::size_t(perms[si][2])]};
          const auto at = std::find(distinct.begin(), distinct.end(), u);
          of[si] = std::size_t(at - distinct.begin());
          if (at == distinct.end()) distinct.push_back(u);
        }
        // X_pqr[x, y, z] = Σ_d t_pq[x, d] (y d|z r) − Σ_l t_p[x, y, l] (l q|z r): the first
        // part one GEMM per distinct r (shared right operand G_r), the second one per distinct p
        // (shared left operand t_p), each over the orderings that share it
        std::vector<torch::Tensor> x1(distinct.size()), x2(distinct.size());
        for (std::int64_t r : {i, j, k}) {
          const auto group = sharing(distinct, 2, r);
          if (group.empty() || x1[group[0]].defined()) continue;
          std::vector<torch::Tensor> lhs;
          for (std::size_t u : group) lhs.push_back(t2_pq[distinct[u][0]][distinct[u][1]]);
          const torch::Tensor out = contract("triples", "sad,dn->san", {torch::stack(lhs), gk[r]});  // [m, v, v²]
          for (std::size_t m = 0; m < group.size(); ++m) x1[group[m]] = out[std::int64_t(m)].view({v, v, v});
        }
        if (subtract_in_place) {
          // X = X1 − Σ_l t_p[(x y), l] (l q|z r) by the BLAS straight into X1 (β = 1, α = −1):
          // one array per ordering for the sum below to read instead of two
          Contractor::Section section(contract, "triples", 2.0 * double(distinct.size()) * double(v * v * v * o));
          for (std::size_t u = 0; u < distinct.size(); ++u)
            x1[u].view({v * v, v}).addmm_(t2_p[distinct[u][0]], g_oovo.select(3, distinct[u][2]).select(1, distinct[u][1]),
                                          1.0, -1.0);
        }
        for (std::int64_t p : {i, j, k}) {
          if (subtract_in_place) break;
          const auto group = sharing(distinct, 0, p);
          if (group.empty() || x2[group[0]].defined()) continue;
          std::vector<torch::Tensor> rhs;
          for (std::size_t u : group) rhs.push_back(g_oovo.select(3, distinct[u][2]).select(1, distinct[u][1]));  // [l, z]
          const torch::Tensor out = contract("triples", "nl,lsc->nsc", {t2_p[p], torch::stack(rhs, 1)});  // [v², m, v]
          for (std::size_t m = 0; m < group.size(); ++m) x2[group[m]] = out.select(1, std::int64_t(m)).view({v, v, v});
        }
        // W_abc = Σ_σ X_σ(ijk) with its axes put back in (a, b, c) order: x axis q carries the
        // virtual label σ[q], so result axis t reads the q with σ[q] == t
        std::vector<torch::Tensor> plus, minus;
        for (std::size_t si = 0; si < perms.size(); ++si) {
          std::array<std::int64_t, 3> inv{};
          for (int q = 0; q < 3; ++q) inv[std::size_t(perms[si][std::size_t(q)])] = q;
          plus.push_back(x1[of[si]].permute({inv[0], inv[1], inv[2]}));
          if (!subtract_in_place) minus.push_back(x2[of[si]].permute({inv[0], inv[1], inv[2]}));
        }
        torch::Tensor w;
        {
          Contractor::Section section(contract, "triples W");
          w = sum_of_views(plus, minus, kernels);
        }
        const TripleSingles singles{t1[i], t1[j], t1[k], g_pair[j][k], g_pair[i][k], g_pair[i][j]};
        // the distinct orderings of (i, j, k): 6 all different, 3 two equal, 1 all equal
        const double orderings = double(distinct.size());
        Contractor::Section section(contract, "triples energy");
        total.add_(triple_energy(w, singles, e_o[i] + e_o[j] + e_o[k], ev, kernels), orderings / 3.0);
      }
  double e_t = total.item<double>();
  comm.allreduce_sum(&e_t, 1);
  return e_t;
}

}  // namespace nnvmc::ccsd
