/// Pair-basis packing of the ladder (ccsd/pair_packing.hpp): the fused host loops give exactly the
/// torch ops' results (the device path), and unpacking inverts packing.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "ccsd/pair_packing.hpp"

namespace {

namespace cc = nnvmc::ccsd;
using cc::KernelChoice;

/// x [o, v, o, v] with x_icjd = x_jdic (the pair symmetry of t2 and τ).
torch::Tensor pair_symmetric(std::int64_t o, std::int64_t v, torch::ScalarType dtype) {
  const torch::Tensor y = torch::randn({o, v, o, v}, torch::TensorOptions().dtype(dtype));
  return y + y.permute({2, 3, 0, 1});
}

TEST(PairPacking, FusedHostLoopsGiveExactlyTheTorchOpsResults) {
  torch::manual_seed(3);
  for (const auto dtype : {torch::kFloat64, torch::kFloat32})
    for (const auto& [o, v] : {std::pair<std::int64_t, std::int64_t>{5, 7}, {1, 4}, {3, 1}, {6, 2}}) {
      const cc::PairPacking po(o), pv(v);
      const torch::Tensor x = torch::randn({o, v, o, v}, torch::TensorOptions().dtype(dtype));  // any x
      const auto fused = cc::pack_pairs(x, po, pv), ops = cc::pack_pairs(x, po, pv, KernelChoice::torch_ops);
      ASSERT_EQ(fused.plus.sizes(), (std::vector<std::int64_t>{po.n_plus, pv.n_plus}));
      ASSERT_EQ(fused.minus.sizes(), (std::vector<std::int64_t>{po.n_minus, pv.n_minus}));
      EXPECT_TRUE(torch::equal(fused.plus, ops.plus)) << "o " << o << " v " << v;
      EXPECT_TRUE(torch::equal(fused.minus, ops.minus)) << "o " << o << " v " << v;
      // any packed product, not only a packed x
      const torch::Tensor p = torch::randn({po.n_plus, pv.n_plus}, x.options());
      const torch::Tensor m = torch::randn({po.n_minus, pv.n_minus}, x.options());
      EXPECT_TRUE(torch::equal(cc::unpack_pairs_iajb(p, m, po, pv), cc::unpack_pairs_iajb(p, m, po, pv, KernelChoice::torch_ops)))
          << "o " << o << " v " << v;
    }
}

TEST(PairPacking, UnpackingInvertsPackingOfPairSymmetricAmplitudes) {
  torch::manual_seed(4);
  for (const auto kernels : {KernelChoice::automatic, KernelChoice::torch_ops}) {
    const std::int64_t o = 4, v = 6;
    const cc::PairPacking po(o), pv(v);
    const torch::Tensor x = pair_symmetric(o, v, torch::kFloat64);
    const auto packed = cc::pack_pairs(x, po, pv, kernels);
    EXPECT_TRUE(torch::allclose(cc::unpack_pairs_iajb(packed.plus, packed.minus, po, pv, kernels), x, 1e-15, 1e-15));
    // plus [i ≤ j, c ≤ d] = ½(x_icjd + x_idjc): the element (i, j) = (1, 3), (c, d) = (0, 2)
    const std::int64_t ij = 1 * o - 0 + (3 - 1), cd = 0 * v + 2;
    EXPECT_NEAR(packed.plus[ij][cd].item<double>(), 0.5 * (x[1][0][3][2] + x[1][2][3][0]).item<double>(), 1e-15);
  }
}

TEST(PairPacking, NonContiguousInputPacksLikeItsContiguousCopy) {
  torch::manual_seed(5);
  const std::int64_t o = 3, v = 5;
  const cc::PairPacking po(o), pv(v);
  const torch::Tensor x = pair_symmetric(o, v, torch::kFloat64).permute({2, 3, 0, 1});  // same values, strided
  ASSERT_FALSE(x.is_contiguous());
  const auto a = cc::pack_pairs(x, po, pv), b = cc::pack_pairs(x.contiguous(), po, pv);
  EXPECT_TRUE(torch::allclose(a.plus, b.plus, 0, 0));
  EXPECT_TRUE(torch::allclose(a.minus, b.minus, 0, 0));
}

}  // namespace
