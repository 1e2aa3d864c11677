/// @file test_walker_random.cpp
/// Counter-based walker streams: Philox4x32-10 against Random123's known answers, the
/// distributions, and independence of each walker's numbers from the rest of the request.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdint>

#include "parallel/walker_random.hpp"

using namespace nnvmc::parallel;

namespace {
torch::Tensor words(std::initializer_list<std::int64_t> w) { return torch::tensor(std::vector<std::int64_t>(w)).view({1, 4}); }
}  // namespace

// Random123 tests/kat_vectors, the three "philox4x32 10" lines (counter, key → output).
TEST(WalkerRandom, Philox4x32_10MatchesRandom123KnownAnswers) {
  EXPECT_TRUE(torch::equal(philox4x32_10(words({0, 0, 0, 0}), {0, 0}),
                           words({0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8})));
  EXPECT_TRUE(torch::equal(philox4x32_10(words({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}), {0xffffffff, 0xffffffff}),
                           words({0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd})));
  EXPECT_TRUE(torch::equal(philox4x32_10(words({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}), {0xa4093822, 0x299f31d0}),
                           words({0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1})));
}

// The CPU's scalar loop and the tensor-op path that CUDA runs give the same bits.
TEST(WalkerRandom, TensorOpPathGivesTheCpuLoopsBits) {
  const auto ids = torch::tensor(std::vector<std::int64_t>{0, 1, 5, 4294967295LL, 123456});
  for (std::uint64_t seed : {std::uint64_t(0), std::uint64_t(1), std::uint64_t(0xfedcba9876543210ULL)})
    for (std::uint64_t draw : {std::uint64_t(0), std::uint64_t(7), (std::uint64_t(1) << 40) + 3})
      EXPECT_TRUE(torch::equal(walker_uniform(seed, RandomPurpose::proposal, draw, ids, 9),
                               nnvmc::parallel::detail::walker_uniform_tensor_ops(seed, RandomPurpose::proposal, draw, ids, 9)))
          << seed << " " << draw;
}

// The counter can live on the walkers' device (what a captured MH step reads at each replay):
// the same numbers as the host counter, uniform and normal.
TEST(WalkerRandom, ACounterOnTheDeviceGivesTheHostCountersNumbers) {
  const auto ids = torch::tensor(std::vector<std::int64_t>{0, 3, 4294967295LL, 77});
  for (std::uint64_t draw : {std::uint64_t(0), std::uint64_t(9), (std::uint64_t(1) << 32) + 5, (std::uint64_t(1) << 55) + 1}) {
    const auto d = torch::tensor(static_cast<std::int64_t>(draw));
    EXPECT_TRUE(torch::equal(walker_uniform(11, RandomPurpose::acceptance, d, ids, 3),
                             walker_uniform(11, RandomPurpose::acceptance, draw, ids, 3)))
        << draw;
    EXPECT_TRUE(torch::equal(walker_normal(11, RandomPurpose::proposal, d, ids, 7),
                             walker_normal(11, RandomPurpose::proposal, draw, ids, 7)))
        << draw;
  }
}

// A Metropolis step's numbers in one pass (what a device runs, here on the CPU through the
// tensor operations with the counter as a tensor) equal the two separate streams' numbers.
TEST(WalkerRandom, OnePassStepNumbersAreTheProposalAndAcceptanceStreams) {
  const auto ids = torch::tensor(std::vector<std::int64_t>{0, 3, 4294967295LL, 77, 12});
  for (std::int64_t n : {1, 6, 9})
    for (std::uint64_t draw : {std::uint64_t(0), std::uint64_t(9), (std::uint64_t(1) << 55) + 1}) {
      const auto one = walker_step_numbers(5, torch::tensor(static_cast<std::int64_t>(draw)), ids, n);
      ASSERT_EQ(one.normals.sizes(), (std::vector<std::int64_t>{5, n}));
      ASSERT_EQ(one.uniforms.sizes(), (std::vector<std::int64_t>{5}));
      EXPECT_TRUE(torch::equal(one.normals, walker_normal(5, RandomPurpose::proposal, draw, ids, n))) << n << " " << draw;
      EXPECT_TRUE(torch::equal(one.uniforms, walker_uniform(5, RandomPurpose::acceptance, draw, ids, 1).select(1, 0)))
          << n << " " << draw;
      const auto host = walker_step_numbers(5, draw, ids, n);  // CPU walkers: the scalar loops
      EXPECT_TRUE(torch::equal(host.normals, one.normals));
      EXPECT_TRUE(torch::equal(host.uniforms, one.uniforms));
    }
}

