#include "train/distributed.hpp"

#include "parallel/tensor_comm.hpp"
#include "train/stop_request.hpp"

namespace nnvmc {

torch::Tensor all_walkers(const torch::Tensor& local, std::int64_t* offset) {
  return parallel::allgather_rows(parallel::world(), local, offset);
}

torch::Tensor own_rows(const torch::Tensor& all, std::int64_t offset, std::int64_t count) {
  if (offset == 0 && count == all.size(0)) return all;
  return all.slice(0, offset, offset + count);
}

void sum_over_ranks_(std::vector<torch::Tensor>& tensors) { parallel::allreduce_sum_(parallel::world(), tensors); }

double sum_over_ranks(double value) {
  parallel::world().allreduce_sum(&value, 1);
  return value;
}

int max_over_ranks(int value) {
  if (parallel::world().size() == 1) return value;
  double v = value;
  parallel::world().allreduce_max(&v, 1);
  return static_cast<int>(v);
}

std::string root_text(const std::string& text) {
  auto& w = parallel::world();
  if (w.size() == 1) return text;
  std::uint64_t n = text.size();
  w.broadcast(&n, sizeof n, 0);
  std::string out = w.is_root() ? text : std::string(n, '\0');
  if (n > 0) w.broadcast(out.data(), n, 0);
  return out;
}

void throw_if_stop_requested_on_any_rank(const std::string& stage) {
  if (max_over_ranks(stop_requested() || take_stop_file() ? 1 : 0) > 0) {
    set_stop_requested(true);
    throw_if_stop_requested(stage);
  }
}

}  // namespace nnvmc
