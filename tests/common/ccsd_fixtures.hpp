#pragma once
/// Fixtures shared by the CCSD tests: water's RHF in 6-31G, a plan with a fixed cost model, and
/// the relative error of a tensor.
#include <torch/torch.h>

#include <cstdint>

#include "batching/plan.hpp"
#include "core/system.hpp"
#include "scf/basis.hpp"
#include "scf/scf.hpp"

namespace nnvmc::test {

/// H2O (configs/molecules/h2o) in 6-31G and its RHF solution.
struct Water {
  System system = load_molecule("h2o", default_molecules_dir());
  scf::BasisSet basis = scf::make_basis("6-31g", system);
  scf::ScfResult rhf = scf::run_rhf(system, basis);
};

/// One Water per test executable (its RHF runs once).
inline const Water& water() {
  static const Water w;
  return w;
}

/// Plan options with budget `budget` bytes (0: none), split `split` and the fixed default cost
/// model (no measurement: the same plans on every machine).
inline batching::PlanOptions fixed_cost_plan(std::int64_t budget = 0,
                                             batching::SplitStrategy split = batching::SplitStrategy::automatic) {
  batching::PlanOptions p;
  p.budget_bytes = budget;
  p.split = split;
  p.cost = batching::CostModel{};
  return p;
}

/// max |x − ref| / max |ref|.
inline double max_rel_error(const torch::Tensor& x, const torch::Tensor& ref) {
  return (x - ref).abs().max().item<double>() / ref.abs().max().item<double>();
}

}  // namespace nnvmc::test