TEST(WalkerRandom, UniformAndNormalNumbersHaveTheirMoments) {
  const auto walkers = torch::arange(2000, torch::kInt64);
  const auto u = walker_uniform(7, RandomPurpose::acceptance, 3, walkers, 51);  // odd n: the last pair is cut
  ASSERT_EQ(u.sizes(), (std::vector<std::int64_t>{2000, 51}));
  EXPECT_GT(u.min().item<double>(), 0.0);
  EXPECT_LT(u.max().item<double>(), 1.0);
  const double n = double(u.numel());
  EXPECT_NEAR(u.mean().item<double>(), 0.5, 4 * std::sqrt(1.0 / 12 / n));
  EXPECT_NEAR(u.var().item<double>(), 1.0 / 12, 4 * std::sqrt(1.0 / 180 / n));
  const auto z = walker_normal(7, RandomPurpose::proposal, 3, walkers, 51);
  EXPECT_NEAR(z.mean().item<double>(), 0.0, 4 / std::sqrt(n));
  EXPECT_NEAR(z.var().item<double>(), 1.0, 4 * std::sqrt(2.0 / n));
  EXPECT_NEAR((z.pow(4)).mean().item<double>(), 3.0, 4 * std::sqrt(96.0 / n));  // Gaussian kurtosis
  // Neighbouring walkers and consecutive numbers of one walker are uncorrelated.
  const auto zc = z - z.mean();
  const double var = zc.square().mean().item<double>();
  EXPECT_NEAR((zc.slice(0, 1) * zc.slice(0, 0, -1)).mean().item<double>() / var, 0.0, 4 / std::sqrt(n));
  EXPECT_NEAR((zc.slice(1, 1) * zc.slice(1, 0, -1)).mean().item<double>() / var, 0.0, 4 / std::sqrt(n));
}

// What makes results independent of the number of ranks: a walker's numbers depend on its
// global index only, not on which other walkers are drawn with it.
TEST(WalkerRandom, AWalkersNumbersDependOnItsIndexNotOnTheRequest) {
  const auto all = walker_normal(11, RandomPurpose::proposal, 5, torch::arange(10, torch::kInt64), 12);
  const auto some = walker_normal(11, RandomPurpose::proposal, 5, torch::tensor({7, 3}, torch::kInt64), 12);
  EXPECT_TRUE(torch::equal(some[0], all[7]));
  EXPECT_TRUE(torch::equal(some[1], all[3]));
  // A request for fewer numbers is a prefix of a longer one.
  const auto fewer = walker_normal(11, RandomPurpose::proposal, 5, torch::arange(10, torch::kInt64), 5);
  EXPECT_TRUE(torch::equal(fewer, all.slice(1, 0, 5)));
  // Seed, purpose and draw each give other numbers.
  const auto ids = torch::arange(10, torch::kInt64);
  for (const auto& other : {walker_normal(12, RandomPurpose::proposal, 5, ids, 12),
                            walker_normal(11, RandomPurpose::probe, 5, ids, 12),
                            walker_normal(11, RandomPurpose::proposal, 6, ids, 12),
                            walker_normal(11, RandomPurpose::proposal, 5 + (std::uint64_t(1) << 32), ids, 12)})
    EXPECT_FALSE(torch::allclose(other, all));
}

TEST(WalkerRandom, CounterStateRoundTripsAndForeignStatesAreRecognised) {
  std::uint64_t seed = 0, draw = 0;
  ASSERT_TRUE(read_counter_state(counter_state(0xfedcba9876543210ULL, 0x0123456789abcdefULL), seed, draw));
  EXPECT_EQ(seed, 0xfedcba9876543210ULL);
  EXPECT_EQ(draw, 0x0123456789abcdefULL);
  EXPECT_TRUE(is_counter_state(counter_state(1, 3)));
  const auto legacy = at::detail::getDefaultCPUGenerator().get_state();  // an older nnvmc's state
  EXPECT_FALSE(is_counter_state(legacy));
  seed = 7, draw = 42;
  EXPECT_FALSE(read_counter_state(legacy, seed, draw));
  EXPECT_EQ(seed, 7u);
  EXPECT_EQ(draw, 42u);
}
