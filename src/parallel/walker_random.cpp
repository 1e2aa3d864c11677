#include "parallel/walker_random.hpp"

#include <cmath>
#include <cstring>

#include "core/host_parallel.hpp"


namespace nnvmc::parallel {
namespace {

constexpr std::int64_t kMask32 = 0xffffffffLL;
constexpr std::uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;       // Philox multipliers
constexpr std::uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;        // Weyl key increments
constexpr char kMagic[8] = {'N', 'N', 'V', 'M', 'C', 'C', 'T', 'R'};

/// The int64 column [[x], [y]] [2, 1] on `opts`' device, made by fills (no host copy, so it can
/// be made inside a captured device graph).
torch::Tensor column(std::int64_t x, std::int64_t y, const torch::TensorOptions& opts) {
  return torch::cat({torch::full({1, 1}, x, opts), torch::full({1, 1}, y, opts)});
}

/// Counters [b·blocks, 4] of `blocks` consecutive blocks per walker of one draw.
/// @param draw 0-dim int64 on walkers' device (so a captured device graph reads it at replay)
torch::Tensor counters(RandomPurpose purpose, const torch::Tensor& draw, const torch::Tensor& walkers,
                       std::int64_t blocks) {
  const auto opts = walkers.options().dtype(torch::kInt64);
  const std::int64_t b = walkers.size(0);
  const auto block = torch::arange(blocks, opts).repeat({b});
  const auto walker = walkers.to(torch::kInt64).repeat_interleave(blocks);
  const auto c1 = torch::bitwise_and(draw, kMask32).expand({b * blocks});
  const auto c3 = torch::bitwise_or(torch::bitwise_and(torch::bitwise_right_shift(draw, 32), 0xffffff),
                                    static_cast<std::int64_t>(purpose) << 24)
                      .expand({b * blocks});
  return torch::stack({block, c1, torch::bitwise_and(walker, kMask32), c3}, 1);
}

/// The four counter words of block j of `walker`'s draw (the layout counters() builds).
struct Counter {
  std::uint32_t c[4];
};
inline Counter counter_of(RandomPurpose purpose, std::uint64_t draw, std::int64_t walker, std::int64_t j) {
  return {{static_cast<std::uint32_t>(j), static_cast<std::uint32_t>(draw),
           static_cast<std::uint32_t>(walker),
           (static_cast<std::uint32_t>(purpose) << 24) | static_cast<std::uint32_t>((draw >> 32) & 0xffffff)}};
}

/// Philox4x32-10 of one counter, in scalar 32/64-bit arithmetic (the CPU path).
inline Counter philox_scalar(Counter x, std::uint32_t k0, std::uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) k0 += kW0, k1 += kW1;
    const std::uint64_t p0 = std::uint64_t(kM0) * x.c[0], p1 = std::uint64_t(kM1) * x.c[2];
    x = {{static_cast<std::uint32_t>(p1 >> 32) ^ x.c[1] ^ k0, static_cast<std::uint32_t>(p1),
          static_cast<std::uint32_t>(p0 >> 32) ^ x.c[3] ^ k1, static_cast<std::uint32_t>(p0)}};
  }
  return x;
}

inline double to_open_unit(std::uint32_t a, std::uint32_t b) {
  return (static_cast<double>((std::uint64_t(a >> 5) << 26) + (b >> 6)) + 0.5) * 0x1p-53;
}

/// uniform_blocks on the CPU: a loop over walkers (parallel), same bits as the tensor path.
torch::Tensor uniform_blocks_cpu(std::uint64_t seed, RandomPurpose purpose, std::uint64_t draw,
                                 const torch::Tensor& walkers, std::int64_t blocks) {
  const auto ids = walkers.to(torch::kInt64).contiguous();
  const std::int64_t b = ids.size(0);
  auto out = torch::empty({b, 2 * blocks}, torch::kFloat64);
  const auto* id = ids.data_ptr<std::int64_t>();
  double* o = out.data_ptr<double>();
  const auto k0 = static_cast<std::uint32_t>(seed), k1 = static_cast<std::uint32_t>(seed >> 32);
  at::parallel_for(0, b, 64, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t i = lo; i < hi; ++i)
      for (std::int64_t j = 0; j < blocks; ++j) {
        const Counter w = philox_scalar(counter_of(purpose, draw, id[i], j), k0, k1);
        o[i * 2 * blocks + 2 * j] = to_open_unit(w.c[0], w.c[1]);
        o[i * 2 * blocks + 2 * j + 1] = to_open_unit(w.c[2], w.c[3]);
      }
  });
  return out;
}

