#include "sampler/metropolis.hpp"

#include <algorithm>
#include <cmath>

#include "core/errors.hpp"
#include "core/log.hpp"
#include "parallel/tensor_comm.hpp"
#include "parallel/walker_random.hpp"

namespace nnvmc {

MetropolisSampler::MetropolisSampler(const SamplerOptions& options, const System& system,
                                     torch::TensorOptions tensor, std::uint64_t seed)
    : options_(options),
      system_(system),
      tensor_(tensor),
      seed_(seed),
      step_size_(options.step_size),
      comm_(&parallel::world()) {
  if (options.walkers < comm_->size())
    throw ConfigError(strfmt("'sampler.walkers': %d walkers cannot be shared by %d ranks (at least one each): run "
                             "with at most %d ranks, or with more walkers (a new run's sampler.walkers, nnvmc eval "
                             "--walkers; a resumed run keeps its checkpoint's)",
                             options.walkers, comm_->size(), options.walkers));
  part_ = parallel::partition(options.walkers, comm_->rank(), comm_->size());
  walker_ids_ = torch::arange(part_.offset, part_.offset + part_.count, tensor_.dtype(torch::kInt64));
}

namespace {
/// First ionization energies (eV, NIST) of H–Kr: which atom of a cation gives up an electron.
constexpr double kIonizationEv[] = {13.598, 24.587, 5.392, 9.323, 8.298, 11.260, 14.534, 13.618, 17.423, 21.565,
                                    5.139,  7.646,  5.986, 8.152, 10.487, 10.360, 12.968, 15.760, 4.341, 6.113,
                                    6.561,  6.828,  6.746, 6.767, 7.434, 7.902, 7.881, 7.640, 7.726, 9.394,
                                    5.999,  7.900,  9.789, 9.752, 11.814, 14.000};

/// How hard it is to take one more electron from an atom of charge Z that holds `electrons`
/// (eV, for ordering only): its first ionization energy (7 eV beyond Kr), times 1 + 2k once it
/// has given up k electrons, so that a cation's holes spread over its atoms.
double removal_cost(int Z, int electrons) {
  const int n = static_cast<int>(sizeof(kIonizationEv) / sizeof(kIonizationEv[0]));
  const double first = Z >= 1 && Z <= n ? kIonizationEv[Z - 1] : 7.0;
  return first * (1 + 2 * std::max(0, Z - electrons));
}

/// Z_eff²/n² of the outermost of `electrons` electrons (≥ 1) on a nucleus of charge Z, by
/// Slater's screening over shells of 2, 8, 8, 18, 18, 32: how tightly an added electron is
/// bound (which atom of an anion takes the extra electron: O over H in OH⁻).
double outermost_binding(int Z, int electrons) {
  constexpr int kCapacity[] = {2, 8, 8, 18, 18, 32};
  constexpr int kShells = static_cast<int>(sizeof(kCapacity) / sizeof(kCapacity[0]));
  int shell = 0, first = 0;
  while (shell + 1 < kShells && electrons - 1 >= first + kCapacity[shell]) first += kCapacity[shell++];
  double screening = (electrons - 1 - first) * (shell == 0 ? 0.30 : 0.35);
  for (int s = 0; s < shell; ++s) screening += (s + 1 == shell ? 0.85 : 1.0) * kCapacity[s];
  const double z_eff = std::max(0.0, Z - screening), n = shell + 1;
  return z_eff * z_eff / (n * n);
}
}  // namespace

std::vector<int> MetropolisSampler::initial_assignment(const System& system) {
  // Electrons per atom: neutral counts; a cation's missing electrons come off the atom that
  // gives one up most easily (removal_cost), an anion's extra ones go where the next electron is
  // bound most (LiH⁺: off Li, not off H, the last atom, as before: chains that started with H's
  // electron on Li took tens of thousands of steps to move it, 150 mEh above E_HF).
  const int m = static_cast<int>(system.atoms.size());
  std::vector<int> count(m);
  for (int i = 0; i < m; ++i) count[i] = system.atoms[i].Z;
  for (int c = system.charge; c != 0; c += c > 0 ? -1 : 1) {
    int best = -1;
    double best_binding = 0;
    for (int a = 0; a < m; ++a) {
      if (c > 0 && count[a] == 0) continue;
      const double b = c > 0 ? removal_cost(system.atoms[a].Z, count[a]) : outermost_binding(system.atoms[a].Z, count[a] + 1);
      if (best < 0 || (c > 0 ? b < best_binding : b > best_binding)) best = a, best_binding = b;  // (ties: the first)
    }
    if (best < 0) break;  // (no electrons left: validate() refuses such a charge)
    count[best] += c > 0 ? -1 : 1;
  }
  // Spins paired on each atom (an odd electron up), as far as the electrons of each spin left
  // allow: a 1s² core has one of each. (Alternating by the spin with more left gave Li of
  // [Li, H]⁺ two up electrons and H the down one, and its chains drifted for thousands of steps.)
  std::vector<int> up, down;
  int up_left = system.n_up(), down_left = system.n_down();
  for (int a = 0; a < m; ++a) {
    int u = std::min(up_left, (count[a] + 1) / 2);
    const int d = std::min(down_left, count[a] - u);
    u = std::min(up_left, count[a] - d);  // (too few down electrons left: the rest up)
    up.insert(up.end(), static_cast<std::size_t>(u), a);
    down.insert(down.end(), static_cast<std::size_t>(d), a);
    up_left -= u;
    down_left -= d;
  }
  up.insert(up.end(), down.begin(), down.end());
  return up;
}

std::vector<MetropolisSampler::Placement> MetropolisSampler::initial_placement(const System& system) {
  const auto atom = initial_assignment(system);
  const int n = static_cast<int>(atom.size()), n_up = system.n_up();
  std::vector<int> up(system.atoms.size()), down(system.atoms.size());  // electrons per atom and spin
  for (int i = 0; i < n; ++i) ++(i < n_up ? up : down)[atom[i]];
  std::vector<int> seen_up(up.size()), seen_down(down.size());
  std::vector<Placement> out;
  for (int i = 0; i < n; ++i) {
    const int a = atom[i];
    const bool is_up = i < n_up;
    const int k = is_up ? seen_up[a]++ : seen_down[a]++;
    out.push_back({a, shell_width(system.atoms[a].Z, is_up ? up[a] : down[a], is_up ? down[a] : up[a], k)});
  }
  return out;
}

double MetropolisSampler::shell_width(int Z, int same_spin, int other_spin, int k) {
  // Shells filled in order (1s; 2s2p; 3s3p; 3d4s4p; ...), with these places per spin.
  constexpr int kPlaces[] = {1, 4, 4, 9, 9, 16};
  constexpr int kShells = static_cast<int>(sizeof(kPlaces) / sizeof(kPlaces[0]));
  const auto occupancy = [&](int shell, int first) {  // electrons of both spins in a shell
    const auto of = [&](int count) { return std::clamp(count - first, 0, kPlaces[shell]); };
    return of(same_spin) + of(other_spin);
  };
  int shell = 0, first = 0;  // the k-th electron's shell and the shell's first place
  while (shell + 1 < kShells && k >= first + kPlaces[shell]) first += kPlaces[shell++];
  // Slater's screening: 0.35 per other electron of the shell (0.30 in 1s), 0.85 per
  // electron one shell down, 1 per electron deeper.
  double screening = (occupancy(shell, first) - 1) * (shell == 0 ? 0.30 : 0.35);
  for (int s = 0, f = 0; s < shell; f += kPlaces[s++]) screening += (s + 1 == shell ? 0.85 : 1.0) * occupancy(s, f);
  const double z_eff = std::max(0.5, Z - screening);
  const double n = shell + 1;
  // A hydrogen-like shell's mean radius 1.5 n²/Z_eff is the mean distance of a 3-d Gaussian
  // of per-coordinate width σ times 2 sqrt(2/π).
  const double mean_radius = 1.5 * n * n / z_eff;
  return std::clamp(mean_radius / (2.0 * std::sqrt(2.0 / M_PI)), 0.01, 4.0);
}

void MetropolisSampler::initialize(const LogAbsFn& logabs) {
  // Each electron starts near its atom, as far out as its shell (core electrons in the core,
  // so that chains do not spend hundreds of steps falling into heavy atoms).
  const auto place = initial_placement(system_);
  const int64_t n = static_cast<int64_t>(place.size());
  auto centres = torch::empty({n, 3}, torch::kFloat64);
  auto widths = torch::empty({n, 1}, torch::kFloat64);
  for (int64_t i = 0; i < n; ++i) {
    for (int k = 0; k < 3; ++k) centres[i][k] = system_.atoms[place[i].atom].position[k];
    widths[i][0] = place[i].width;
  }
  const auto noise = parallel::walker_normal(seed_, parallel::RandomPurpose::initial_positions, draw_++, walker_ids_, n * 3);
  r_ = (centres.to(noise.device()).unsqueeze(0) + widths.to(noise.device()).unsqueeze(0) * noise.view({-1, n, 3}))
           .to(tensor_);
  refresh(logabs);
}

void MetropolisSampler::initialize_from(const torch::Tensor& r, const LogAbsFn& logabs) {
  if (r.dim() != 3 || r.size(1) != system_.n_electrons())
    throw InputError("initial positions do not match the molecule's electron count");
  const int64_t b = options_.walkers, have = r.size(0);
  const int64_t reps = (b + have - 1) / have;
  r_ = mine(r.repeat({reps, 1, 1}).slice(0, 0, b)).to(tensor_).contiguous();
  refresh(logabs);
}

void MetropolisSampler::refresh(const LogAbsFn& logabs) {
  torch::NoGradGuard no_grad;
  logabs_ = logabs(r_);
}

namespace {
/// Metropolis acceptance of proposals with log|ψ'| `proposed`, uniforms u [b]: accept with
/// probability min(1, |ψ'|²/|ψ|²). A proposal with a non-finite log|ψ| (a node, where an
/// orbital matrix is singular, or NaN) is rejected; a walker whose own log|ψ| is not finite
/// takes any finite proposal (so no walker is stuck on a node). @return bool [b]
torch::Tensor accepted_moves(const torch::Tensor& u, const torch::Tensor& proposed, const torch::Tensor& current) {
  return torch::isfinite(proposed) & ((torch::log(u) < 2.0 * (proposed - current)) | ~torch::isfinite(current));
}
}  // namespace

double MetropolisSampler::run(const LogAbsFn& logabs, int n, const parallel::GraphKey& key) {
  torch::NoGradGuard no_grad;
  if (!r_.defined()) throw Error("sampler used before initialize()");
  if (graph_mode_ != parallel::GraphMode::eager && !key.empty()) return run_graphed(logabs, n, key);
  const int64_t b = r_.size(0), coords = r_.size(1) * 3;
  // Accepted moves are counted on the device and read once per call (no host sync per step).
  auto accepted = torch::zeros({}, r_.options().dtype(torch::kFloat64));
  for (int s = 0; s < n; ++s) {
    // Each walker's own stream, drawn in float64 on the walkers' device (so chains do not
    // depend on the dtype or device of the model, nor on the number of ranks).
    // (proposal normals and acceptance uniform in one pass over the counters)
    const auto numbers = parallel::walker_step_numbers(seed_, draw_, walker_ids_, coords);
    const auto noise = numbers.normals.view({b, -1, 3}).to(tensor_);
    const auto u = numbers.uniforms.to(tensor_);
    ++draw_;
    const auto proposal = r_ + step_size_ * noise;
    const auto new_logabs = logabs(proposal);
    const auto accept = accepted_moves(u, new_logabs, logabs_);
    r_ = torch::where(accept.view({-1, 1, 1}), proposal, r_);
    logabs_ = torch::where(accept, new_logabs, logabs_);
    accepted += accept.to(torch::kFloat64).sum();
  }
  if (n <= 0) return 0.0;
  double count = accepted.item<double>();  // an integer: the sum over ranks is exact
  comm_->allreduce_sum(&count, 1);
  return count / (static_cast<double>(options_.walkers) * n);
}

void MetropolisSampler::set_graph_mode(parallel::GraphMode mode) {
  graph_mode_ = mode;
  graph_.reset();
}

void MetropolisSampler::graph_step(const LogAbsFn& logabs) {
  const int64_t b = g_r_.size(0), coords = g_r_.size(1) * 3;
  // The counter is read from g_draw_ when the step runs (the same numbers as the host counter).
  const auto numbers = parallel::walker_step_numbers(seed_, g_draw_, walker_ids_, coords);
  const auto noise = numbers.normals.view({b, -1, 3}).to(tensor_);
  const auto u = numbers.uniforms.to(tensor_);
  const auto proposal = g_r_ + g_step_ * noise;
  const auto new_logabs = logabs(proposal);
  const auto accept = accepted_moves(u, new_logabs, g_logabs_);
  g_r_.copy_(torch::where(accept.view({-1, 1, 1}), proposal, g_r_));
  g_logabs_.copy_(torch::where(accept, new_logabs, g_logabs_));
  g_accepted_.add_(accept.to(torch::kFloat64).sum());
  g_draw_.add_(1);
}

double MetropolisSampler::run_graphed(const LogAbsFn& logabs, int n, const parallel::GraphKey& key) {
  if (!graph_) graph_ = std::make_unique<parallel::DeviceGraph>(graph_mode_, r_.device(), "the MH step");
  if (!g_r_.defined() || !g_r_.sizes().equals(r_.sizes()) || g_r_.options().dtype() != r_.options().dtype() ||
      g_r_.device() != r_.device()) {
    g_r_ = r_.clone();
    g_logabs_ = logabs_.clone();
    g_draw_ = torch::zeros({}, walker_ids_.options());
    g_step_ = torch::zeros({}, tensor_);
    g_accepted_ = torch::zeros({}, r_.options().dtype(torch::kFloat64));
  }
  // State set since (initialize, set_state, refresh) arrives by copy: the buffers stay put.
  if (!r_.is_same(g_r_)) g_r_.copy_(r_);
  if (!logabs_.is_same(g_logabs_)) g_logabs_.copy_(logabs_);
  r_ = g_r_;
  logabs_ = g_logabs_;
  g_draw_.fill_(static_cast<std::int64_t>(draw_));  // fills from host scalars: no sync
  g_step_.fill_(step_size_);
  g_accepted_.zero_();
  parallel::GraphKey full = key;
  for (const auto& t : {g_r_, g_logabs_, g_draw_, g_step_, g_accepted_, walker_ids_}) full.push_back(t.data_ptr());
  full.push_back(reinterpret_cast<const void*>(static_cast<std::uintptr_t>(seed_)));  // the streams' key, baked in
  const std::function<void()> body = [this, logabs] { graph_step(logabs); };  // no reference to this call's stack
  for (int s = 0; s < n; ++s) graph_->run(full, body);
  draw_ += static_cast<std::uint64_t>(std::max(n, 0));
  if (n <= 0) return 0.0;
  double count = g_accepted_.item<double>();
  comm_->allreduce_sum(&count, 1);
  return count / (static_cast<double>(options_.walkers) * n);
}

void MetropolisSampler::adapt(double acceptance) {
  // Multiplicative update toward the target, bounded per call (deterministic).
  const double factor = std::exp(std::clamp(acceptance - options_.target_acceptance, -0.3, 0.3));
  step_size_ = std::clamp(step_size_ * factor, 1e-4, 5.0);
}

SamplerState MetropolisSampler::state() const {
  // After a graphed run r_ and logabs_ are the graph's buffers, which the next run overwrites.
  const auto own = [](const torch::Tensor& t, const torch::Tensor& buffer) {
    return buffer.defined() && t.is_same(buffer) ? t.clone() : t;
  };
  return {own(r_, g_r_), own(logabs_, g_logabs_), step_size_, parallel::counter_state(seed_, draw_)};
}

SamplerState MetropolisSampler::global_state() const {
  const auto s = state();
  return {parallel::allgather_rows(*comm_, s.r), parallel::allgather_rows(*comm_, s.logabs), step_size_, s.rng_state};
}

torch::Tensor MetropolisSampler::mine(const torch::Tensor& all) const {
  return comm_->size() == 1 ? all : all.slice(0, part_.offset, part_.offset + part_.count);
}

void MetropolisSampler::set_state(const SamplerState& state) {
  const bool global = state.r.dim() == 3 && state.r.size(0) == options_.walkers;
  const bool local = state.r.dim() == 3 && state.r.size(0) == part_.count;
  if (!(global || local) || state.r.size(1) != system_.n_electrons())
    throw CheckpointError("sampler state has positions of shape " +
                          std::to_string(state.r.dim() == 3 ? state.r.size(0) : -1) +
                          " walkers; the config asks for " + std::to_string(options_.walkers));
  r_ = (global ? mine(state.r) : state.r).to(tensor_);
  logabs_ = (global ? mine(state.logabs) : state.logabs).to(tensor_);
  step_size_ = state.step_size;
  if (state.rng_state.defined() && !parallel::read_counter_state(state.rng_state, seed_, draw_)) {
    // A checkpoint of an older nnvmc holds a CPU generator's state: continue with the walker
    // streams from a counter derived from it (deterministic, far from the counters a new run
    // uses; not the numbers the old version would have drawn).
    std::uint64_t h = 1469598103934665603ULL;  // FNV-1a over the old state's bytes
    const auto bytes = state.rng_state.contiguous().cpu();
    for (std::int64_t i = 0; i < bytes.numel(); ++i) h = (h ^ bytes.data_ptr<std::uint8_t>()[i]) * 1099511628211ULL;
    draw_ = (std::uint64_t(1) << 40) | (h & 0xffffffffffULL);
    log::warn("the checkpoint holds the random state of an older nnvmc: the chain continues with new random "
              "numbers (a resumed run is not bit-identical to one the older version would have continued)");
  }
}

}  // namespace nnvmc
