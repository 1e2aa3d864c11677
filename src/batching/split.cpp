/// Split search: X-split (one even factor on all free axes), C-split (output axes only,
/// asymmetric blocks filling the budget, contracted non-Cholesky axes last with
/// accumulation), auto (cheapest modelled plan that fits).
#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "batching/budget.hpp"
#include "batching/plan_detail.hpp"

namespace nnvmc::batching::detail {

namespace {

bool fits(const Plan& p) { return p.budget_bytes <= 0 || p.peak_bytes <= p.budget_bytes; }

/// Applies `blocks`, chooses operand residency (host operands only), evaluates; true if it fits.
bool apply_blocks(Plan& plan, const Extents& blocks) {
  plan.blocks.clear();
  for (auto [l, b] : blocks)
    if (b < plan.extents.at(l)) plan.blocks[l] = std::max<std::int64_t>(b, 1);
  std::fill(plan.resident.begin(), plan.resident.end(), false);
  assign_layouts(plan);
  evaluate(plan);
  if (plan.operands_on_device) return fits(plan);
  // keep operands resident on the device when that is cheaper and still fits
  for (std::size_t i = 0; i < plan.resident.size(); ++i) {
    Plan trial = plan;
    trial.resident[i] = true;
    assign_layouts(trial);
    evaluate(trial);
    if (fits(trial) && trial.modelled_seconds < plan.modelled_seconds) plan = trial;
  }
  return fits(plan);
}

std::string describe(const Plan& p) {
  std::ostringstream os;
  os << to_string(p.strategy) << " blocks{";
  bool first = true;
  for (auto [l, b] : p.blocks) os << (first ? "" : ",") << l << ':' << b, first = false;
  os << "} batches " << p.batches << " peak " << format_bytes(double(p.peak_bytes)) << " model "
     << p.modelled_seconds << " s";
  return os.str();
}

/// Largest block of `label` in [1, extent−1] that fits (others as in `blocks`); 0 if none.
std::int64_t largest_fitting(Plan& plan, Extents blocks, char label) {
  std::int64_t lo = 1, hi = plan.extents.at(label) - 1, best = 0;
  while (lo <= hi) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    blocks[label] = mid;
    if (apply_blocks(plan, blocks)) best = mid, lo = mid + 1;
    else hi = mid - 1;
  }
  return best;
}

/// X-split: every output axis split into f even blocks, f growing; then contracted axes too.
bool x_split(Plan& plan) {
  Extents blocks;
  std::int64_t max_out = 1, max_sum = 1;
  for (auto [l, e] : plan.extents) {
    std::int64_t& m = has(plan.spec.output, l) ? max_out : max_sum;
    m = std::max(m, e);
  }
  auto even = [&](std::int64_t e, std::int64_t f) { return (e + std::min(f, e) - 1) / std::min(f, e); };
  for (std::int64_t f = 2; f <= max_out; ++f) {
    for (auto [l, e] : plan.extents)
      if (has(plan.spec.output, l)) blocks[l] = even(e, f);
    if (apply_blocks(plan, blocks)) return true;
  }
  for (std::int64_t g = 2; g <= max_sum; ++g) {
    for (auto [l, e] : plan.extents)
      if (!has(plan.spec.output, l)) blocks[l] = even(e, g);
    if (apply_blocks(plan, blocks)) return true;
  }
  return false;
}

/// C-split along one priority order of the output axes; contracted axes (but never the
/// protected ones) afterwards, largest first. The first axis that must shrink gets the
/// largest block that fits; in addition, halved blocks of it combined with the largest
/// fitting block of the next axis (squarer GEMMs) are offered to `consider`, also for every
/// axis that does not fit even at block 1 before the split moves on to the next one.
template <class Consider>
void c_split_order(const Plan& base, const std::string& priority, const std::string& protect,
                   Consider&& consider) {
  Plan plan = base;
  Extents blocks;
  std::string order = priority;
  std::vector<std::pair<std::int64_t, char>> summed;
  for (auto [l, e] : plan.extents)
    if (!has(plan.spec.output, l) && !has(protect, l) && e > 1) summed.emplace_back(e, l);
  std::sort(summed.rbegin(), summed.rend());
  for (auto [e, l] : summed) order += l;
  // offers axis order[p] halved (extent/2, /4, ... while above `floor`) with the next axis as
  // large as fits: squarer GEMMs (ones far thinner in one dimension run below the BLAS peak)
  auto offer_halves = [&](std::size_t p, std::int64_t floor, bool stop_at_first_miss) {
    if (p + 1 >= order.size()) return;
    const char l = order[p], next = order[p + 1];
    for (std::int64_t half = plan.extents.at(l) / 2; half > floor; half /= 2) {
      Extents two = blocks;
      two[l] = half;
      const std::int64_t b2 = largest_fitting(plan, two, next);
      if (b2 == 0) {
        if (stop_at_first_miss) break;
        continue;
      }
      two[next] = b2;
      if (apply_blocks(plan, two)) consider(plan);
    }
  };
  for (std::size_t p = 0; p < order.size(); ++p) {
    const char l = order[p];
    const std::int64_t b = largest_fitting(plan, blocks, l);
    if (b > 0) {
      Extents fill = blocks;
      fill[l] = b;
      if (apply_blocks(plan, fill)) consider(plan);
      offer_halves(p, b, true);
      return;
    }
    offer_halves(p, 1, false);  // `l` does not fit even at 1: besides l = 1 (below), squarer blocks
    blocks[l] = 1;
  }
}

}  // namespace

