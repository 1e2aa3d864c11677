/// @file device_collectives_bench.cpp
/// NCCL device collectives (parallel/device_collectives.hpp) on CUDA: correctness of
/// all-reduce, broadcast and uneven all-gather against their definitions, and all-reduce time
/// and bus bandwidth (2(K−1)/K · bytes / time) per message size, median of repeats. One rank
/// per GPU: run alone (one rank, NCCL's local path) or under `mpirun -np K` with K GPUs.
/// usage: bench_device_collectives [--max-mib 256] [--repeats 20]
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "batching/backend.hpp"
#include "parallel/communicator.hpp"
#include "parallel/device_collectives.hpp"

using namespace nnvmc;

int main(int argc, char** argv) {
  parallel::init_world(&argc, &argv);
  auto& comm = parallel::world();
  double max_mib = 256;
  int repeats = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--max-mib") max_mib = std::stod(v);
    else if (k == "--repeats") repeats = std::stoi(v);
  }
  try {
    batching::ensure_device_runtime("cuda");
    if (!torch::cuda::is_available()) throw std::runtime_error("no CUDA device");
    const int device = comm.local_rank() % static_cast<int>(torch::cuda::device_count());
    const auto opts = torch::TensorOptions().device(torch::kCUDA, device).dtype(torch::kFloat64);
    auto& dc = parallel::device_collectives(comm, device);
    const int k = comm.size(), r = comm.rank();
    // Correctness: Σ_ranks (rank + 1)·(1..n), a broadcast of root's values, uneven gather.
    bool ok = true;
    {
      auto x = torch::arange(1, 1001, opts) * (r + 1);
      dc.allreduce_sum(x.data_ptr(), x.numel(), parallel::DeviceDtype::float64);
      ok &= torch::allclose(x, torch::arange(1, 1001, opts) * (k * (k + 1) / 2.0), 0, 0);
      auto xf = torch::full({77}, 0.5f * (r + 1), opts.dtype(torch::kFloat32));
      dc.allreduce_sum(xf.data_ptr(), xf.numel(), parallel::DeviceDtype::float32);
      ok &= torch::allclose(xf, torch::full({77}, 0.25f * k * (k + 1), xf.options()), 0, 0);
      auto b = torch::full({33}, static_cast<double>(r + 7), opts);
      dc.broadcast(b.data_ptr(), b.nbytes(), 0);
      ok &= torch::allclose(b, torch::full({33}, 7.0, opts), 0, 0);
      std::vector<std::int64_t> bytes;
      std::int64_t total = 0;
      for (int q = 0; q < k; ++q) bytes.push_back(8 * (q + 2)), total += q + 2;
      auto mine = torch::full({r + 2}, static_cast<double>(r), opts);
      auto all = torch::empty({total}, opts);
      dc.allgatherv(mine.data_ptr(), all.data_ptr(), bytes);
      std::vector<torch::Tensor> want;
      for (int q = 0; q < k; ++q) want.push_back(torch::full({q + 2}, static_cast<double>(q), opts));
      ok &= torch::equal(all, torch::cat(want));
    }
    if (comm.is_root())
      std::printf("# %s, %d rank(s): all-reduce/broadcast/all-gatherv results %s\n", dc.describe().c_str(), k,
                  ok ? "correct" : "WRONG");
    if (comm.is_root()) std::printf("%12s %12s %12s\n", "bytes", "median_us", "busbw_GB/s");
    for (double bytes = 1024; bytes <= max_mib * 1048576.0; bytes *= 4) {
      auto x = torch::ones({static_cast<std::int64_t>(bytes / 8)}, opts);
      std::vector<double> t;
      for (int i = 0; i < repeats + 2; ++i) {
        const auto a = std::chrono::steady_clock::now();
        dc.allreduce_sum(x.data_ptr(), x.numel(), parallel::DeviceDtype::float64);  // synchronises
        if (i >= 2) t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count());
      }
      std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
      const double s = t[t.size() / 2];
      if (comm.is_root())
        std::printf("%12.0f %12.1f %12.2f\n", bytes, 1e6 * s, k > 1 ? 2.0 * (k - 1) / k * bytes / s / 1e9 : bytes / s / 1e9);
    }
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    return parallel::fail(e.what(), 1);
  }
}
