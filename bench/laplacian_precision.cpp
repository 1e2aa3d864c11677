/// float32 accuracy of each Laplacian method against float64, on the same walkers and the same
/// network parameters (the float64 model cast to float32), and what the inaccurate walkers have
/// in common (size of |∇log|ψ||², conditioning of the orbital matrices).
/// usage: bench_laplacian_precision [--molecule ch4] [--walkers 256] [--methods jvp,reverse,forward]
///                                  [--threads 1] [--worst 8] [--chunk 4] [--hessian W]
/// Prints per method: mean and variance of the kinetic energy −½(∇²log|ψ| + |∇log|ψ||²) in
/// float64 and float32, the median and maximum relative error of ∇²log|ψ| per walker, the number
/// of walkers whose kinetic energy is off by more than 1 %, and for the worst walkers the
/// float64/float32 values with log10 of the condition number of their dominant orbital matrix.
#include <algorithm>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "bench_args.hpp"
#include "core/log.hpp"
#include "hamiltonian/laplacian.hpp"
#include "train/setup.hpp"

using namespace nnvmc;

namespace {
using bench::split_list;
torch::Tensor kinetic(const KineticTerms& k) { return -0.5 * (k.laplacian + k.grad_sq); }
/// The method on walkers in chunks of `chunk` (jvp needs ~1.3 GiB per C4H4 walker).
KineticTerms compute_chunked(LaplacianMethod& m, WaveFunction& wf, const System& system, const torch::Tensor& r,
                             int64_t chunk) {
  const auto sys = system_tensors(system, r.options());
  std::vector<torch::Tensor> lap, g2;
  for (int64_t lo = 0; lo < r.size(0); lo += chunk) {
    const auto k = m.compute(wf, sys, r.slice(0, lo, std::min(lo + chunk, r.size(0))));
    lap.push_back(k.laplacian);
    g2.push_back(k.grad_sq);
  }
  return {torch::cat(lap), torch::cat(g2)};
}
}  // namespace

