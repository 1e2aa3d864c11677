#include "train/pretrain.hpp"

#include <array>
#include <cmath>
#include <numeric>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "core/errors.hpp"
#include "core/log.hpp"
#include "train/distributed.hpp"
#include "train/stop_request.hpp"
#include "train/superposition.hpp"
#include "models/hf/hf_determinant.hpp"

namespace nnvmc {

namespace {
/// The orbital-fit loss of walkers [lo, hi) as its part of the mean over all walkers; runs its
/// backward (weight · part) and returns the part.
double chunk_loss(VmcSetup& s, const VmcMolecule& m, const torch::Tensor& r, const torch::Tensor& target,
                  std::int64_t lo, std::int64_t hi, double share, double weight) {
  const auto diff = s.wf->orbitals(r.slice(0, lo, hi), m.tensors) - target.slice(0, lo, hi);
  const double per_walker = static_cast<double>(diff.numel()) / static_cast<double>(hi - lo);  // K·N·N
  const auto part = diff.square().sum() * (share / (per_walker * static_cast<double>(r.size(0))));
  (weight * part).backward();
  return part.item<double>();
}

/// Walkers per pass of the HF determinant (its orbitals and log|ψ_HF|, without a graph) within
/// run.memory_budget, measured on walkers spread over a few bohr: its basis functions at every
/// electron are B·N·n_basis·primitives numbers, which no network pass measures.
std::int64_t fit_hf_walkers(VmcSetup& s, const VmcMolecule& m, HartreeFockDeterminant& hf) {
  const std::int64_t walkers = std::max<std::int64_t>(s.config.sampler.walkers, 1);
  if (s.budget.is_unlimited()) return walkers;
  auto o = walker_fit_options(s, "walker of '" + m.name() + "' (the HF determinant of pretraining)");
  const auto fit = batching::fit_chunk(
      [&](std::int64_t k) {
        torch::NoGradGuard ng;
        const std::int64_t n = m.system.n_electrons();  // (spread positions; no random draw)
        const auto x = torch::linspace(-2.0, 2.0, 3 * n * k, s.options).view({k, n, 3});
        (void)hf.orbitals(x, m.tensors);
        (void)hf.forward(x, m.tensors);
      },
      walkers, s.budget, o);
  return std::max<std::int64_t>(fit.chunk, 1);
}

/// The HF orbitals at the walkers r [B, N, 3] → [B, 1, N, N] in chunks of `chunk` walkers.
torch::Tensor hf_orbitals(HartreeFockDeterminant& hf, const VmcMolecule& m, const torch::Tensor& r, std::int64_t chunk) {
  return in_row_chunks(r, chunk, [&](const torch::Tensor& x) { return hf.orbitals(x, m.tensors); });
}

/// Walkers per orbital-fit pass within run.memory_budget (measured on one and eight walkers;
/// the probes' gradients are discarded).
std::int64_t fit_walkers(VmcSetup& s, const VmcMolecule& m, const torch::Tensor& r, const torch::Tensor& target,
                         double share) {
  if (s.budget.is_unlimited()) return r.size(0);
  auto o = walker_fit_options(s, "walker of '" + m.name() + "' (HF pretraining)");
  o.cuda_device = static_cast<int>(r.get_device());  // −1 on the CPU
  const auto fit = batching::fit_chunk(
      [&](std::int64_t k) { (void)chunk_loss(s, m, r, target, 0, k, share, 1.0); }, r.size(0), s.budget, o);
  for (auto& p : s.wf->parameters())
    if (p.grad().defined()) p.mutable_grad().zero_();
  log::debug(strfmt("pretraining: orbital fit of '%s': %s per walker + %s fixed (measured)", m.name().c_str(),
                    batching::format_bytes(double(fit.bytes_per_item)).c_str(),
                    batching::format_bytes(double(fit.fixed_bytes)).c_str()));
  if (fit.chunk < r.size(0))
    log::info(strfmt("pretraining: orbital fit of '%s' in chunks of %lld walkers", m.name().c_str(),
                     static_cast<long long>(fit.chunk)));
  return fit.chunk;
}
/// The mean position of a molecule's nuclei (bohr).
std::array<double, 3> centre_of(const System& m) {
  std::array<double, 3> c{0, 0, 0};
  for (const auto& at : m.atoms)
    for (int x = 0; x < 3; ++x) c[static_cast<std::size_t>(x)] += at.position[x] / double(m.atoms.size());
  return c;
}

/// The atoms of `b` matched to those of `a` (result[k]: b's atom for a's atom k): same element,
/// nearest with both centres placed together; empty when their nuclei differ (counts or elements).
std::vector<std::size_t> match_atoms(const System& a, const System& b) {
  if (a.atoms.size() != b.atoms.size()) return {};
  const auto ca = centre_of(a), cb = centre_of(b);
  std::vector<std::size_t> out;
  std::vector<bool> used(b.atoms.size(), false);
  for (const auto& at : a.atoms) {
    std::size_t best = b.atoms.size();
    double best_d2 = std::numeric_limits<double>::infinity();
    for (std::size_t j = 0; j < b.atoms.size(); ++j) {
      if (used[j] || b.atoms[j].Z != at.Z) continue;
      double d2 = 0;
      for (int x = 0; x < 3; ++x) {
        const auto u = static_cast<std::size_t>(x);
        d2 += std::pow((at.position[x] - ca[u]) - (b.atoms[j].position[x] - cb[u]), 2);
      }
      if (d2 < best_d2) best = j, best_d2 = d2;
    }
    if (best == b.atoms.size()) return {};
    used[best] = true;
    out.push_back(best);
  }
  return out;
}

/// How far `b` is from `a` (atoms matched by match_atoms): the root mean square move of its
/// nuclei with both centres placed together, and of its interatomic distances (bohr).
std::pair<double, double> geometry_change(const System& a, const System& b, const std::vector<std::size_t>& match) {
  const auto n = a.atoms.size();
  const auto pos = [](const System& m, std::size_t k, int x) { return m.atoms[k].position[x]; };
  const auto ca = centre_of(a), cb = centre_of(b);  // (b's centre: of all its atoms, every one matched)
  double moved = 0, internal = 0;
  std::size_t pairs = 0;
  for (std::size_t k = 0; k < n; ++k) {
    for (int x = 0; x < 3; ++x)
      moved += std::pow((pos(a, k, x) - ca[static_cast<std::size_t>(x)]) - (pos(b, match[k], x) - cb[static_cast<std::size_t>(x)]), 2);
    for (std::size_t l = 0; l < k; ++l, ++pairs) {
      double da = 0, db = 0;
      for (int x = 0; x < 3; ++x) {
        da += std::pow(pos(a, k, x) - pos(a, l, x), 2);
        db += std::pow(pos(b, match[k], x) - pos(b, match[l], x), 2);
      }
      internal += std::pow(std::sqrt(da) - std::sqrt(db), 2);
    }
  }
  return {std::sqrt(moved / double(n)), pairs ? std::sqrt(internal / double(pairs)) : 0.0};
}

/// The positions of a molecule's nuclei (bohr), in its atoms' order.
std::vector<Eigen::Vector3d> nuclei_of(const System& m) {
  std::vector<Eigen::Vector3d> out;
  for (const auto& at : m.atoms) out.emplace_back(at.position[0], at.position[1], at.position[2]);
  return out;
}

/// 0, 1, ..., n − 1: the atoms of two molecules taken in their listed order.
std::vector<std::size_t> in_order(std::size_t n) {
  std::vector<std::size_t> out(n);
  std::iota(out.begin(), out.end(), std::size_t(0));
  return out;
}

/// Whether molecules a and b have the same elements in the same order and the same electrons.
bool same_nuclei_and_electrons(const System& a, const System& b) {
  if (a.atoms.size() != b.atoms.size() || a.n_up() != b.n_up() || a.n_down() != b.n_down()) return false;
  for (std::size_t k = 0; k < a.atoms.size(); ++k)
    if (a.atoms[k].Z != b.atoms[k].Z) return false;
  return true;
}

/// The earlier molecule (index < i) with the same nuclei in the same order and electrons whose
/// geometry is nearest to molecule i's, with both centres placed together; i when none.
/// Pretraining fits one network to the orbitals of every molecule: those of each geometry are
/// rotated to the nearest earlier one's (HartreeFockDeterminant::align_orbitals_to), so that the
/// targets of a list of geometries vary as smoothly as the network can.
/// (Orbformer's orbitals follow the atoms' order, so the same molecule listed in another order
/// has its orbitals in another order: it is not aligned, and is named by reordered_copy.)
std::size_t nearest_geometry(const VmcSetup& s, std::size_t i) {
  const System& a = s.molecules[i].system;
  std::size_t best = i;
  double best_move = std::numeric_limits<double>::infinity();
  for (std::size_t j = 0; j < i; ++j) {
    const System& b = s.molecules[j].system;
    if (!same_nuclei_and_electrons(a, b)) continue;
    if (const double move = geometry_change(a, b, in_order(a.atoms.size())).first; move < best_move)
      best = j, best_move = move;
  }
  return best;
}

/// An earlier molecule that is molecule i with its atoms listed in another order: same elements
/// and electrons, and its nuclei, matched by element, within 1 bohr (root mean square, centres
/// placed together) of molecule i's (an isomer is another molecule); i when none.
std::size_t reordered_copy(const VmcSetup& s, std::size_t i) {
  const System& a = s.molecules[i].system;
  for (std::size_t j = 0; j < i; ++j) {
    const System& b = s.molecules[j].system;
    if (b.n_up() != a.n_up() || b.n_down() != a.n_down() || same_nuclei_and_electrons(a, b)) continue;
    if (const auto match = match_atoms(a, b); !match.empty() && geometry_change(a, b, match).first < 1.0) return j;
  }
  return i;
}
}  // namespace

PretrainResult pretrain(VmcSetup& s, const PretrainOptions& options, StageTimers& timers) {
  PretrainResult out;
  const std::size_t n = s.molecules.size();
  std::vector<std::unique_ptr<HartreeFockDeterminant>> hf;
  std::vector<LogAbsFn> mixture;
  std::vector<std::int64_t> hf_chunk(n, 0);  // walkers per pass of each HF determinant
  out.molecules.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    auto& m = s.molecules[i];
    hf.push_back(std::make_unique<HartreeFockDeterminant>(m.system, options.basis));
    if (const auto ref = nearest_geometry(s, i); ref < i) {
      const System& other = s.molecules[ref].system;
      // A molecule turned as a whole (its nuclei move, with the centres placed together, much
      // more than its interatomic distances change): its orbitals turn with it, and an overlap
      // taken in one frame mixed them (a 90-degree turn of LiH pretrained 1.5 Eh above E_HF: a
      // user audit), so the reference's orbitals are turned with it first (the rotation that
      // best lays its nuclei on this molecule's). A scan in one frame is not turned (a stretch
      // of one OH of water would read as a turn of 6-11 degrees: a review).
      const auto [moved, internal] = geometry_change(other, m.system, in_order(other.atoms.size()));
      const bool turned = moved > 2 * internal + 0.5;
      const Eigen::Matrix3d rotation =
          turned ? best_rotation(nuclei_of(other), nuclei_of(m.system)) : Eigen::Matrix3d::Identity();
      const double match = hf.back()->align_orbitals_to(*hf[ref], rotation);
      const double angle = rotation_angle_degrees(rotation);
      const std::string turn = turned ? strfmt(" turned by %.1f degrees", angle) : std::string();
      const std::string aligned =
          strfmt("pretraining: orbitals of '%s' aligned to those of '%s'%s (smallest singular value of their overlap %.3f)",
                 m.name().c_str(), s.molecules[ref].name().c_str(), turn.c_str(), match);
      if (turned)
        log::info(aligned);
      else
        log::debug(aligned);
    } else if (const auto twin = reordered_copy(s, i); twin < i) {
      // (their targets are then in different orders: both fits suffered, and only "hardly reduced
      // the orbital loss" was said: a user audit)
      log::warn(strfmt("pretraining: '%s' has the elements of '%s' with its atoms listed in another order: list them "
                       "in the same order (the orbitals of one network follow the atoms' order, and the two "
                       "Hartree-Fock targets cannot be aligned)",
                       m.name().c_str(), s.molecules[twin].name().c_str()));
    }
    hf.back()->set_options(s.options);
    out.molecules[i].e_hf = hf.back()->energy();
    log::info(strfmt("pretraining %d steps on UHF/%s orbitals of %s (E_HF = %.6f)", options.steps,
                     options.basis.c_str(), m.name().c_str(), hf.back()->energy()));
    // Walkers follow an equal mixture of the two densities: log|ψ_mix| = ½ log(½|ψ_HF|² + ½|ψ|²).
    // The network's part in chunks that fit run.memory_budget (the sampler's log|ψ| passes);
    // the determinant's in chunks measured for it (fit_hf_walkers).
    auto* target = hf.back().get();
    const SystemTensors* sys = &m.tensors;
    hf_chunk[i] = fit_hf_walkers(s, m, *target);
    mixture.push_back([target, net = s.logabs_fn(i), chunk = hf_chunk[i], sys](const torch::Tensor& r) {
      const auto b = 2.0 * net(r);  // measures the network's chunk on its first call
      const auto a = 2.0 * in_row_chunks(r, chunk, [&](const torch::Tensor& x) { return target->forward(x, *sys).logabs; });
      return 0.5 * (torch::logaddexp(a, b) - std::log(2.0));
    });
    if (!m.sampler->positions().defined()) m.sampler->initialize(mixture[i]);
    m.sampler->refresh(mixture[i]);
  }
  torch::optim::Adam adam(s.wf->parameters(), torch::optim::AdamOptions(options.lr));
  // Walkers per orbital-fit pass, measured before the first step (its probes' gradients are dropped).
  std::vector<std::int64_t> fit_chunk(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    const auto& m = s.molecules[i];
    const auto r = m.sampler->positions();
    torch::Tensor target;
    {
      torch::NoGradGuard ng;
      target = hf_orbitals(*hf[i], m, r, hf_chunk[i]);
    }
    fit_chunk[i] = fit_walkers(s, m, r, target, static_cast<double>(r.size(0)) / s.config.sampler.walkers);
  }
  const double per_molecule = 1.0 / static_cast<double>(n);
  for (int t = 0; t < options.steps; ++t) {
    throw_if_stop_requested_on_any_rank("HF pretraining (before its first checkpoint: nothing of this start to resume)");
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
        target = hf_orbitals(*hf[i], m, r, hf_chunk[i]);  // [B, 1, N, N], broadcast over the K determinants
      }
      // With several ranks each holds its walkers' share of the mean; gradients and losses are
      // summed over ranks below.
      const double share = static_cast<double>(r.size(0)) / s.config.sampler.walkers;
      const double weight = n == 1 ? 1.0 : per_molecule;
      double local = 0;
      if (fit_chunk[i] >= r.size(0)) {
        const auto loss = (s.wf->orbitals(r, m.tensors) - target).square().mean() * share;
        (weight * loss).backward();  // gradients accumulate over molecules
        local = loss.item<double>();
      } else {  // the same mean as sums over chunks, each chunk's backward accumulating
        for (std::int64_t lo = 0; lo < r.size(0); lo += fit_chunk[i])
          local += chunk_loss(s, m, r, target, lo, std::min(r.size(0), lo + fit_chunk[i]), share, weight);
      }
      const double l = sum_over_ranks(local);
      if (t == 0) out.molecules[i].initial_loss = l;
      out.molecules[i].final_loss = l;
      total += l;
    }
    {
      auto scope = timers.scope("pretrain_optimizer");  // (pretrain_fit: one scope per molecule and step)
      if (parallel::world().size() > 1) {
        std::vector<torch::Tensor> grads;
        for (auto& p : s.wf->parameters())
          if (p.grad().defined()) grads.push_back(p.mutable_grad());
        sum_over_ranks_(grads);
      }
      adam.step();
    }
    // A diverged fit stops here, naming its learning rate: it went on in NaN, and training then
    // failed ten times before refusing to checkpoint the NaN parameters (a user audit)
    if (!std::isfinite(total))
      throw NumericalError(strfmt("HF pretraining diverged: the orbital loss of step %d is not finite; lower "
                                  "pretrain.lr (now %g)",
                                  t + 1, options.lr));
    if (t == 0) out.initial_loss = total * per_molecule;
    out.final_loss = total * per_molecule;
    out.steps = t + 1;
    if ((t + 1) % std::max(1, options.steps / 10) == 0)
      log::info(strfmt("pretrain %5d/%d  orbital loss %.3e", t + 1, options.steps, out.final_loss));
    for (std::size_t i = 0; i < n; ++i) s.molecules[i].sampler->refresh(mixture[i]);  // parameters changed
  }
  // (the last step's update is not in any loss above)
  for (const auto& p : s.wf->parameters())
    if (!torch::isfinite(p).all().item<bool>())
      throw NumericalError(strfmt("HF pretraining diverged: its last step left non-finite parameters; lower "
                                  "pretrain.lr (now %g)",
                                  options.lr));
  // A fit that hardly moves (one step's sampled loss; a working fit falls by orders of magnitude)
  for (std::size_t i = 0; i < n && out.steps >= kPretrainStallSteps; ++i)
    if (out.molecules[i].final_loss > 0.5 * out.molecules[i].initial_loss)
      log::warn(strfmt("pretraining hardly reduced the orbital loss of %s (%.3e -> %.3e in %d steps): its start is "
                       "far from Hartree-Fock; try more pretrain.steps or another pretrain.lr",
                       s.molecules[i].name().c_str(), out.molecules[i].initial_loss, out.molecules[i].final_loss,
                       out.steps));
  return out;
}

}  // namespace nnvmc