std::string c_split_protected(const Plan& plan, const std::string& protected_labels) {
  if (!protected_labels.empty()) return protected_labels;
  char longest = 0;  // the longest contracted axis (the Cholesky index)
  std::int64_t e_max = 1;
  for (auto [l, e] : plan.extents)
    if (!has(plan.spec.output, l) && e > e_max) e_max = e, longest = l;
  return longest ? std::string(1, longest) : std::string();
}

bool choose_split(Plan& plan, SplitStrategy strategy, const std::string& protected_labels) {
  Plan best;
  bool found = false;
  auto consider = [&](const Plan& p) {
    const std::string d = describe(p);
    if (std::find(plan.notes.begin(), plan.notes.end(), d) == plan.notes.end()) plan.notes.push_back(d);
    if (!found || p.modelled_seconds < best.modelled_seconds) best = p, found = true;
  };
  if (apply_blocks(plan, {})) {
    plan.strategy = strategy;
    return true;
  }
  if (strategy == SplitStrategy::none) return false;
  if (strategy == SplitStrategy::x || strategy == SplitStrategy::automatic) {
    Plan p = plan;
    p.strategy = SplitStrategy::x;
    if (x_split(p)) consider(p);
  }
  if (strategy == SplitStrategy::c || strategy == SplitStrategy::automatic) {
    const std::string protect = c_split_protected(plan, protected_labels);
    std::vector<std::pair<std::int64_t, char>> outs;
    for (char l : plan.spec.output)
      if (plan.extents.at(l) > 1) outs.emplace_back(plan.extents.at(l), l);
    std::sort(outs.rbegin(), outs.rend());
    std::string head, tail;  // permute the 5 longest axes; the rest follow by extent
    for (std::size_t i = 0; i < outs.size(); ++i) (i < 5 ? head : tail) += outs[i].second;
    std::sort(head.begin(), head.end());
    do {
      Plan p = plan;
      p.strategy = SplitStrategy::c;
      c_split_order(p, head + tail, protect, consider);
    } while (std::next_permutation(head.begin(), head.end()));
  }
  if (!found) return false;
  const auto notes = plan.notes;
  plan = best;
  plan.notes = notes;
  if (strategy == SplitStrategy::automatic) plan.notes.push_back("auto chose " + to_string(plan.strategy));
  return true;
}

}  // namespace nnvmc::batching::detail