namespace {
int run(int argc, char** argv) {
  std::string molecule = "ch4", methods = "jvp,reverse,forward";
  int walkers = 256, threads = 1, worst = 8, hessian = -1, chunk = 4;
  const std::vector<std::string> known = {"--molecule", "--methods", "--walkers", "--threads", "--worst", "--hessian",
                                          "--chunk"};
  std::string usage = "usage: bench_laplacian_precision";
  for (const auto& k : known) usage += " [" + k + " V]";
  for (const auto& [k, v] : bench::flag_pairs(argc, argv, 1, known, usage)) {
    if (k == "--molecule") molecule = v;
    else if (k == "--methods") methods = v;
    else if (k == "--walkers") walkers = std::stoi(v);
    else if (k == "--threads") threads = std::stoi(v);
    else if (k == "--worst") worst = std::stoi(v);
    else if (k == "--hessian") hessian = std::stoi(v);
    else if (k == "--chunk") chunk = std::stoi(v);
  }
  Config c = parse_config("", {}, "bench");
  c.system.molecule = InlineYaml{molecule};
  c.sampler.walkers = walkers;
  c.run.dtype = "float64";
  c.run.threads = threads;
  // The published FermiNet and the walkers of the measurements in bench/results (settings that
  // were the config defaults then).
  c.model.ferminet.hidden_dims = std::vector<std::array<int, 2>>(4, {256, 32});
  c.model.ferminet.determinants = 16;
  c.sampler.step_size = 0.02;
  VmcSetup s = make_setup(c);
  s.molecules[0].sampler->initialize(s.logabs_fn());
  s.molecules[0].sampler->run(s.logabs_fn(), 20);
  const auto r64 = s.molecules[0].sampler->positions();

  // Conditioning of each walker's dominant determinant (largest log|det|), float64.
  torch::Tensor log10_cond, cancel, log10_det;
  {
    torch::NoGradGuard ng;
    const auto phi = s.wf->orbitals(r64, s.molecules[0].tensors);                          // [B, K, N, N] (spin blocks: per-spin K)
    const auto [sign, logabs] = torch::linalg_slogdet(phi);       // [B, K]
    const auto k = logabs.argmax(1);                               // [B]
    // How much the signed sum over determinants cancels: max_k log|det_k| − log|ψ| (≥ 0 up to
    // the weights; large = the determinants nearly cancel).
    cancel = (std::get<0>(logabs.max(1)) - s.wf->forward(r64, s.molecules[0].tensors).logabs) / std::log(10.0);
    const auto dom = phi.index({torch::arange(phi.size(0)), k});   // [B, N, N]
    log10_cond = torch::log10(torch::linalg_cond(dom));
    log10_det = std::get<0>(logabs.max(1)) / std::log(10.0);
  }
  // Closest electron–nucleus and electron–electron distances per walker.
  const auto nuc = s.molecules[0].tensors.nuclei;          // [M, 3]
  const auto d_en = std::get<0>((r64.unsqueeze(2) - nuc).norm(2, -1).flatten(1).min(1));  // [B]
  const auto n = r64.size(1);
  const auto d_ee = std::get<0>(((r64.unsqueeze(2) - r64.unsqueeze(1)).norm(2, -1) +
                                 1e9 * torch::eye(n, r64.options())).flatten(1).min(1));  // [B]
  std::vector<std::pair<std::string, KineticTerms>> ref;
  for (const auto& m : split_list(methods)) {
    c.hamiltonian.laplacian = m;
    ref.emplace_back(m, compute_chunked(*make_laplacian(c.hamiltonian, 1), *s.wf, s.molecules[0].system, r64, chunk));
  }
  // Hessian diagonal of log|ψ| of one walker, reverse over reverse (float64 here, float32 below).
  const auto hess_diag = [&](const torch::Tensor& r) {
    auto [x, g] = gradient_with_graph(*s.wf, system_tensors(s.molecules[0].system, r.options()), r.slice(0, hessian, hessian + 1));
    std::vector<double> h;
    for (int64_t k = 0; k < x.size(1); ++k)
      h.push_back(torch::autograd::grad({g.select(1, k).sum()}, {x}, {}, true)[0][0][k].item<double>());
    return h;
  };
  std::vector<double> h64;
  if (hessian >= 0) h64 = hess_diag(r64);
  s.wf->to(torch::kFloat);
  if (hessian >= 0) {
    const auto h32 = hess_diag(r64.to(torch::kFloat));
    std::printf("walker %d: coordinate, d2 log|psi| float64, float32, difference\n", hessian);
    for (std::size_t k = 0; k < h64.size(); ++k)
      std::printf("  x%-3zu %14.6f %14.6f %12.4g\n", k, h64[k], h32[k], h32[k] - h64[k]);
  }
  const auto r32 = r64.to(torch::kFloat);
  std::printf("%-8s %3s %8s %14s %14s %12s %12s %12s %12s %12s %6s\n", "method", "N", "walkers", "mean_T64",
              "mean_T32", "var_T64", "var_T32", "med_rel_lap", "max_rel_lap", "max_rel_g2", ">1%");
  std::vector<std::pair<std::string, torch::Tensor>> t32s;
  for (auto& [m, k64] : ref) {
    c.hamiltonian.laplacian = m;
    const auto k32 = compute_chunked(*make_laplacian(c.hamiltonian, 1), *s.wf, s.molecules[0].system, r32, chunk);
    const auto t64 = kinetic(k64), t32 = kinetic(k32).to(torch::kDouble);
    const auto rel = ((k32.laplacian.to(torch::kDouble) - k64.laplacian) / k64.laplacian.abs()).abs();
    const auto rel_g2 = ((k32.grad_sq.to(torch::kDouble) - k64.grad_sq) / k64.grad_sq.abs()).abs();
    const auto bad = ((t32 - t64).abs() > 0.01 * t64.abs()).sum().item<std::int64_t>();
    std::printf("%-8s %3d %8d %14.6f %14.6f %12.5g %12.5g %12.3g %12.3g %12.3g %6lld\n", m.c_str(),
                s.molecules[0].system.n_electrons(), walkers, t64.mean().item<double>(), t32.mean().item<double>(),
                t64.var().item<double>(), t32.var().item<double>(), rel.median().item<double>(),
                rel.max().item<double>(), rel_g2.max().item<double>(), static_cast<long long>(bad));
    std::fflush(stdout);
    t32s.emplace_back(m, t32);
  }
  // Worst walkers of the first method, with every method's float32 kinetic energy beside it.
  const auto& k64 = ref.front().second;
  const auto t64 = kinetic(k64);
  const auto err = (t32s.front().second - t64).abs();
  const auto order = err.argsort(0, /*descending=*/true);
  std::printf("\nworst walkers of %s: T64, |grad|^2 (f64), log10 |det| and cond of the dominant det, log10 cancellation over dets, closest e-n and e-e "
              "distance (bohr), T32 per method\n",
              ref.front().first.c_str());
  for (int i = 0; i < std::min<int>(worst, walkers); ++i) {
    const auto w = order[i].item<std::int64_t>();
    std::printf("walker %4lld  T64 %12.4f  grad2 %10.4g  log10det %7.2f  log10cond %5.2f  cancel %5.2f  d_en %8.2e  d_ee %8.2e",
                static_cast<long long>(w), t64[w].item<double>(), k64.grad_sq[w].item<double>(),
                log10_det[w].item<double>(), log10_cond[w].item<double>(), cancel[w].item<double>(), d_en[w].item<double>(), d_ee[w].item<double>());
    for (const auto& [m, t32] : t32s) std::printf("  %s %12.4f", m.c_str(), t32[w].item<double>());
    std::printf("\n");
  }
  std::printf("median over walkers: log10 cond %.2f, log10 |det| %.2f\n", log10_cond.median().item<double>(),
              log10_det.median().item<double>());
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  return nnvmc::bench::guarded_main(argv[0], [&] { return run(argc, argv); });
}
