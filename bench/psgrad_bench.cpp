/// Per-sample gradients and natural-gradient steps: costs measured in one run, interleaved.
/// usage: psgrad_bench [--config configs/runs/lih_ferminet_spring.yaml] [--walkers 512]
///                     [--repeats 5] [--threads 1] [--old 1] [--burn-in 50] [key=value ...]
/// On the same walkers (after --burn-in Metropolis steps) and parameters, each repeat times:
///   batch    one batch gradient ∇θ Σ_b w_b log|ψ_b| (forward + backward)
///   jac_new  the Jacobian from one recorded forward + backward (train/recorded_pass.hpp)
///   jac_old  the Jacobian by the previous method (vmapped backward, chunks of 16; --old 0 skips)
///   ng_new   the SPRING update from a given Jacobian with reused buffers (natural_gradient.cpp)
///   ng_old   the SPRING update as implemented before (a copy of commit a07899a's code below)
///   kfac     one KFAC step (its own recorded pass included)
///   gemm     Ō·Ōᵀ as one DGEMM, for the measured DGEMM rate
/// and prints medians, the Jacobian/batch-gradient ratio, the exactness of the new Jacobian
/// against the old one, system (kernel) seconds per stage (getrusage: page faults from fresh
/// large buffers show there), and the SPRING step against its FLOP count
/// (B²P for ŌŌᵀ, B³/3 for the Cholesky, 2BP for Ōᵀx) at the measured DGEMM rate.
/// malloc is tuned as in nnvmc itself (app/allocator_tuning.hpp); NNVMC_MALLOC=default keeps
/// glibc's defaults, under which every large buffer is a fresh mmap (page faults each repeat).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <torch/cuda.h>

#include "app/allocator_tuning.hpp"
#include "core/timer.hpp"
#include "train/natural_gradient.hpp"
#include "train/optimizer.hpp"
#include "train/per_sample_gradients.hpp"
#include "train/recorded_pass.hpp"
#include "train/setup.hpp"
#include "bench_args.hpp"

using namespace nnvmc;

namespace {

double wall() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}
double system_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_stime.tv_sec) + 1e-6 * static_cast<double>(u.ru_stime.tv_usec);
}
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// ---- The SPRING step as implemented in commit a07899a (before this change), for comparison ----
namespace old {
torch::Tensor spd_solve(const torch::Tensor& a, const torch::Tensor& b) {
  const auto n = a.size(0);
  const auto eye = torch::eye(n, a.options());
  const double base = std::max(a.diagonal().abs().mean().item<double>(), 1e-300);
  const auto rhs = b.unsqueeze(1);
  double jitter = 0;
  for (int attempt = 0; attempt < 8; ++attempt) {
    const auto [l, info] = torch::linalg_cholesky_ex(jitter > 0 ? a + jitter * eye : a);
    if (info.item<int64_t>() == 0) {
      const auto x = torch::cholesky_solve(rhs, l);
      if (torch::isfinite(x).all().item<bool>()) return x.squeeze(1);
    }
    jitter = jitter > 0 ? jitter * 100 : base * 1e-12;
  }
  return torch::Tensor();
}
/// The optimizer part of one SPRING step of the old NaturalGradientOptimizer. @return δ
torch::Tensor spring_step(const torch::Tensor& jac, const torch::Tensor& e, const torch::Tensor& previous,
                          double damping, double momentum) {
  if (!torch::isfinite(jac).all().item<bool>()) return torch::Tensor();
  const auto j = jac.to(torch::kFloat64);
  const double scale = 1.0 / std::sqrt(static_cast<double>(j.size(0)));
  const auto o = (j - j.mean(0, true)) * scale;
  const auto eps = (e - e.mean()) * scale;
  const auto b = o.size(0);
  const auto t = o.matmul(o.t()) + damping * torch::eye(b, o.options()) +
                 torch::full({b, b}, 1.0 / static_cast<double>(b), o.options());
  const auto prev = previous.to(o.options());
  const auto rhs = eps - momentum * o.mv(prev);
  const auto delta = momentum * prev + o.t().mv(spd_solve(t, rhs));
  if (!torch::isfinite(delta).all().item<bool>()) return torch::Tensor();
  (void)delta.square().sum().item<double>();  // Euclidean norm constraint
  return delta.detach().clone();
}
}  // namespace old

}  // namespace

