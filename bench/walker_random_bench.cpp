/// @file walker_random_bench.cpp
/// Cost of the counter-based walker streams (parallel/walker_random.hpp) against the CPU
/// generator the sampler used before, per Metropolis step (B·3N normals + B uniforms), and
/// against one MH step of a FermiNet (its log|ψ| evaluation), median of repeats, one thread.
/// With --device cuda: also the device path (integer tensor ops), its time per MH step and
/// whether its uniforms equal the CPU loop's bit for bit.
/// usage: bench_walker_random [--walkers 512] [--molecule lih] [--repeats 200] [--device cuda]
#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/system.hpp"
#include "models/ferminet/ferminet.hpp"
#include "models/system_tensors.hpp"
#include "parallel/walker_random.hpp"
#include "bench_args.hpp"

using namespace nnvmc;

namespace {
template <class F> double median_seconds(int repeats, F&& f) {
  std::vector<double> t;
  for (int i = 0; i < repeats; ++i) {
    const auto a = std::chrono::steady_clock::now();
    f(i);
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count());
  }
  std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
  return t[t.size() / 2];
}
}  // namespace

namespace {
int run(int argc, char** argv) {
  std::int64_t walkers = 512;
  int repeats = 200;
  std::string molecule = "lih", device = "cpu";
  const std::vector<std::string> known = {"--walkers", "--repeats", "--molecule", "--device"};
  std::string usage = "usage: walker_random_bench";
  for (const auto& k : known) usage += " [" + k + " V]";
  for (const auto& [k, v] : bench::flag_pairs(argc, argv, 1, known, usage)) {
    if (k == "--walkers") walkers = std::stoll(v);
    else if (k == "--repeats") repeats = std::stoi(v);
    else if (k == "--molecule") molecule = v;
    else if (k == "--device") device = v;
  }
  torch::set_num_threads(1);
  const System s = load_molecule(molecule, std::string(NNVMC_SOURCE_DIR) + "/configs/molecules");
  const std::int64_t coords = 3 * s.n_electrons();
  const auto cpu64 = torch::TensorOptions().dtype(torch::kFloat64);
  auto gen = at::make_generator<at::CPUGeneratorImpl>(1);
  const double old_rng = median_seconds(repeats, [&](int) {
    auto z = at::normal(0.0, 1.0, {walkers, coords}, gen, cpu64);
    auto u = at::empty({walkers}, cpu64).uniform_(0.0, 1.0, gen);
  });
  const auto ids = torch::arange(walkers, torch::kInt64);
  const double new_rng = median_seconds(repeats, [&](int i) {
    auto z = parallel::walker_normal(1, parallel::RandomPurpose::proposal, i, ids, coords);
    auto u = parallel::walker_uniform(1, parallel::RandomPurpose::acceptance, i, ids, 1);
  });
  const double uniform_only = median_seconds(repeats, [&](int i) {
    auto u = parallel::walker_uniform(1, parallel::RandomPurpose::proposal, i, ids, coords);
  });
  FermiNetOptions o;
  FermiNet net(o.sized_for(s.n_electrons()), s);
  const auto sys = system_tensors(s, cpu64);
  const auto r = torch::randn({walkers, s.n_electrons(), 3}, cpu64);
  torch::NoGradGuard ng;
  const double forward = median_seconds(std::max(5, repeats / 10), [&](int) { net.forward(r, sys); });
  std::printf("%s, %lld walkers x %lld coordinates, one thread, medians of %d:\n", molecule.c_str(),
              static_cast<long long>(walkers), static_cast<long long>(coords), repeats);
  std::printf("  CPU generator (mt19937), normals + uniforms : %8.1f us\n", old_rng * 1e6);
  std::printf("  Philox walker streams, normals + uniforms   : %8.1f us  (%.2fx the generator)\n", new_rng * 1e6,
              new_rng / old_rng);
  std::printf("    of which the %lld uniforms behind the normals: %8.1f us\n", static_cast<long long>(walkers * coords),
              uniform_only * 1e6);
  std::printf("  FermiNet log|psi| of the proposal (default size): %8.1f us  (streams = %.1f %% of an MH step)\n",
              forward * 1e6, 100 * new_rng / (forward + new_rng));
  if (device != "cpu") {
    const auto dev_ids = ids.to(torch::Device(device));
    auto sync = [&] {
      if (dev_ids.is_cuda()) torch::cuda::synchronize();
    };
    const double dev = median_seconds(repeats, [&](int i) {
      auto z = parallel::walker_normal(1, parallel::RandomPurpose::proposal, i, dev_ids, coords);
      auto u = parallel::walker_uniform(1, parallel::RandomPurpose::acceptance, i, dev_ids, 1);
      sync();
    });
    const bool same = torch::equal(parallel::walker_uniform(3, parallel::RandomPurpose::proposal, 17, ids, coords),
                                   parallel::walker_uniform(3, parallel::RandomPurpose::proposal, 17, dev_ids, coords).cpu());
    const double dz = (parallel::walker_normal(3, parallel::RandomPurpose::proposal, 17, ids, coords) -
                       parallel::walker_normal(3, parallel::RandomPurpose::proposal, 17, dev_ids, coords).cpu())
                          .abs()
                          .max()
                          .item<double>();
    std::printf("  %s walker streams, normals + uniforms  : %8.1f us; uniforms equal the CPU's bit for bit: %s; "
                "normals max |diff| %.1e\n",
                device.c_str(), dev * 1e6, same ? "yes" : "NO", dz);
  }
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  return nnvmc::bench::guarded_main(argv[0], [&] { return run(argc, argv); });
}