/// The two 53-bit uniforms in (0, 1) of each block of Philox words [M, 4] → [M, 2] float64
/// (to_open_unit's arithmetic).
torch::Tensor uniforms_of(const torch::Tensor& words) {
  const auto w = words.view({-1, 2, 2});  // [M, 2, (a, b)]
  const auto hi = torch::bitwise_right_shift(w.select(2, 0), 5), lo = torch::bitwise_right_shift(w.select(2, 1), 6);
  const auto bits = hi * (std::int64_t(1) << 26) + lo;  // < 2^53, exact in float64
  return (bits.to(torch::kFloat64) + 0.5) * std::ldexp(1.0, -53);
}

/// uniform_blocks through integer tensor operations (any device). @param draw as counters()
torch::Tensor uniform_blocks_tensor_ops(std::uint64_t seed, RandomPurpose purpose, const torch::Tensor& draw,
                                        const torch::Tensor& walkers, std::int64_t blocks) {
  const std::array<std::uint32_t, 2> key = {static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)};
  return uniforms_of(philox4x32_10(counters(purpose, draw, walkers, blocks), key)).view({walkers.size(0), 2 * blocks});
}

/// [b, 2·blocks] uniforms in (0, 1): each block's four words give two 53-bit numbers. CPU
/// walkers take the scalar loop, other devices the integer tensor ops (the same bits).
torch::Tensor uniform_blocks(std::uint64_t seed, RandomPurpose purpose, std::uint64_t draw,
                             const torch::Tensor& walkers, std::int64_t blocks, bool tensor_ops = false) {
  if (walkers.device().is_cpu() && !tensor_ops) return uniform_blocks_cpu(seed, purpose, draw, walkers, blocks);
  // A fill from a host scalar: no host round-trip on a device.
  const auto d = torch::full({}, static_cast<std::int64_t>(draw), walkers.options().dtype(torch::kInt64));
  return uniform_blocks_tensor_ops(seed, purpose, d, walkers, blocks);
}

/// Box–Muller: standard normals [b, 2·pairs] from uniforms [b, 2·pairs].
torch::Tensor box_muller(const torch::Tensor& uniforms) {
  const auto u = uniforms.view({uniforms.size(0), -1, 2});
  const auto radius = torch::sqrt(-2.0 * torch::log(u.select(2, 0)));
  const auto angle = (2.0 * M_PI) * u.select(2, 1);
  return torch::stack({radius * torch::cos(angle), radius * torch::sin(angle)}, 2).view({uniforms.size(0), -1});
}

}  // namespace

torch::Tensor philox4x32_10(const torch::Tensor& counter, std::array<std::uint32_t, 2> key) {
  // Both halves of a round in one set of kernels (the device runs one launch per op): a [2, M]
  // holds the words that are multiplied (c0, c2), b [2, M] the ones that are xored (c1, c3).
  // A round: (hi, lo) = a·(M0, M1), a ← (hi1 ^ c1 ^ k0, hi0 ^ c3 ^ k1), b ← (lo1, lo0).
  const auto opts = counter.options();
  auto a = torch::stack({counter.select(1, 0), counter.select(1, 2)});
  auto b = torch::stack({counter.select(1, 1), counter.select(1, 3)});
  // 16-bit halves of the multipliers: the partial products stay below 2^48 (no int64 overflow)
  const auto m_lo = column(kM0 & 0xffff, kM1 & 0xffff, opts), m_hi = column(kM0 >> 16, kM1 >> 16, opts);
  // round keys (k0 + r·W0, k1 + r·W1) mod 2^32 for r = 0..9 [10, 2, 1]
  const auto keys = torch::bitwise_and(column(key[0], key[1], opts).unsqueeze(0) +
                                           torch::arange(10, opts).view({10, 1, 1}) * column(kW0, kW1, opts).unsqueeze(0),
                                       kMask32);
  for (int round = 0; round < 10; ++round) {
    const auto p_lo = a * m_lo, p_hi = a * m_hi;                                              // < 2^48
    const auto t = p_lo + torch::bitwise_left_shift(torch::bitwise_and(p_hi, 0xffff), 16);  // < 2^49
    const auto hi = torch::bitwise_right_shift(p_hi, 16) + torch::bitwise_right_shift(t, 32);
    a = torch::bitwise_xor(torch::bitwise_xor(hi.flip(0), b), keys[round]);
    b = torch::bitwise_and(t, kMask32).flip(0);
  }
  return torch::stack({a[0], b[0], a[1], b[1]}, 1);
}

