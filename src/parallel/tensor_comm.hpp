#pragma once
/// @file tensor_comm.hpp
/// Collectives on torch tensors over a Communicator. Host tensors travel as float64 host
/// buffers over MPI. CUDA float tensors are reduced on their device through NCCL when the build
/// has it (device_collectives.hpp; in their own dtype), else through float64 host buffers.
/// Results keep the input's dtype and device. With one rank every function is an identity.
#include <torch/torch.h>

#include <functional>
#include <vector>

#include "parallel/communicator.hpp"

namespace nnvmc::parallel {

/// Σ_ranks t, on every rank (t unchanged in shape, dtype and device).
torch::Tensor allreduce_sum(Communicator& comm, const torch::Tensor& t);

/// Sums every tensor of `ts` across ranks in place, in one message (e.g. all gradients).
void allreduce_sum_(Communicator& comm, std::vector<torch::Tensor>& ts);

/// Rows of all ranks concatenated in rank order: local [b_r, ...] → [Σ b_r, ...] on every rank;
/// `offset` (when given) receives the index of this rank's first row. Row counts may differ.
torch::Tensor allgather_rows(Communicator& comm, const torch::Tensor& local, std::int64_t* offset = nullptr);

/// Like allgather_rows, but only `root` receives the result (an undefined tensor elsewhere).
torch::Tensor gather_rows(Communicator& comm, const torch::Tensor& local, int root = 0);

/// Root's tensor on every rank (same shape on all ranks required).
void broadcast_(Communicator& comm, torch::Tensor& t, int root = 0);

/// Rows [offset, offset + count) of this rank's block of `global` [B, ...] (see partition()).
torch::Tensor local_rows(const Communicator& comm, const torch::Tensor& global);

/// A row-wise computation shared out over the ranks: `f` of this rank's rows of `rows`
/// [B, ...], gathered in rank order → f(rows) [B, ...] on every rank (one rank: f(rows)).
torch::Tensor map_rows(Communicator& comm, const torch::Tensor& rows,
                       const std::function<torch::Tensor(const torch::Tensor&)>& f);

}  // namespace nnvmc::parallel
