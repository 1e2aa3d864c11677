#pragma once
/// @file triples_kernels.hpp
/// The elementwise part of one occupied triple of (T) (triples.cpp): the sum of the six
/// permuted GEMM results into W, and the triple's energy sum. Fused host loops on the CPU, CUDA
/// kernels on a CUDA device (triples_cuda.hpp, in a CUDA build), torch ops otherwise or when
/// KernelChoice::torch_ops asks; all agree to rounding.
#include <torch/types.h>

#include <vector>

#include "ccsd/kernel_choice.hpp"

namespace nnvmc::ccsd {

/// Which implementation the kernels below run for tensors like `x` under `choice`: the host
/// loops (CPU, float64 / float32, contiguous unless `any_strides`), the CUDA kernels (a CUDA
/// float64 / float32 tensor in a build with them: triples_cuda.hpp) or the torch ops (any other
/// case, and always under KernelChoice::torch_ops).
enum class TriplesPath { host_loops, cuda_kernels, torch_ops };
TriplesPath triples_path(const torch::Tensor& x, KernelChoice choice, bool any_strides);

/// Σ_s plus_s − Σ_s minus_s of 3-D tensors of one shape [n0, n1, n2] with any strides (permuted
/// views of GEMM outputs), as one contiguous tensor. The host loop reads each view once, in
/// cache-sized tiles, instead of one strided pass and one temporary per view.
torch::Tensor sum_of_views(const std::vector<torch::Tensor>& plus, const std::vector<torch::Tensor>& minus,
                           KernelChoice kernels = KernelChoice::automatic);

/// The singles part of V for one occupied triple (i, j, k):
/// V_abc = W_abc + t_i[a] g_jk[b, c] + t_j[b] g_ik[a, c] + t_k[c] g_ij[a, b], g_pq[x, y] = (x p|y q).
struct TripleSingles {
  torch::Tensor ti, tj, tk;     ///< rows of t1, [v] each
  torch::Tensor gjk, gik, gij;  ///< [v, v] each
};

/// Σ_abc W_abc r3(V)_abc / (e_ijk − ε_a − ε_b − ε_c) for one triple, with
/// r3(V)_abc = 4 V_abc + V_bca + V_cab − 2 V_cba − 2 V_acb − 2 V_bac: the sum over the six
/// orderings of (i, j, k) of their (T) terms is (1/3)·6 times it (each ordering's W and V are
/// this triple's with permuted virtual axes). w [v, v, v] contiguous, ev [v] virtual orbital
/// energies. The host loop visits a ≥ b ≥ c once and forms V on the fly (no [v, v, v]
/// temporaries). Returns a 0-dim tensor on w's device (float64 on the host path).
torch::Tensor triple_energy(const torch::Tensor& w, const TripleSingles& s, double e_ijk, const torch::Tensor& ev,
                            KernelChoice kernels = KernelChoice::automatic);

}  // namespace nnvmc::ccsd
