#include "train/pretrain.hpp"

#include <cmath>

#include "core/log.hpp"
#include "train/distributed.hpp"
#include "models/hf/hf_determinant.hpp"

namespace nnvmc {

PretrainResult pretrain(VmcSetup& s, const PretrainOptions& options, StageTimers& timers) {
  PretrainResult out;
  HartreeFockDeterminant hf(s.system, options.basis);
  hf.set_options(s.options);
  out.e_hf = hf.energy();
  log::info(strfmt("pretraining %d steps on UHF/%s orbitals (E_HF = %.6f)", options.steps,
                   options.basis.c_str(), hf.energy()));
  // Walkers follow an equal mixture of the two densities: log|ψ_mix| = ½ log(½|ψ_HF|² + ½|ψ|²).
  auto net = s.wf;
  const SystemTensors& sys = s.tensors;
  const LogAbsFn mixture = [&hf, net, &sys](const torch::Tensor& r) {
    const auto a = 2.0 * hf.forward(r, sys).logabs, b = 2.0 * net->forward(r, sys).logabs;
    return 0.5 * (torch::logaddexp(a, b) - std::log(2.0));
  };
  if (!s.sampler->positions().defined()) s.sampler->initialize(mixture);
  s.sampler->refresh(mixture);
  torch::optim::Adam adam(s.wf->parameters(), torch::optim::AdamOptions(options.lr));
  for (int t = 0; t < options.steps; ++t) {
    {
      auto scope = timers.scope("pretrain_sampling");
      s.sampler->adapt(s.sampler->run(mixture, s.config.sampler.steps_per_iteration));
    }
    auto scope = timers.scope("pretrain_fit");
    const auto r = s.sampler->positions();
    torch::Tensor target;
    {
      torch::NoGradGuard ng;
      target = hf.orbitals(r, sys);  // [B, 1, N, N], broadcast over the K determinants
    }
    adam.zero_grad();
    // With several ranks each holds its walkers' share of the mean; gradients and loss are summed.
    const double share = static_cast<double>(r.size(0)) / s.config.sampler.walkers;
    const auto loss = (s.wf->orbitals(r, sys) - target).square().mean() * share;
    loss.backward();
    if (parallel::world().size() > 1) {
      std::vector<torch::Tensor> grads;
      for (auto& p : s.wf->parameters())
        if (p.grad().defined()) grads.push_back(p.mutable_grad());
      sum_over_ranks_(grads);
    }
    adam.step();
    const double l = sum_over_ranks(loss.item<double>());
    if (t == 0) out.initial_loss = l;
    out.final_loss = l;
    out.steps = t + 1;
    if ((t + 1) % std::max(1, options.steps / 10) == 0)
      log::info(strfmt("pretrain %5d/%d  orbital loss %.3e", t + 1, options.steps, l));
    s.sampler->refresh(mixture);  // parameters changed
  }
  return out;
}

}  // namespace nnvmc
