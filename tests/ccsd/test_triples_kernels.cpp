/// (T) per-triple kernels (ccsd/triples_kernels.hpp): the fused host loops against the torch
/// ops (the device path), the r3 form of a triple's energy against the sum over its six
/// orderings, and a whole CCSD(T) run through the torch-op kernels against the fused ones.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <array>
#include <vector>

#include "ccsd/driver.hpp"
#include "ccsd/pair_packing.hpp"
#include "ccsd/triples_kernels.hpp"
#include "ccsd/triples_visit.hpp"

namespace {

namespace cc = nnvmc::ccsd;
using cc::KernelChoice;

const std::array<std::array<std::int64_t, 3>, 6> kPerms{{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}}};

/// Six permuted views of fresh [n, n, n] tensors, and six of slices of an [n·n, 6, n] tensor
/// (strided like the (T) GEMM outputs), with n not a multiple of the host loop's tile.
void permuted_views(std::int64_t n, torch::ScalarType dtype, std::vector<torch::Tensor>& plus,
                    std::vector<torch::Tensor>& minus) {
  const auto opt = torch::TensorOptions().dtype(dtype);
  const torch::Tensor slab = torch::randn({n * n, 6, n}, opt);
  for (std::size_t s = 0; s < kPerms.size(); ++s) {
    const auto& p = kPerms[s];
    plus.push_back(torch::randn({n, n, n}, opt).permute({p[0], p[1], p[2]}));
    minus.push_back(slab.select(1, std::int64_t(s)).view({n, n, n}).permute({p[2], p[0], p[1]}));
  }
}

TEST(TriplesKernels, SumOfPermutedViewsOnTheHostEqualsTheTorchOps) {
  torch::manual_seed(5);
  for (const auto dtype : {torch::kFloat64, torch::kFloat32})
    for (const std::int64_t n : {1, 7, 19, 40}) {
      std::vector<torch::Tensor> plus, minus;
      permuted_views(n, dtype, plus, minus);
      const torch::Tensor host = cc::sum_of_views(plus, minus), ops = cc::sum_of_views(plus, minus, KernelChoice::torch_ops);
      torch::Tensor expect = torch::zeros({n, n, n}, torch::TensorOptions().dtype(torch::kFloat64));
      for (const auto& t : plus) expect += t.to(torch::kFloat64);
      for (const auto& t : minus) expect -= t.to(torch::kFloat64);
      EXPECT_TRUE(host.is_contiguous());
      const double tol = dtype == torch::kFloat64 ? 1e-13 : 1e-5;
      EXPECT_TRUE(torch::allclose(host, ops, tol, tol)) << "n " << n;
      EXPECT_TRUE(torch::allclose(host.to(torch::kFloat64), expect, tol, tol)) << "n " << n;
    }
}

/// The (T) term of one triple as the sum over its six orderings σ, each with W and V of
/// permuted virtual axes: Σ_σ Σ_abc (4 W_abc + W_bca + W_cab)(V_abc − V_cba) / D_abc.
double six_orderings(const torch::Tensor& w, const torch::Tensor& vt, const torch::Tensor& d) {
  torch::Tensor sum = torch::zeros({}, w.options());
  for (const auto& p : kPerms) {
    const auto ws = w.permute({p[0], p[1], p[2]}), vs = vt.permute({p[0], p[1], p[2]});
    const torch::Tensor z = 4 * ws + ws.permute({2, 0, 1}) + ws.permute({1, 2, 0});
    sum += ((z * (vs - vs.permute({2, 1, 0}))) / d).sum();
  }
  return sum.item<double>();
}

TEST(TriplesKernels, TripleEnergyIsASixthOfTheSumOverTheSixOrderings) {
  torch::manual_seed(6);
  const auto f64 = torch::TensorOptions().dtype(torch::kFloat64);
  for (const std::int64_t v : {1, 2, 9, 23}) {
    const torch::Tensor w = torch::randn({v, v, v}, f64);
    const cc::TripleSingles s{torch::randn({v}, f64), torch::randn({v}, f64), torch::randn({v}, f64),
                              torch::randn({v, v}, f64), torch::randn({v, v}, f64), torch::randn({v, v}, f64)};
    const torch::Tensor ev = torch::rand({v}, f64) + 0.5;  // virtual energies > 0 > occupied ones
    const double e_ijk = -1.7;
    const torch::Tensor vt = w + s.ti.view({v, 1, 1}) * s.gjk.view({1, v, v}) + s.tj.view({1, v, 1}) * s.gik.view({v, 1, v}) +
                             s.tk.view({1, 1, v}) * s.gij.view({v, v, 1});
    const torch::Tensor d = e_ijk - (ev.view({v, 1, 1}) + ev.view({1, v, 1}) + ev.view({1, 1, v}));
    const double expect = six_orderings(w, vt, d) / 6.0;
    const double host = cc::triple_energy(w, s, e_ijk, ev).item<double>();
    const double ops = cc::triple_energy(w, s, e_ijk, ev, KernelChoice::torch_ops).item<double>();
    EXPECT_NEAR(host, expect, 1e-12 * std::abs(expect)) << "v " << v;
    EXPECT_NEAR(ops, expect, 1e-12 * std::abs(expect)) << "v " << v;
    // float32 amplitudes and integrals: the same sum to float32 rounding (denominators stay float64)
    const auto f32 = [](const torch::Tensor& t) { return t.to(torch::kFloat32); };
    const cc::TripleSingles s32{f32(s.ti), f32(s.tj), f32(s.tk), f32(s.gjk), f32(s.gik), f32(s.gij)};
    for (const auto k : {KernelChoice::automatic, KernelChoice::torch_ops}) {
      const torch::Tensor e32 = cc::triple_energy(f32(w), s32, e_ijk, ev, k);
      EXPECT_EQ(e32.scalar_type(), torch::kFloat64);
      EXPECT_NEAR(e32.item<double>(), expect, 1e-5 * std::abs(expect) + 1e-9) << "v " << v << " float32";
    }
  }
}

