/// ATen operators and host syncs per training iteration, from libtorch's profiler.
/// usage: op_count_bench CONFIG [key=value ...]
/// Runs the config's training for one and for two iterations (no pretraining, no burn-in,
/// checkpoint only at the end) under the profiler and prints the difference: the operators
/// one iteration dispatches (on a GPU, each is at least one kernel launch), the sync-forcing
/// ones (train/op_counts.hpp), and the most frequent names.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "train/op_counts.hpp"
#include "train/per_sample_gradients.hpp"
#include "train/trainer.hpp"
#include "bench_args.hpp"

using namespace nnvmc;

namespace {
int run(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: op_count_bench CONFIG [key=value ...]\n");
    return 2;
  }
  std::vector<std::string> overrides(argv + 2, argv + argc);
  const auto out = (std::filesystem::temp_directory_path() / "nnvmc_op_count").string();
  const auto run = [&](int iterations) {
    auto o = overrides;
    for (const char* k : {"pretrain.steps=0", "sampler.burn_in=0", "run.checkpoint_every=0"}) o.push_back(k);
    o.push_back("optim.iterations=" + std::to_string(iterations));
    o.push_back("run.output=" + out);
    std::filesystem::remove_all(out);
    Trainer t(load_config(argv[1], o));
    return count_ops([&] { t.run(false); });
  };
  const auto one = run(1), two = run(2);
  std::vector<std::pair<long, std::string>> names;
  long syncs = 0;
  for (const auto& [k, v] : two.by_name) {
    const auto it = one.by_name.find(k);
    const long d = v - (it == one.by_name.end() ? 0 : it->second);
    if (d > 0) names.push_back({d, k});
    if (is_sync_op(k)) syncs += d;
  }
  std::sort(names.rbegin(), names.rend());
  std::printf("config %s", argv[1]);
  for (const auto& o : overrides) std::printf(" %s", o.c_str());
  std::printf("\naten ops per iteration %ld (top-level, not views: %ld), sync ops per iteration %ld\n", two.aten - one.aten,
              two.launches - one.launches, syncs);
  for (size_t i = 0; i < names.size() && i < 12; ++i) std::printf("  %8ld  %s\n", names[i].first, names[i].second.c_str());
  for (const auto& [d, k] : names)
    if (is_sync_op(k)) std::printf("  sync: %ld x %s\n", d, k.c_str());
  // What one replay of a captured CUDA graph (run.cuda_graphs) stands for: the operators of one
  // MH step and of one local-energy evaluation, each launched as one graph on a CUDA device.
  auto o = overrides;
  o.push_back("run.output=" + out);
  std::filesystem::remove_all(out);
  Trainer t(load_config(argv[1], o));
  auto& s = t.setup();
  auto& m = s.molecules[0];
  const auto logabs = s.logabs_fn(0);
  const auto key = s.graph_key(0);
  m.sampler->initialize(logabs);
  (void)(*m.local_energy)(*s.wf, m.sampler->positions());  // chunk calibration, first-call checks
  m.sampler->run(logabs, 1);
  const auto step = count_ops([&] { m.sampler->run(logabs, 1); });
  const auto energy = count_ops([&] { (void)(*m.local_energy)(*s.wf, m.sampler->positions()); });
  std::printf("per MH step: aten ops %ld (top-level %ld, sync ops %ld, the acceptance read); per local-energy evaluation: "
              "aten ops %ld (top-level %ld, sync ops %ld); with run.cuda_graphs each is one graph launch on CUDA (%s Laplacian%s)\n",
              step.aten, step.launches, step.syncs, energy.aten, energy.launches, energy.syncs, s.config.hamiltonian.laplacian.c_str(),
              m.local_energy->method().capturable() ? "" : ": not capturable, launched op by op");
  // The per-sample Jacobian (natural-gradient optimizers) of all walkers in one recorded pass,
  // and the same in passes of 16 walkers (optim.sr.chunk_walkers: 16): the op count grows with
  // the number of passes.
  for (const std::int64_t chunk : {m.sampler->positions().size(0), std::int64_t{16}}) {
    const auto jac = count_ops([&] { (void)per_sample_log_gradients(*s.wf, m.tensors, m.sampler->positions(), chunk); });
    std::printf("per-sample Jacobian of %ld walkers in passes of %ld: aten ops %ld (top-level %ld, sync ops %ld)\n",
                static_cast<long>(m.sampler->positions().size(0)), static_cast<long>(chunk), jac.aten, jac.launches, jac.syncs);
  }
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  return nnvmc::bench::guarded_main(argv[0], [&] { return run(argc, argv); });
}
