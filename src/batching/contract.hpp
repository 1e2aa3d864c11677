#pragma once
/// @file contract.hpp
/// einsum-style front end of the batching layer:
///   contract("xac,xbd,icjd->iajb", {L, L, t}, out, options)
/// plans the pairwise order and the split that fits options.budget_bytes, runs the batches
/// as GEMMs into the preallocated `out` and reports what it did.
#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

#include "batching/plan.hpp"

namespace nnvmc::batching {

/// Plans `spec` for these operands and output (float64 or float32, same dtype).
/// @throws InputError on a bad spec/shapes/dtypes, BudgetError when nothing fits.
Plan plan_contraction(const std::string& spec, const std::vector<at::Tensor>& operands,
                      const at::Tensor& out, const PlanOptions& options = {});

/// Runs `plan`: out[...] = Σ Π operands (overwritten). `out` has the output labels' shape.
/// @throws InputError on mismatching tensors, BudgetError if accounting exceeds the budget.
ExecReport execute(const Plan& plan, const std::vector<at::Tensor>& operands, const at::Tensor& out,
                   const PlanOptions& options = {});

class GemmBackend;

/// As execute(), with the GEMMs run by `backend` instead of one made from options.backend
/// (e.g. the staged backend on a simulated device in tests). options.device still says where
/// the operands and the output live.
ExecReport execute(const Plan& plan, const std::vector<at::Tensor>& operands, const at::Tensor& out,
                   const PlanOptions& options, GemmBackend& backend);

/// plan_contraction + execute.
ExecReport contract(const std::string& spec, const std::vector<at::Tensor>& operands,
                    const at::Tensor& out, const PlanOptions& options = {});

/// As contract(), allocating the output on the operands' device.
at::Tensor contract(const std::string& spec, const std::vector<at::Tensor>& operands,
                    const PlanOptions& options = {}, ExecReport* report = nullptr);

}  // namespace nnvmc::batching
