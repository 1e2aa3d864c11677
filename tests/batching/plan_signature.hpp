#pragma once
/// The decisions of a plan (split, blocks, per-step layouts and tiles, output mode, peak) as one
/// line, and the CCSD-shaped contractions the cost-model tests plan.
#include <sstream>
#include <string>
#include <vector>

#include "batching/plan.hpp"

namespace nnvmc::test {

inline std::string plan_signature(const batching::Plan& p) {
  std::ostringstream os;
  os << batching::to_string(p.strategy) << " batches " << p.batches << " blocks";
  for (auto [l, b] : p.blocks) os << ' ' << l << ':' << b;
  auto flags = [](const batching::StepInput& x) {
    return std::string(x.transpose_copy ? "c" : "-") + (x.trans ? "t" : "-") + (x.hoisted ? "h" : "-") +
           (x.strided ? "s" : "-");
  };
  for (const auto& st : p.steps)
    os << " | " << st.a.id << flags(st.a) << ' ' << st.b.id << flags(st.b) << " tile " << st.tile_side << ':' << st.tile;
  os << " | direct " << p.out_direct << " peak " << p.peak_bytes;
  return os.str();
}

/// One planned contraction: spec and operand shapes.
struct PlanCase {
  std::string spec;
  std::vector<std::vector<std::int64_t>> shapes;
};

/// CCSD terms at (H2O)4/cc-pVDZ-like sizes (o 20, v 76, 621 Cholesky vectors, n 96) and the
/// packed ladder GEMMs.
inline std::vector<PlanCase> ccsd_plan_cases() {
  const std::int64_t o = 20, v = 76, x = 621, n = 96, pv = v * (v + 1) / 2, po = o * (o + 1) / 2;
  return {
      {"xac,xbd,icjd->iajb", {{x, v, v}, {x, v, v}, {o, v, o, v}}},
      {"kbjc,kiac->iajb", {{o, v, o, v}, {o, o, v, v}}},
      {"laid,kdlc->kiac", {{o, v, o, v}, {o, v, o, v}}},
      {"kalb,kilj->iajb", {{o, v, o, v}, {o, o, o, o}}},
      {"Pp,xpq,Qq->xPQ", {{n, n}, {x, n, n}, {n, n}}},
      {"pc,qc->pq", {{po, pv}, {pv, pv}}},
      {"kcid,xkc,xad->ia", {{o, v, o, v}, {x, o, v}, {x, v, v}}},
      {"xpq,xrs->pqrs", {{x, v, o}, {x, o, v}}},
      {"acbd,icjd->iajb", {{v, v, v, v}, {o, v, o, v}}},
  };
}

}  // namespace nnvmc::test