torch::Tensor walker_uniform(std::uint64_t seed, RandomPurpose purpose, std::uint64_t draw,
                             const torch::Tensor& walkers, std::int64_t n) {
  return uniform_blocks(seed, purpose, draw, walkers, (n + 1) / 2).narrow(1, 0, n);
}

namespace detail {
torch::Tensor walker_uniform_tensor_ops(std::uint64_t seed, RandomPurpose purpose, std::uint64_t draw,
                                        const torch::Tensor& walkers, std::int64_t n) {
  return uniform_blocks(seed, purpose, draw, walkers, (n + 1) / 2, /*tensor_ops=*/true).narrow(1, 0, n);
}
}  // namespace detail

torch::Tensor walker_normal(std::uint64_t seed, RandomPurpose purpose, std::uint64_t draw,
                            const torch::Tensor& walkers, std::int64_t n) {
  return box_muller(uniform_blocks(seed, purpose, draw, walkers, (n + 1) / 2)).narrow(1, 0, n);
}

torch::Tensor walker_uniform(std::uint64_t seed, RandomPurpose purpose, const torch::Tensor& draw,
                             const torch::Tensor& walkers, std::int64_t n) {
  return uniform_blocks_tensor_ops(seed, purpose, draw, walkers, (n + 1) / 2).narrow(1, 0, n);
}

torch::Tensor walker_normal(std::uint64_t seed, RandomPurpose purpose, const torch::Tensor& draw,
                            const torch::Tensor& walkers, std::int64_t n) {
  return box_muller(uniform_blocks_tensor_ops(seed, purpose, draw, walkers, (n + 1) / 2)).narrow(1, 0, n);
}

StepNumbers walker_step_numbers(std::uint64_t seed, const torch::Tensor& draw, const torch::Tensor& walkers,
                                std::int64_t n) {
  // the proposal's blocks and the acceptance block of every walker in one Philox pass
  const std::int64_t b = walkers.size(0), blocks = (n + 1) / 2;
  const std::array<std::uint32_t, 2> key = {static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)};
  const auto c = torch::cat({counters(RandomPurpose::proposal, draw, walkers, blocks),
                             counters(RandomPurpose::acceptance, draw, walkers, 1)});
  const auto u = uniforms_of(philox4x32_10(c, key));  // [b·blocks + b, 2]
  return {box_muller(u.narrow(0, 0, b * blocks).view({b, 2 * blocks})).narrow(1, 0, n),
          u.narrow(0, b * blocks, b).select(1, 0)};
}

StepNumbers walker_step_numbers(std::uint64_t seed, std::uint64_t draw, const torch::Tensor& walkers, std::int64_t n) {
  if (walkers.device().is_cpu())  // the scalar loops
    return {walker_normal(seed, RandomPurpose::proposal, draw, walkers, n),
            walker_uniform(seed, RandomPurpose::acceptance, draw, walkers, 1).select(1, 0)};
  return walker_step_numbers(seed, torch::full({}, static_cast<std::int64_t>(draw), walkers.options().dtype(torch::kInt64)),
                             walkers, n);
}

torch::Tensor counter_state(std::uint64_t seed, std::uint64_t draw) {
  auto t = torch::empty({24}, torch::kUInt8);
  auto* p = t.data_ptr<std::uint8_t>();
  std::memcpy(p, kMagic, 8);
  for (int i = 0; i < 8; ++i) {
    p[8 + i] = static_cast<std::uint8_t>(seed >> (8 * i));
    p[16 + i] = static_cast<std::uint8_t>(draw >> (8 * i));
  }
  return t;
}

bool is_counter_state(const torch::Tensor& state) {
  if (!state.defined() || state.numel() != 24 || state.scalar_type() != torch::kUInt8) return false;
  const auto c = state.contiguous().cpu();
  return std::memcmp(c.data_ptr<std::uint8_t>(), kMagic, 8) == 0;
}

bool read_counter_state(const torch::Tensor& state, std::uint64_t& seed, std::uint64_t& draw) {
  if (!is_counter_state(state)) return false;
  const auto c = state.contiguous().cpu();
  const auto* p = c.data_ptr<std::uint8_t>();
  seed = draw = 0;
  for (int i = 0; i < 8; ++i) {
    seed |= static_cast<std::uint64_t>(p[8 + i]) << (8 * i);
    draw |= static_cast<std::uint64_t>(p[16 + i]) << (8 * i);
  }
  return true;
}

}  // namespace nnvmc::parallel
