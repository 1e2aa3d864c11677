#pragma once
/// @file distributed.hpp
/// The few cross-rank steps of training and evaluation (see parallel/communicator.hpp), kept
/// out of the loops themselves. With one process every function is a plain pass-through.
#include <torch/torch.h>

#include <cstdint>
#include <string>

#include "parallel/communicator.hpp"

namespace nnvmc {

/// True on the rank that writes files (result.h5, summary.json, checkpoints).
inline bool writes_output() { return parallel::world().is_root(); }

/// Local energies of all walkers, in global walker order, on every rank. @param local [b]
/// @param offset receives the index of this rank's first walker @return [B]
torch::Tensor all_walkers(const torch::Tensor& local, std::int64_t* offset = nullptr);

/// This rank's part [offset, offset + count) of a tensor over all walkers.
torch::Tensor own_rows(const torch::Tensor& all, std::int64_t offset, std::int64_t count);

/// Gradients summed over ranks in place (each rank's holds its walkers' share of the mean).
void sum_over_ranks_(std::vector<torch::Tensor>& tensors);

/// Σ over ranks of a double.
double sum_over_ranks(double value);

/// The largest value any rank has (all ranks then act on the same stop request/hook answer).
int max_over_ranks(int value);

/// Rank 0's `text` on every rank (a collective).
std::string root_text(const std::string& text);

/// throw_if_stop_requested on every rank when any rank has the request (a collective: every
/// rank calls it at the same step, so none is left waiting in the next collective).
void throw_if_stop_requested_on_any_rank(const std::string& stage);

}  // namespace nnvmc
