/// AO → MO transformation of the RHF integrals (conventional or Cholesky).
#include "ccsd/mo_integrals.hpp"

#include <limits>

#include <torch/torch.h>

#include "batching/contract.hpp"
#include "ccsd/cholesky.hpp"
#include "core/errors.hpp"
#include "scf/integrals.hpp"

namespace nnvmc::ccsd {

namespace {

torch::Tensor to_torch(const Eigen::MatrixXd& m) {
  // Eigen is column-major: its buffer is the row-major transpose.
  return torch::from_blob(const_cast<double*>(m.data()), {m.cols(), m.rows()}, torch::kFloat64)
      .t()
      .contiguous();
}

MoIntegrals common(const scf::ScfResult& rhf, int n_frozen) {
  if (rhf.unrestricted) throw InputError("CCSD needs an RHF reference");
  MoIntegrals mo;
  mo.space.n_mo = rhf.n_mo;
  mo.space.n_occ = rhf.n_alpha;
  mo.space.n_frozen = n_frozen;
  if (n_frozen < 0 || n_frozen >= rhf.n_alpha)
    throw InputError("frozen core of " + std::to_string(n_frozen) + (n_frozen == 1 ? " orbital" : " orbitals") +
                     " leaves no active occupied orbital");
  const torch::Tensor c = to_torch(rhf.c_alpha);
  mo.h = c.t().matmul(to_torch(rhf.h_core)).matmul(c).contiguous();
  mo.eps = torch::from_blob(const_cast<double*>(rhf.eps_alpha.data()), {rhf.eps_alpha.size()}, torch::kFloat64).clone();
  mo.e_hf = rhf.energy;
  mo.e_nuc = rhf.e_nuc;
  return mo;
}

}  // namespace

int frozen_core_orbitals(const System& system) {
  int n = 0;
  for (const auto& a : system.atoms) n += a.Z > 54 ? 27 : a.Z > 36 ? 18 : a.Z > 18 ? 9 : a.Z > 10 ? 5 : a.Z > 2 ? 1 : 0;
  return n;
}

torch::Tensor transform_ao_eri(std::vector<double>&& ao, const torch::Tensor& c) {
  const std::int64_t n = c.size(0), m = c.size(1);
  if (static_cast<std::int64_t>(ao.size()) != n * n * n * n)
    throw InputError("transform_ao_eri: the AO integrals do not match the orbitals' basis");
  const torch::Tensor ct = c.t().contiguous();  // (m, n)
  // Three indices of one p-slice at a time (n³ temporaries), into [p, Q, R, S]; each step is one
  // GEMM (or a batch of them) on contiguous views, with no n⁴ permuted copy.
  torch::Tensor half = torch::empty({n, m, m, m}, c.options());
  {
    const torch::Tensor g = torch::from_blob(ao.data(), {n, n, n, n}, torch::kFloat64);  // (a view of ao)
    for (std::int64_t p = 0; p < n; ++p) {
      const torch::Tensor s = g[p].reshape({n * n, n}).mm(c);  // [q r, S]
      const torch::Tensor q = ct.mm(s.view({n, n * m}));       // [Q, r S]
      half[p].copy_(torch::matmul(ct, q.view({m, n, m})));     // [Q, R, S]
    }
  }
  std::vector<double>().swap(ao);  // the AO integrals go before the last quarter is allocated
  return ct.mm(half.view({n, m * m * m})).view({m, m, m, m});         // [P, Q, R, S]
}

MoIntegrals conventional_integrals(const scf::ScfResult& rhf, const scf::BasisSet& basis, int n_frozen,
                                  const scf::IntegralOptions& integrals) {
  MoIntegrals mo = common(rhf, n_frozen);
  // no fixed cap: run_ccsd has checked the transform's peak against the host's memory
  // (conventional_integrals_peak_bytes)
  mo.eri = transform_ao_eri(scf::eri_full(basis, integrals, std::numeric_limits<std::size_t>::max()), to_torch(rhf.c_alpha));
  return mo;
}

MoIntegrals cholesky_integrals(const scf::ScfResult& rhf, const scf::BasisSet& basis, int n_frozen, double tau,
                               const scf::IntegralOptions& integrals) {
  return cholesky_integrals(rhf, n_frozen, cholesky_ao_eri(basis, tau, integrals));
}

MoIntegrals cholesky_integrals(const scf::ScfResult& rhf, int n_frozen, const torch::Tensor& ao_vectors) {
  MoIntegrals mo = common(rhf, n_frozen);
  const torch::Tensor c = to_torch(rhf.c_alpha);
  mo.chol = batching::contract("xpq,pP,qQ->xPQ", {ao_vectors, c, c});
  return mo;
}

std::int64_t MoIntegrals::bytes() const {
  std::int64_t b = 0;
  for (const torch::Tensor* t : {&h, &eps, &eri, &chol})
    if (t->defined()) b += std::int64_t(t->nbytes());
  return b;
}

MoIntegrals MoIntegrals::to(const torch::Device& device) const {
  MoIntegrals m = *this;
  for (torch::Tensor* t : {&m.h, &m.eps, &m.eri, &m.chol})
    if (t->defined()) *t = t->to(device);
  return m;
}

MoIntegrals integrals_from_tensors(torch::Tensor h, torch::Tensor eps, torch::Tensor eri, int n_occ,
                                   int n_frozen, double e_hf, double e_nuc) {
  MoIntegrals mo;
  mo.space.n_mo = int(h.size(0));
  mo.space.n_occ = n_occ;
  mo.space.n_frozen = n_frozen;
  mo.h = h.contiguous();
  mo.eps = eps.contiguous();
  mo.eri = eri.contiguous();
  mo.e_hf = e_hf;
  mo.e_nuc = e_nuc;
  return mo;
}

}  // namespace nnvmc::ccsd