TEST(TriplesKernels, CcsdTriplesThroughTheTorchOpKernelsEqualsTheFusedHostLoops) {
  const auto run = [](KernelChoice k) {
    cc::CcsdRunOptions o;
    o.basis = "6-31g";
    o.ccsd.triples = true;
    o.ccsd.kernels = k;
    return cc::run_ccsd(nnvmc::load_molecule("h2o", nnvmc::default_molecules_dir()), o);
  };
  const auto host = run(KernelChoice::automatic), ops = run(KernelChoice::torch_ops);
  EXPECT_NEAR(ops.cc.e_ccsd, host.cc.e_ccsd, 1e-11);
  EXPECT_NEAR(ops.cc.e_t, host.cc.e_t, 1e-12);
  EXPECT_LT(host.cc.e_t, -1e-4);  // a real (T) correction, not a vacuous zero
}

}  // namespace

namespace {

// The CUDA energy kernel's warps walk the pairs a ≥ b by number (pair_of, triples_visit.hpp):
// every pair once, in the host loop's order, also where the square root is inexact.
TEST(TriplesKernels, PairNumbersWalkTheTriangleOnceInTheHostLoopsOrder) {
  long long p = 0;
  for (long long a = 0; a < 700; ++a)
    for (long long b = 0; b <= a; ++b, ++p) {
      long long ga = -1, gb = -1;
      nnvmc::ccsd::pair_of(p, ga, gb);
      ASSERT_EQ(ga, a) << "p " << p;
      ASSERT_EQ(gb, b) << "p " << p;
    }
  for (const long long a : {46340LL, 1LL << 24, (1LL << 26) + 3}) {  // large a: first and last pair of a row
    long long ga = -1, gb = -1;
    nnvmc::ccsd::pair_of(a * (a + 1) / 2, ga, gb);
    EXPECT_EQ(ga, a);
    EXPECT_EQ(gb, 0);
    nnvmc::ccsd::pair_of(a * (a + 1) / 2 + a, ga, gb);
    EXPECT_EQ(ga, a);
    EXPECT_EQ(gb, a);
  }
}

}  // namespace

namespace {

// The host loops split their work across torch's threads (at::parallel_for / parallel_reduce,
// built with OpenMP: core/host_parallel.hpp). On three threads, with extents that do not divide
// evenly, they give the torch ops' results: the chunks cover every element once.
TEST(TriplesKernels, HostLoopsOnSeveralThreadsEqualTheTorchOps) {
  const int threads_before = at::get_num_threads();
  at::set_num_threads(3);
  torch::manual_seed(12);
  const auto f64 = torch::TensorOptions().dtype(torch::kFloat64);
  for (const std::int64_t n : {5, 29}) {
    std::vector<torch::Tensor> plus, minus;
    permuted_views(n, torch::kFloat64, plus, minus);
    EXPECT_TRUE(torch::allclose(cc::sum_of_views(plus, minus), cc::sum_of_views(plus, minus, KernelChoice::torch_ops), 1e-13, 1e-13))
        << "n " << n;
    const torch::Tensor w = torch::randn({n, n, n}, f64);
    const cc::TripleSingles s{torch::randn({n}, f64), torch::randn({n}, f64), torch::randn({n}, f64),
                              torch::randn({n, n}, f64), torch::randn({n, n}, f64), torch::randn({n, n}, f64)};
    const torch::Tensor ev = torch::rand({n}, f64) + 0.5;
    const double host = cc::triple_energy(w, s, -1.3, ev).item<double>();
    const double ops = cc::triple_energy(w, s, -1.3, ev, KernelChoice::torch_ops).item<double>();
    EXPECT_NEAR(host, ops, 1e-12 * (std::abs(ops) + 1)) << "n " << n;
  }
  for (const auto& [o, v] : {std::pair<std::int64_t, std::int64_t>{5, 7}, {7, 11}}) {
    const cc::PairPacking po(o), pv(v);
    const torch::Tensor x = torch::randn({o, v, o, v}, f64);
    const auto fused = cc::pack_pairs(x, po, pv), ops = cc::pack_pairs(x, po, pv, KernelChoice::torch_ops);
    EXPECT_TRUE(torch::equal(fused.plus, ops.plus) && torch::equal(fused.minus, ops.minus)) << "o " << o << " v " << v;
    EXPECT_TRUE(torch::equal(cc::unpack_pairs_iajb(ops.plus, ops.minus, po, pv),
                             cc::unpack_pairs_iajb(ops.plus, ops.minus, po, pv, KernelChoice::torch_ops)))
        << "o " << o << " v " << v;
  }
  at::set_num_threads(threads_before);
}

}  // namespace
