#include <gtest/gtest.h>
#include <torch/torch.h>

#include <functional>
#include <string>
#include <vector>

#include "train/outer_sum_tensors.hpp"

using namespace nnvmc;

namespace {

using Variant = std::function<void(const outer_sum::Args&, std::int64_t, std::int64_t)>;

/// The variants this CPU runs, by name.
std::vector<std::pair<std::string, Variant>> variants() {
  std::vector<std::pair<std::string, Variant>> v{{"portable", outer_sum::run_portable}, {"run", outer_sum::run}};
  if (outer_sum::avx2_supported()) v.emplace_back("avx2", outer_sum::run_avx2);
  return v;
}

/// c[b] (+)= g[b]ᵀ x[b] through `f`, over all samples in two halves (as two threads would).
/// @param c [B, O, I] view with contiguous rows
void apply(const Variant& f, const torch::Tensor& g, const torch::Tensor& x, torch::Tensor c, bool accumulate) {
  const auto a = outer_sum::tensor_args(g, x, c, accumulate);
  const std::int64_t half = g.size(0) / 2;
  f(a, 0, half);
  f(a, half, g.size(0));
}

double max_rel(const torch::Tensor& a, const torch::Tensor& b) {
  return ((a - b).abs().max() / (1 + b.abs().max())).item<double>();
}

}  // namespace

// Every variant, overwriting and accumulating, with a per-walker and a shared input, into
// columns of a wider buffer at an odd offset (rows not 32-byte aligned), equals the batched
// matrix product; the columns around the block are left alone.
TEST(OuterSum, EveryVariantEqualsTheBatchedProductInAStridedBlock) {
  torch::manual_seed(3);
  const auto f64 = torch::kFloat64;
  struct Shape { std::int64_t b, s, o, i; };
  for (const Shape sh : {Shape{7, 4, 5, 6}, Shape{9, 3, 2, 17}, Shape{4, 16, 12, 9}, Shape{3, 1, 1, 1}, Shape{3, 4, 384, 16}}) {
    const auto g = torch::randn({sh.b, sh.s, sh.o}, f64);
    const auto x_walker = torch::randn({sh.b, sh.s, sh.i}, f64);
    const auto x_shared = torch::randn({1, sh.s, sh.i}, f64).expand({sh.b, sh.s, sh.i});
    for (const auto& x : {x_walker, x_shared}) {
      const auto product = torch::bmm(g.transpose(1, 2), x);  // [B, O, I]
      for (const auto& [name, f] : variants()) {
        const std::int64_t offset = 3, width = offset + sh.o * sh.i + 5;
        const auto before = torch::randn({sh.b, width}, f64);
        auto buffer = before.clone();
        auto block = buffer.slice(1, offset, offset + sh.o * sh.i).view({sh.b, sh.o, sh.i});
        apply(f, g, x, block, false);
        EXPECT_LT(max_rel(block, product), 1e-14) << name;
        apply(f, g, x, block, true);
        EXPECT_LT(max_rel(block, 2 * product), 1e-14) << name << " accumulate";
        EXPECT_TRUE(torch::equal(buffer.slice(1, 0, offset), before.slice(1, 0, offset))) << name;
        EXPECT_TRUE(torch::equal(buffer.slice(1, offset + sh.o * sh.i), before.slice(1, offset + sh.o * sh.i)))
            << name;
      }
    }
  }
  if (!outer_sum::avx2_supported()) std::printf("[ info     ] this CPU has no AVX2+FMA: portable variant only\n");
}

// No positions: the block is zeroed (overwrite) or left as it is (accumulate).
TEST(OuterSum, NoPositionsWriteZerosOrAddNothing) {
  const auto g = torch::zeros({3, 0, 4}, torch::kFloat64);
  const auto x = torch::zeros({3, 0, 5}, torch::kFloat64);
  for (const auto& [name, f] : variants()) {
    auto c = torch::ones({3, 4, 5}, torch::kFloat64);
    apply(f, g, x, c, true);
    EXPECT_TRUE(torch::equal(c, torch::ones_like(c))) << name;
    apply(f, g, x, c, false);
    EXPECT_TRUE(torch::equal(c, torch::zeros_like(c))) << name;
  }
}

// Rows that are not adjacent in the output (a column slice of a wider tensor) are written
// exactly and nothing beside them is touched.
TEST(OuterSum, SeparatedRowsAreWrittenExactly) {
  torch::manual_seed(5);
  const auto g = torch::randn({3, 2, 7}, torch::kFloat64);
  const auto x = torch::randn({3, 2, 9}, torch::kFloat64);
  for (const auto& [name, f] : variants()) {
    auto wide = torch::zeros({3, 7, 12}, torch::kFloat64);
    auto rows = wide.slice(2, 1, 10);  // [3, 7, 9], row stride 12
    apply(f, g, x, rows, false);
    EXPECT_LT(max_rel(rows, torch::bmm(g.transpose(1, 2), x)), 1e-14) << name;
    EXPECT_EQ(wide.slice(2, 0, 1).abs().sum().item<double>(), 0.0) << name;
    EXPECT_EQ(wide.slice(2, 10).abs().sum().item<double>(), 0.0) << name;
  }
}