namespace {
int run(int argc, char** argv) {
  const bool tuned = app::tune_allocator();  // as nnvmc does; NNVMC_MALLOC=default for glibc's
  std::string config_path = std::string(NNVMC_SOURCE_DIR) + "/configs/runs/lih_ferminet_spring.yaml";
  int walkers = 512, repeats = 5, threads = 1, burn_in = 50;
  bool with_old = true;
  std::vector<std::string> overrides;
  const std::vector<std::string> known = {"--config", "--walkers", "--repeats", "--threads", "--old", "--burn-in"};
  std::string usage = "usage: psgrad_bench";
  for (const auto& k : known) usage += " [" + k + " V]";
  usage += " [key=value ...]";
  for (const auto& [k, v] : bench::flag_pairs(argc, argv, 1, known, usage, &overrides)) {
    if (k == "--config") config_path = v;
    else if (k == "--walkers") walkers = std::stoi(v);
    else if (k == "--repeats") repeats = std::stoi(v);
    else if (k == "--threads") threads = std::stoi(v);
    else if (k == "--old") with_old = v != "0";
    else if (k == "--burn-in") burn_in = std::stoi(v);
  }
  overrides.push_back("sampler.walkers=" + std::to_string(walkers));
  overrides.push_back("run.threads=" + std::to_string(threads));
  overrides.push_back("pretrain.steps=0");
  Config config = load_config(config_path, overrides);
  VmcSetup s = make_setup(config);
  auto& wf = *s.wf;
  auto& mol = s.molecules[0];
  mol.sampler->initialize(s.logabs_fn());
  mol.sampler->run(s.logabs_fn(), burn_in);
  const auto r = mol.sampler->positions();
  const auto params = trainable_parameters(wf);
  const std::int64_t b = r.size(0), p = parameter_count(params);
  torch::manual_seed(1);
  const auto w = torch::randn({b}, r.options());
  const auto e = (torch::randn({b}, torch::kFloat64) * 0.3 - 8.0).to(r.device());

  std::map<std::string, std::vector<double>> t, sys;
  const auto timed = [&](const std::string& name, const std::function<void()>& f) {
    const double s0 = system_seconds(), t0 = wall();
    f();
    if (r.is_cuda()) torch::cuda::synchronize();
    t[name].push_back(wall() - t0);
    sys[name].push_back(system_seconds() - s0);
  };
  const auto f64 = torch::TensorOptions().dtype(torch::kFloat64).device(r.device());
  torch::Tensor jac_new, jac_old, prev_old = torch::zeros({p}, f64);
  OptimOptions ng = config.optim;
  ng.type = "spring";
  auto spring = make_optimizer(ng, wf);
  OptimOptions kf = config.optim;
  kf.type = "kfac";
  std::unique_ptr<Optimizer> kfac;
  try { kfac = make_optimizer(kf, wf); } catch (const std::exception&) {}
  // SPRING step from a given Jacobian: the optimizer's own path minus its Jacobian.
  SampleSpaceBuffers buffers;
  torch::Tensor prev_new = torch::zeros({p}, f64), gram;
  double exact = -1;
  for (int rep = 0; rep < repeats + 1; ++rep) {  // repeat 0 warms up and is not counted
    timed("batch", [&] {
      const auto g = torch::autograd::grad({(wf.forward(r, mol.tensors).logabs * w).sum()}, params, {}, false, false, true);
    });
    timed("jac_new", [&] { per_sample_log_gradients_into(wf, mol.tensors, r, b, jac_new); });
    if (with_old) timed("jac_old", [&] { jac_old = per_sample_log_gradients_vmap(wf, mol.tensors, r, params, 16); });
    if (with_old && exact < 0) exact = ((jac_new - jac_old).abs().max() / jac_old.abs().max()).item<double>();
    // The optimizer reads its Jacobian buffer and never writes it (SrProblem keeps Ō implicit).
    timed("ng_new", [&] {
      const auto problem = make_sr_problem(jac_new, e);
      const auto d = spring_direction(problem, ng.sr.damping, ng.spring.momentum, prev_new, {}, &buffers);
      (void)d.square().sum().item<double>();
      prev_new.copy_(d);
    });
    if (with_old) timed("ng_old", [&] { prev_old = old::spring_step(jac_new, e, prev_old, ng.sr.damping, ng.spring.momentum); });
    timed("gemm", [&] { gram = torch::mm(jac_new, jac_new.t()); });
    if (kfac) {
      timed("kfac", [&] {
        StageTimers timers;
        std::vector<torch::Tensor> saved;
        for (const auto& q : params) saved.push_back(q.detach().clone());
        kfac->step(wf, {WalkerBatch{&mol.tensors, r, e.to(r.options())}}, 0, timers);
        torch::NoGradGuard none;  // the same parameters for every stage and repeat
        for (size_t k = 0; k < params.size(); ++k) const_cast<torch::Tensor&>(params[k]).copy_(saved[k]);
      });
    }
    if (rep == 0)
      for (auto* m : {&t, &sys})
        for (auto& [k, v] : *m) v.clear();
  }
  const double gemm_rate = 2.0 * b * b * p / median(t["gemm"]);
  const double flops = static_cast<double>(b) * b * p + std::pow(static_cast<double>(b), 3) / 3 + 2.0 * b * p;
  std::printf("config %s, walkers %ld, parameters %ld, threads %d, repeats %d (medians), malloc %s\n",
              config_path.c_str(), static_cast<long>(b), static_cast<long>(p), threads, repeats,
              tuned ? "tuned as nnvmc" : "glibc defaults");
  std::printf("%-8s %10s %10s\n", "stage", "seconds", "sys_s");
  for (const char* k : {"batch", "jac_new", "jac_old", "ng_new", "ng_old", "kfac", "gemm"})
    if (!t[k].empty()) std::printf("%-8s %10.4f %10.4f\n", k, median(t[k]), median(sys[k]));
  std::printf("jacobian / batch gradient: new %.2f", median(t["jac_new"]) / median(t["batch"]));
  if (with_old) std::printf(", old %.2f; new vs old max rel. difference %.1e", median(t["jac_old"]) / median(t["batch"]), exact);
  std::printf("\nDGEMM rate %.1f GFLOP/s; SPRING step FLOPs %.2f G -> %.3f s at that rate; ng_new %.2fx of it",
              gemm_rate * 1e-9, flops * 1e-9, flops / gemm_rate, median(t["ng_new"]) / (flops / gemm_rate));
  if (with_old) std::printf(", ng_old %.2fx", median(t["ng_old"]) / (flops / gemm_rate));
  std::printf("\n");
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  return nnvmc::bench::guarded_main(argv[0], [&] { return run(argc, argv); });
}
