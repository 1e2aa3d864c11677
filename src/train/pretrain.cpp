#include "train/pretrain.hpp"

#include <cmath>
#include <memory>

#include "core/log.hpp"
#include "train/distributed.hpp"
#include "models/hf/hf_determinant.hpp"

namespace nnvmc {

PretrainResult pretrain(VmcSetup& s, const PretrainOptions& options, StageTimers& timers) {
  PretrainResult out;
  const std::size_t n = s.molecules.size();
  std::vector<std::unique_ptr<HartreeFockDeterminant>> hf;
  std::vector<LogAbsFn> mixture;
  out.molecules.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    auto& m = s.molecules[i];
    hf.push_back(std::make_unique<HartreeFockDeterminant>(m.system, options.basis));
    hf.back()->set_options(s.options);
    out.molecules[i].e_hf = hf.back()->energy();
    log::info(strfmt("pretraining %d steps on UHF/%s orbitals of %s (E_HF = %.6f)", options.steps,
                     options.basis.c_str(), m.name().c_str(), hf.back()->energy()));
    // Walkers follow an equal mixture of the two densities: log|ψ_mix| = ½ log(½|ψ_HF|² + ½|ψ|²).
    auto* target = hf.back().get();
    auto net = s.wf;
    const SystemTensors* sys = &m.tensors;
    mixture.push_back([target, net, sys](const torch::Tensor& r) {
      const auto a = 2.0 * target->forward(r, *sys).logabs, b = 2.0 * net->forward(r, *sys).logabs;
      return 0.5 * (torch::logaddexp(a, b) - std::log(2.0));
    });
    if (!m.sampler->positions().defined()) m.sampler->initialize(mixture[i]);
    m.sampler->refresh(mixture[i]);
  }
  torch::optim::Adam adam(s.wf->parameters(), torch::optim::AdamOptions(options.lr));
  const double per_molecule = 1.0 / static_cast<double>(n);
  for (int t = 0; t < options.steps; ++t) {
    adam.zero_grad();
    double total = 0;
    for (std::size_t i = 0; i < n; ++i) {
      auto& m = s.molecules[i];
      {
        auto scope = timers.scope("pretrain_sampling");
        m.sampler->adapt(m.sampler->run(mixture[i], s.config.sampler.steps_per_iteration));
      }
      auto scope = timers.scope("pretrain_fit");
      const auto r = m.sampler->positions();
      torch::Tensor target;
      {
        torch::NoGradGuard ng;
        target = hf[i]->orbitals(r, m.tensors);  // [B, 1, N, N], broadcast over the K determinants
      }
      // With several ranks each holds its walkers' share of the mean; gradients and losses are
      // summed over ranks below.
      const double share = static_cast<double>(r.size(0)) / s.config.sampler.walkers;
      const auto loss = (s.wf->orbitals(r, m.tensors) - target).square().mean() * share;
      (n == 1 ? loss : per_molecule * loss).backward();  // gradients accumulate over molecules
      const double l = sum_over_ranks(loss.item<double>());
      if (t == 0) out.molecules[i].initial_loss = l;
      out.molecules[i].final_loss = l;
      total += l;
    }
    {
      auto scope = timers.scope("pretrain_fit");
      if (parallel::world().size() > 1) {
        std::vector<torch::Tensor> grads;
        for (auto& p : s.wf->parameters())
          if (p.grad().defined()) grads.push_back(p.mutable_grad());
        sum_over_ranks_(grads);
      }
      adam.step();
    }
    if (t == 0) out.initial_loss = total * per_molecule;
    out.final_loss = total * per_molecule;
    out.steps = t + 1;
    if ((t + 1) % std::max(1, options.steps / 10) == 0)
      log::info(strfmt("pretrain %5d/%d  orbital loss %.3e", t + 1, options.steps, out.final_loss));
    for (std::size_t i = 0; i < n; ++i) s.molecules[i].sampler->refresh(mixture[i]);  // parameters changed
  }
  return out;
}

}  // namespace nnvmc
