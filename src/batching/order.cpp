/// Pairwise contraction order: exhaustive search for few operands, greedy beyond; and the
/// label groups of each pairwise step.
#include <algorithm>
#include <limits>

#include "batching/plan_detail.hpp"
#include "core/errors.hpp"

namespace nnvmc::batching::detail {

std::int64_t volume(const std::string& labels, const Extents& ext) {
  std::int64_t v = 1;
  for (char l : labels) v *= ext.at(l);
  return v;
}

namespace {

/// Labels of a ∪ b (a's order, then b's new ones) that occur in `needed`.
std::string kept_labels(const std::string& a, const std::string& b, const std::string& needed) {
  std::string r;
  for (char l : a + b)
    if (has(needed, l) && !has(r, l)) r += l;
  return r;
}

/// Labels needed after contracting live[i] and live[j]: output + every other live tensor.
std::string needed_after(const std::vector<std::string>& live, const std::vector<bool>& alive,
                         std::size_t i, std::size_t j, const std::string& output) {
  std::string need = output;
  for (std::size_t t = 0; t < live.size(); ++t)
    if (alive[t] && t != i && t != j) need += live[t];
  return need;
}

double pair_flops(const std::string& a, const std::string& b, const std::string& result,
                  const Extents& ext) {
  // GEMM over batch·m·n·k = every label of a ∪ b except the ones summed out beforehand.
  std::string all;
  for (char l : a + b)
    if (!has(all, l) && (has(result, l) || (has(a, l) && has(b, l)))) all += l;
  return 2.0 * double(volume(all, ext));
}

struct Search {
  const Extents& ext;
  const std::string& output;
  double budget_elems;
  double best_flops = std::numeric_limits<double>::infinity();
  bool best_fits = false;
  std::vector<std::pair<int, int>> best, cur;

  void run(std::vector<std::string>& live, std::vector<bool>& alive, int n_alive, double flops,
           double max_inter) {
    if (n_alive == 1) {
      const bool fits = max_inter <= budget_elems;
      if ((fits && !best_fits) || (fits == best_fits && flops < best_flops)) {
        best_fits = fits;
        best_flops = flops;
        best = cur;
      }
      return;
    }
    if (flops >= best_flops && best_fits) return;
    for (std::size_t i = 0; i < live.size(); ++i)
      for (std::size_t j = i + 1; j < live.size(); ++j) {
        if (!alive[i] || !alive[j]) continue;
        const auto r = kept_labels(live[i], live[j], needed_after(live, alive, i, j, output));
        const double f = pair_flops(live[i], live[j], r, ext);
        const double size = n_alive == 2 ? 0.0 : double(volume(r, ext));
        alive[i] = alive[j] = false;
        live.push_back(r);
        alive.push_back(true);
        cur.emplace_back(int(i), int(j));
        run(live, alive, n_alive - 1, flops + f, std::max(max_inter, size));
        cur.pop_back();
        live.pop_back();
        alive.pop_back();
        alive[i] = alive[j] = true;
      }
  }
};

}  // namespace

std::vector<std::pair<int, int>> search_path(const EinsumSpec& spec, const Extents& ext,
                                             std::int64_t budget_bytes, std::int64_t elem_bytes) {
  std::vector<std::string> live = spec.inputs;
  std::vector<bool> alive(live.size(), true);
  const int n = int(live.size());
  if (n <= 1) return {};
  const double budget_elems = budget_bytes > 0 ? double(budget_bytes) / double(elem_bytes)
                                               : std::numeric_limits<double>::infinity();
  if (n <= 5) {
    Search s{ext, spec.output, budget_elems, std::numeric_limits<double>::infinity(), false, {}, {}};
    s.run(live, alive, n, 0.0, 0.0);
    return s.best;
  }
  std::vector<std::pair<int, int>> path;
  for (int left = n; left > 1; --left) {
    double best = std::numeric_limits<double>::infinity();
    std::pair<int, int> pick{-1, -1};
    std::string pick_r;
    for (std::size_t i = 0; i < live.size(); ++i)
      for (std::size_t j = i + 1; j < live.size(); ++j) {
        if (!alive[i] || !alive[j]) continue;
        const auto r = kept_labels(live[i], live[j], needed_after(live, alive, i, j, spec.output));
        const double f = pair_flops(live[i], live[j], r, ext) + double(volume(r, ext));
        if (f < best) best = f, pick = {int(i), int(j)}, pick_r = r;
      }
    alive[pick.first] = alive[pick.second] = false;
    live.push_back(pick_r);
    alive.push_back(true);
    path.push_back(pick);
  }
  return path;
}

std::vector<Step> build_steps(const EinsumSpec& spec, const Extents& ext,
                              const std::vector<std::pair<int, int>>& path) {
  std::vector<std::string> live = spec.inputs;
  std::vector<bool> alive(live.size(), true);
  const int n = int(live.size());
  if (int(path.size()) != n - 1)
    throw InputError("einsum '" + spec.text() + "': a path needs " + std::to_string(n - 1) + " steps");
  std::vector<Step> steps;
  for (std::size_t s = 0; s < path.size(); ++s) {
    auto [i, j] = path[s];
    if (i < 0 || j < 0 || i >= int(live.size()) || j >= int(live.size()) || i == j || !alive[i] ||
        !alive[j])
      throw InputError("einsum '" + spec.text() + "': invalid path step " + std::to_string(s));
    const bool final = s + 1 == path.size();
    const std::string need = needed_after(live, alive, i, j, spec.output);
    const std::string& la = live[i];
    const std::string& lb = live[j];
    Step st;
    st.final = final;
    st.a.id = i;
    st.b.id = j;
    st.a.labels = la;
    st.b.labels = lb;
    const std::string order_src = final ? spec.output : la + lb;
    for (char l : order_src) {
      if (!has(need, l)) continue;
      const bool in_a = has(la, l), in_b = has(lb, l);
      if (in_a && in_b && !has(st.batch, l)) st.batch += l;
      else if (in_a && !in_b && !has(st.m, l)) st.m += l;
      else if (!in_a && in_b && !has(st.n, l)) st.n += l;
    }
    // contracted labels in the memory order of the larger operand
    const std::string& korder = volume(la, ext) >= volume(lb, ext) ? la : lb;
    for (char l : korder)
      if (has(la, l) && has(lb, l) && !has(need, l)) st.k += l;
    for (char l : la)
      if (!has(lb, l) && !has(need, l)) st.a.summed += l;
    for (char l : lb)
      if (!has(la, l) && !has(need, l)) st.b.summed += l;
    if (final && st.batch + st.n + st.m == spec.output && st.batch + st.m + st.n != spec.output) {
      std::swap(st.a, st.b);
      std::swap(st.m, st.n);
    }
    st.result = st.batch + st.m + st.n;
    st.flops = 2.0 * double(volume(st.batch + st.m + st.n + st.k, ext));
    alive[i] = alive[j] = false;
    live.push_back(st.result);
    alive.push_back(true);
    steps.push_back(st);
  }
  return steps;
}

}  // namespace nnvmc::batching::detail
