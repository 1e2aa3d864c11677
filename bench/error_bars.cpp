/// Error-bar study (issue 18): R independent evaluations of one checkpoint (seeds 1..R, walkers
/// starting from the checkpoint's), each reported with its reblocking, batch-means and
/// autocorrelation-time and walker-chains error bars; how often each 1σ bar covers the pooled mean; the spread of
/// the z-scores; and the tails of the local-energy distribution over all samples.
/// usage: bench_error_bars CHECKPOINT [--repeats R] [--steps S] [--burn-in N] [--exact E] [--threads T]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "core/log.hpp"
#include "train/blocking.hpp"
#include "train/checkpoint.hpp"
#include "train/evaluate.hpp"
#include "train/setup.hpp"
#include "bench_args.hpp"

using namespace nnvmc;

namespace {
struct Repeat {
  BlockingResult blocking;
  double batch_means = 0, autocorr = 0, walker_chains = 0, acceptance = 0, max_dev = 0;
  int walkers = 0;
};

/// Hill estimator of the tail exponent from the k largest values of x (x > 0, sorted descending).
double hill(const std::vector<double>& desc, std::size_t k) {
  double s = 0;
  for (std::size_t i = 0; i < k; ++i) s += std::log(desc[i] / desc[k]);
  return static_cast<double>(k) / s;
}
}  // namespace

