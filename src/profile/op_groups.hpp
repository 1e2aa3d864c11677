#pragma once
/// @file op_groups.hpp
/// Operator groups of `nnvmc profile` (GEMM/matmul, elementwise, reductions, data movement,
/// linear algebra, other) and the FLOP / byte estimates of one operator call from the input
/// shapes the profiler records. Torch-free.
#include <cstdint>
#include <string>
#include <vector>

namespace nnvmc::profile {

/// What an operator mostly does.
enum class OpGroup { gemm, elementwise, reduction, data_movement, linalg, other };

/// The groups in report order.
const std::vector<OpGroup>& all_groups();
/// "gemm", "elementwise", "reduction", "data_movement", "linalg", "other".
const char* group_name(OpGroup g);

/// Group of an operator by its profiler name ("aten::mm", "aten::add_", ...). Autograd nodes
/// ("MulBackward0", "autograd::engine::evaluate_function: MmBackward0") take their forward
/// operator's group: their own time is the backward pass of that operator.
OpGroup classify_op(const std::string& name);

/// True for operators that only make a view or wrap other operators (they move no data
/// themselves: view, permute, reshape, expand, to, contiguous, ...).
bool is_view_or_wrapper(const std::string& name);

/// One input of an operator call: a tensor (one shape) or a list of tensors (several shapes).
struct OpInput {
  std::vector<std::vector<std::int64_t>> shapes;  ///< one entry for a tensor, several for a list
  int element_bytes = 0;                          ///< bytes per element (0: not a tensor)
};

/// Estimated work of one operator call.
struct OpCost {
  double flops = 0;  ///< floating-point operations
  double bytes = 0;  ///< bytes read and written
};

/// Bytes per element of a profiler dtype string ("double" 8, "float" 4, "long int" 8, "bool" 1,
/// ...); 0 for non-tensors ("Scalar", "", ...).
int dtype_bytes(const std::string& dtype);

/// FLOPs and bytes of one call: the profiler's own FLOP count when it reports one
/// (`reported_flops` > 0), otherwise 2mnk for matrix products, one FLOP per output element for
/// elementwise operators, one per input element for reductions, 2/3 n³ (LU), n³/3 (Cholesky),
/// n²k (triangular solves with k right-hand sides), 2n²k (solves from a factorisation; + 2/3 n³
/// where the solve factors too) and none (lu_unpack) for linear algebra, none for data movement. Bytes: inputs read plus the
/// output written (estimated from the inputs' shapes); views move nothing.
OpCost estimate_cost(const std::string& name, OpGroup group, const std::vector<OpInput>& inputs,
                     double reported_flops);

}  // namespace nnvmc::profile
