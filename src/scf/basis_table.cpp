/// @file basis_table.cpp
/// scf::BasisSet → GaussianBasisTable.
#include "scf/basis_table.hpp"

#include <libint2/solidharmonics.h>

#include <map>

namespace nnvmc::scf {

namespace {
torch::Tensor indices(const std::vector<int64_t>& v, const torch::Device& device) {
  return torch::tensor(v, torch::kInt64).to(device);
}
}  // namespace

GaussianBasisTable basis_table(const BasisSet& basis, torch::TensorOptions options) {
  const auto& shells = basis.shells();
  const auto& atoms = basis.shell_atoms();
  const auto& off = basis.shell_offsets();
  const auto device = options.device();
  GaussianBasisTable t;
  t.n_basis = static_cast<int64_t>(basis.n_functions());
  t.max_l = basis.max_l();
  for (int a : atoms) t.n_atoms = std::max<int64_t>(t.n_atoms, a + 1);

  std::vector<double> exps;
  std::vector<int64_t> prim_atom, s_shells, s_functions;
  std::vector<std::pair<int64_t, double>> coef;  // (shell, coefficient) per primitive
  for (std::size_t s = 0; s < shells.size(); ++s) {
    for (std::size_t p = 0; p < shells[s].nprim(); ++p) {
      exps.push_back(shells[s].alpha[p]);
      prim_atom.push_back(atoms[s]);
      coef.push_back({static_cast<int64_t>(s), shells[s].contr[0].coeff[p]});
    }
    if (shells[s].contr[0].l == 0) {
      s_shells.push_back(static_cast<int64_t>(s));
      s_functions.push_back(static_cast<int64_t>(off[s]));
    }
  }
  auto contraction = torch::zeros({static_cast<int64_t>(exps.size()), static_cast<int64_t>(shells.size())},
                                  torch::kFloat64);
  for (std::size_t p = 0; p < coef.size(); ++p) contraction[static_cast<int64_t>(p)][coef[p].first] = coef[p].second;
  t.prim_exp = torch::tensor(exps, torch::kFloat64).to(options);
  t.prim_atom = indices(prim_atom, device);
  t.contraction = contraction.to(options);
  t.s_shells = indices(s_shells, device);
  t.s_functions = indices(s_functions, device);

  // Shells grouped by (l, pure); functions numbered group by group, shell by shell.
  std::map<std::pair<int, bool>, std::vector<std::size_t>> by_kind;
  for (std::size_t s = 0; s < shells.size(); ++s) by_kind[{shells[s].contr[0].l, shells[s].contr[0].pure}].push_back(s);
  std::vector<int64_t> order;
  for (const auto& [kind, members] : by_kind) {
    const auto [l, pure] = kind;
    GaussianBasisTable::Group g;
    g.l = l;
    g.pure = pure;
    std::vector<int64_t> g_atoms, g_shells, pa, pb, pc;
    for (std::size_t s : members) {
      g_atoms.push_back(atoms[s]);
      g_shells.push_back(static_cast<int64_t>(s));
      for (std::size_t f = off[s]; f < off[s + 1]; ++f) order.push_back(static_cast<int64_t>(f));
    }
    // libint2's Cartesian order: a = l … 0, b = l − a … 0, c = l − a − b.
    for (int a = l; a >= 0; --a)
      for (int b = l - a; b >= 0; --b) {
        pa.push_back(a);
        pb.push_back(b);
        pc.push_back(l - a - b);
      }
    g.atoms = indices(g_atoms, device);
    g.shells = indices(g_shells, device);
    g.powers = torch::stack({indices(pa, device), indices(pb, device), indices(pc, device)});
    if (pure) {
      const auto n_cart = static_cast<int64_t>(pa.size());
      auto m = torch::zeros({n_cart, 2 * l + 1}, torch::kFloat64);
      for (int64_t c = 0; c < n_cart; ++c)
        for (int k = -l; k <= l; ++k)
          m[c][k + l] = libint2::solidharmonics::SolidHarmonicsCoefficients<double>::coeff(
              l, k, static_cast<int>(pa[c]), static_cast<int>(pb[c]), static_cast<int>(pc[c]));
      g.to_pure = m.to(options);
    }
    t.groups.push_back(std::move(g));
  }
  t.ao_order = indices(order, device);
  return t;
}

}  // namespace nnvmc::scf
