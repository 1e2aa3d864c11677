#pragma once
/// @file walker_random.hpp
/// Counter-based random numbers, one stream per walker. A number is a pure function of
/// (seed, purpose, draw, global walker index, position in the draw) through Philox4x32-10
/// (Salmon, Moraes, Dror, Shaw, SC'11), computed on the device of the request: a scalar loop on
/// the CPU, integer tensor operations elsewhere (e.g. CUDA; the same bits, tested on the CPU).
/// So walker i sees the same numbers whatever the number of ranks or the walker chunking (and
/// the same uniforms on any device; normals to the rounding of log/sin/cos), no rank draws
/// another rank's numbers, nothing is copied from the host per step, and a stream's whole
/// state is its seed and one counter (`draw`), which a checkpoint stores.
#include <torch/torch.h>

#include <array>
#include <cstdint>

namespace nnvmc::parallel {

/// What a stream is for; part of the counter, so streams of one seed never overlap.
enum class RandomPurpose : std::uint32_t {
  initial_positions = 1,  ///< electrons placed around the nuclei
  proposal = 2,           ///< Gaussian Metropolis moves
  acceptance = 3,         ///< Metropolis acceptance tests
  probe = 4,              ///< Hutchinson probe vectors
};

/// Philox4x32-10 block function on 32-bit words held in int64 tensors (no overflow: products
/// are split in 16-bit halves).
/// @param counter [M, 4] int64, words in [0, 2^32)
/// @param key     the two 32-bit key words
/// @return [M, 4] int64 words in [0, 2^32), on counter's device
torch::Tensor philox4x32_10(const torch::Tensor& counter, std::array<std::uint32_t, 2> key);

/// Uniform numbers in the open interval (0, 1) with 53 random bits each.
/// @param walkers [b] int64 global walker indices (< 2^32), on the device wanted
/// @param draw    the stream's call counter (< 2^56); every call should use a new one
/// @param n       numbers per walker
/// @return [b, n] float64 on walkers' device
torch::Tensor walker_uniform(std::uint64_t seed, RandomPurpose purpose, std::uint64_t draw,
                             const torch::Tensor& walkers, std::int64_t n);

namespace detail {
/// walker_uniform through the integer tensor operations that non-CPU devices run, on any
/// device (so the CPU tests check the CUDA path's bits against the scalar loop).
torch::Tensor walker_uniform_tensor_ops(std::uint64_t seed, RandomPurpose purpose, std::uint64_t draw,
                                        const torch::Tensor& walkers, std::int64_t n);
}  // namespace detail

/// Standard normal numbers (Box–Muller on walker_uniform's bits). Shapes as walker_uniform.
torch::Tensor walker_normal(std::uint64_t seed, RandomPurpose purpose, std::uint64_t draw,
                            const torch::Tensor& walkers, std::int64_t n);

/// walker_uniform / walker_normal with the counter on the walkers' device: draw is a 0-dim
/// int64 tensor (< 2^56) there, read when the operations run, so a captured device graph
/// (parallel/device_graph.hpp) draws new numbers at each replay. Always the integer tensor
/// operations; the same numbers as the host-counter versions.
torch::Tensor walker_uniform(std::uint64_t seed, RandomPurpose purpose, const torch::Tensor& draw,
                             const torch::Tensor& walkers, std::int64_t n);
/// See the walker_uniform overload above. @return [b, n] float64 standard normals
torch::Tensor walker_normal(std::uint64_t seed, RandomPurpose purpose, const torch::Tensor& draw,
                            const torch::Tensor& walkers, std::int64_t n);

/// The numbers of one Metropolis step: the proposal stream's normals and the acceptance
/// stream's uniform of each walker.
struct StepNumbers {
  torch::Tensor normals;   ///< [b, n] float64: walker_normal(seed, proposal, draw, walkers, n)
  torch::Tensor uniforms;  ///< [b] float64: walker_uniform(seed, acceptance, draw, walkers, 1)
};
/// Both in one pass over the counters (one Philox evaluation for the two streams: on a device
/// about a third of the kernel launches of the two separate calls). The same numbers as the
/// separate calls. With `draw` a 0-dim int64 tensor on the walkers' device (graph capture) or a
/// host counter (CPU walkers: the scalar loops).
StepNumbers walker_step_numbers(std::uint64_t seed, const torch::Tensor& draw, const torch::Tensor& walkers,
                                std::int64_t n);
StepNumbers walker_step_numbers(std::uint64_t seed, std::uint64_t draw, const torch::Tensor& walkers, std::int64_t n);

/// A stream's whole state as a checkpointable uint8 tensor [24]: "NNVMCCTR", then the 8 bytes
/// of `seed` and of `draw`, little endian.
torch::Tensor counter_state(std::uint64_t seed, std::uint64_t draw);
/// The seed and counter of a counter_state() tensor. @return false (seed, draw unchanged) for
/// anything else, e.g. the generator state a checkpoint of an older nnvmc holds.
bool read_counter_state(const torch::Tensor& state, std::uint64_t& seed, std::uint64_t& draw);
/// Whether `state` is a counter_state() tensor.
bool is_counter_state(const torch::Tensor& state);

}  // namespace nnvmc::parallel