namespace {
int run(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h" || std::string(argv[1]).rfind("--", 0) == 0) {
    std::fprintf(stderr, "usage: %s CHECKPOINT [--repeats R] [--steps S] [--burn-in N] [--exact E] [--threads T]\n", argv[0]);
    return 2;
  }
  const std::string path = argv[1];
  int repeats = 20, steps = 500, burn_in = 100, threads = 1;
  double exact = std::nan("");
  const std::vector<std::string> known = {"--repeats", "--steps", "--burn-in", "--exact", "--threads"};
  std::string usage = "usage: bench_error_bars CHECKPOINT";
  for (const auto& k : known) usage += " [" + k + " V]";
  for (const auto& [k, v] : bench::flag_pairs(argc, argv, 2, known, usage)) {
    if (k == "--repeats") repeats = std::stoi(v);
    else if (k == "--steps") steps = std::stoi(v);
    else if (k == "--burn-in") burn_in = std::stoi(v);
    else if (k == "--exact") exact = std::stod(v);
    else if (k == "--threads") threads = std::stoi(v);
  }
  setup_logging("warn");
  const Checkpoint ckpt = load_checkpoint(path);
  std::vector<Repeat> reps;
  std::vector<double> samples;  // every local energy of every repeat
  std::printf("%4s %12s %10s %10s %10s %10s %7s %6s %6s %8s\n", "seed", "mean", "blocking", "batch", "autocorr",
              "walkers", "plateau", "tau", "acc", "max|dE|");
  for (int seed = 1; seed <= repeats; ++seed) {
    Config c = parse_config(ckpt.config_yaml,
                            {"run.seed=" + std::to_string(seed), "run.threads=" + std::to_string(threads),
                             strfmt("sampler.step_size=%.17g", ckpt.molecules[0].sampler.step_size)},
                            path);
    VmcSetup s = make_setup(c);
    load_module_state(*s.wf, ckpt.parameters);
    const auto logabs = s.logabs_fn();
    s.molecules[0].sampler->initialize_from(ckpt.molecules[0].sampler.r, logabs);
    const int block = c.sampler.steps_per_iteration;
    for (int done = 0; done < burn_in; done += block) s.molecules[0].sampler->adapt(s.molecules[0].sampler->run(logabs, block));
    std::vector<double> series;
    torch::Tensor walker_sum;  // each walker's local energies over the steps
    double acc = 0;
    const std::size_t first = samples.size();
    for (int t = 0; t < steps; ++t) {
      acc += s.molecules[0].sampler->run(logabs, block);
      const auto e = (*s.molecules[0].local_energy)(*s.wf, s.molecules[0].sampler->positions()).energy.to(torch::kFloat64).contiguous();
      const double* p = e.data_ptr<double>();
      samples.insert(samples.end(), p, p + e.numel());
      series.push_back(e.mean().item<double>());
      walker_sum = walker_sum.defined() ? walker_sum + e : e.clone();
    }
    Repeat r;
    r.blocking = blocking_analysis(series);
    r.batch_means = batch_means_error(series);
    r.autocorr = autocorrelation_estimate(series).error;
    const torch::Tensor chain_means = (walker_sum / double(steps)).contiguous();
    r.walker_chains = walker_chains_error(
        std::vector<double>(chain_means.data_ptr<double>(), chain_means.data_ptr<double>() + chain_means.numel()));
    r.acceptance = acc / steps;
    r.walkers = static_cast<int>(chain_means.numel());
    for (std::size_t i = first; i < samples.size(); ++i)
      r.max_dev = std::max(r.max_dev, std::abs(samples[i] - r.blocking.mean));
    std::printf("%4d %12.7f %10.2e %10.2e %10.2e %10.2e %7s %6.2f %6.3f %8.2f\n", seed, r.blocking.mean, r.blocking.error,
                r.batch_means, r.autocorr, r.walker_chains, r.blocking.plateau ? "yes" : "NO", r.blocking.autocorr_time, r.acceptance,
                r.max_dev);
    std::fflush(stdout);
    reps.push_back(r);
  }
  // Pooled mean and the spread of the repeats' means.
  const double n = reps.size();
  double pooled = 0;
  for (const auto& r : reps) pooled += r.blocking.mean / n;
  double spread = 0;
  for (const auto& r : reps) spread += std::pow(r.blocking.mean - pooled, 2) / (n - 1);
  spread = std::sqrt(spread);
  std::printf("\npooled mean %.7f ± %.2e (sd of the %d means / √%d); sd of the means %.2e\n", pooled,
              spread / std::sqrt(n), repeats, repeats, spread);
  if (std::isfinite(exact)) std::printf("exact %.7f: pooled − exact = %+.2e (%.1f σ_pooled)\n", exact, pooled - exact,
                                        (pooled - exact) / (spread / std::sqrt(n)));
  // Each estimator: mean stated error vs the observed spread; coverage of the pooled mean
  // (the pooled mean shares 1/R of each repeat: deviations have variance σ²(1 − 1/R)).
  const double shrink = std::sqrt(1 - 1 / n);
  auto report = [&](const char* name, auto error_of) {
    double mean_err = 0, z2 = 0;
    int covered = 0;
    for (const auto& r : reps) {
      const double e = error_of(r);
      mean_err += e / n;
      const double z = (r.blocking.mean - pooled) / (e * shrink);
      z2 += z * z / (n - 1);
      covered += std::abs(r.blocking.mean - pooled) <= e * shrink;
    }
    std::printf("%-13s mean stated error %.2e (observed spread %.2e, ratio %.2f); 1σ covers pooled mean in %d/%d "
                "(%.0f %%); sd of z %.2f\n",
                name, mean_err, spread, spread / mean_err, covered, repeats, 100.0 * covered / n, std::sqrt(z2));
  };
  // the one nnvmc states (evaluate.cpp: prefers_walker_chains)
  report("stated", [](const Repeat& r) {
    return prefers_walker_chains(r.blocking, r.walkers) && std::isfinite(r.walker_chains) ? r.walker_chains
                                                                                           : r.blocking.error;
  });
  report("reblocking", [](const Repeat& r) { return r.blocking.error; });
  report("batch means", [](const Repeat& r) { return r.batch_means; });
  report("autocorr", [](const Repeat& r) { return r.autocorr; });
  report("walker chains", [](const Repeat& r) { return r.walker_chains; });
  report("naive", [](const Repeat& r) { return r.blocking.naive_error; });
  // Tails of the local energy over all samples.
  std::vector<double> x = samples;
  std::sort(x.begin(), x.end());
  const double m = [&] {
    double s = 0;
    for (double v : x) s += v;
    return s / x.size();
  }();
  double m2 = 0, m3 = 0, m4 = 0;
  for (double v : x) {
    const double d = v - m;
    m2 += d * d / x.size();
    m3 += d * d * d / x.size();
    m4 += d * d * d * d / x.size();
  }
  auto q = [&](double p) { return x[static_cast<std::size_t>(p * (x.size() - 1))]; };
  std::printf("\nlocal energy over %zu samples: mean %.6f, sd %.4f, skewness %.2f, excess kurtosis %.1f\n", x.size(), m,
              std::sqrt(m2), m3 / std::pow(m2, 1.5), m4 / (m2 * m2) - 3);
  std::printf("quantiles: 0.01%% %.3f  0.1%% %.3f  1%% %.3f  50%% %.4f  99%% %.3f  99.9%% %.3f  99.99%% %.3f; min %.2f max %.2f\n",
              q(1e-4), q(1e-3), q(1e-2), q(0.5), q(0.99), q(0.999), q(0.9999), x.front(), x.back());
  std::vector<double> up, down;  // deviations from the median, each side, descending
  const double med = q(0.5);
  for (double v : x) (v > med ? up : down).push_back(std::abs(v - med));
  std::sort(up.rbegin(), up.rend());
  std::sort(down.rbegin(), down.rend());
  for (const double frac : {1e-3, 1e-2}) {
    const std::size_t ku = std::max<std::size_t>(10, frac * up.size()), kd = std::max<std::size_t>(10, frac * down.size());
    std::printf("Hill tail exponent from the top %.1f %% of each side: upper %.2f, lower %.2f (variance is finite "
                "for exponents > 2)\n", 100 * frac, hill(up, ku), hill(down, kd));
  }
  // How much the most extreme samples move the mean (share of the variance they carry).
  std::vector<double> dev(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) dev[i] = (x[i] - m) * (x[i] - m);
  std::sort(dev.rbegin(), dev.rend());
  double top = 0, all = 0;
  for (std::size_t i = 0; i < dev.size(); ++i) (i < dev.size() / 1000 ? top : all) += dev[i];
  std::printf("the 0.1 %% most extreme samples carry %.0f %% of the variance\n", 100 * top / (top + all));
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  return nnvmc::bench::guarded_main(argv[0], [&] { return run(argc, argv); });
}
