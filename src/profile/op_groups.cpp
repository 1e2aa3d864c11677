#include "profile/op_groups.hpp"

#include <algorithm>
#include <cctype>
#include <set>

namespace nnvmc::profile {

namespace {

const std::set<std::string> kGemm = {"mm", "addmm", "bmm", "baddbmm", "matmul", "linear", "einsum", "dot",
                                     "vdot", "mv", "addmv", "addbmm", "_addmm_activation", "tensordot",
                                     "outer", "addr", "bilinear", "_mm_out"};
const std::set<std::string> kLinalg = {"lu", "lu_solve", "lu_unpack", "_lu_with_info", "cholesky",
                                       "cholesky_solve", "_cholesky_solve_helper", "cholesky_inverse",
                                       "triangular_solve", "det", "logdet", "slogdet", "inverse", "geqrf",
                                       "orgqr", "ormqr", "qr", "svd", "symeig", "eig", "solve", "pinverse",
                                       "matrix_exp", "lu_slogdet"};
const std::set<std::string> kReduction = {
    "sum", "mean", "prod", "max", "min", "amax", "amin", "aminmax", "argmax", "argmin", "logsumexp", "norm",
    "linalg_vector_norm", "linalg_norm", "linalg_matrix_norm", "frobenius_norm", "var", "std", "var_mean",
    "std_mean", "median", "nanmedian", "cumsum", "cumprod", "cummax", "cummin", "all", "any", "softmax",
    "_softmax", "log_softmax", "_log_softmax", "_softmax_backward_data", "_log_softmax_backward_data", "sort",
    "topk", "kthvalue", "mode", "count_nonzero", "trace", "nansum", "sum_to_size", "mse_loss", "dist",
    "_cdist_forward", "cdist", "quantile", "nanquantile", "logcumsumexp"};
const std::set<std::string> kViews = {
    "view", "_unsafe_view", "reshape", "_reshape_alias", "slice", "select", "narrow", "permute", "transpose",
    "t", "numpy_T", "expand", "expand_as", "unsqueeze", "squeeze", "as_strided", "split", "split_with_sizes",
    "chunk", "unbind", "diagonal", "detach", "alias", "lift_fresh", "movedim", "moveaxis", "swapaxes",
    "unfold", "flatten", "unflatten", "contiguous", "to", "view_as", "reshape_as", "_to_copy_wrapper", "type_as",
    "real", "imag", "conj", "resolve_conj", "resolve_neg", "_conj", "_neg_view", "_reshape_copy_wrapper"};
const std::set<std::string> kDataMovement = {
    "copy_", "copy", "_copy_from", "_copy_from_and_resize", "_to_copy", "clone", "cat", "_cat", "stack",
    "hstack", "vstack", "index", "index_select", "gather", "scatter", "scatter_add", "scatter_reduce",
    "index_put_", "index_put", "_index_put_impl_", "index_add", "index_copy", "index_fill", "masked_select",
    "masked_scatter", "take", "take_along_dim", "put_", "repeat", "repeat_interleave", "tile", "diag_embed",
    "diag", "tril", "triu", "flip", "roll", "constant_pad_nd", "pad", "fill_", "fill", "zero_", "zeros",
    "zeros_like", "ones", "ones_like", "full", "full_like", "new_zeros", "new_ones", "new_full", "eye",
    "arange", "linspace", "_local_scalar_dense", "item", "tensor_split", "block_diag", "narrow_copy",
    "slice_scatter", "select_scatter", "diagonal_scatter", "as_strided_scatter", "masked_fill_backward",
    "_reshape_copy", "expand_copy", "permute_copy", "unsqueeze_copy", "view_copy", "split_copy",
    "diagonal_copy", "slice_copy", "select_copy", "t_copy", "transpose_copy", "lift_fresh_copy"};
const std::set<std::string> kElementwise = {
    "add", "sub", "rsub", "mul", "div", "true_divide", "neg", "exp", "exp2", "expm1", "log", "log1p", "log2",
    "log10", "tanh", "sigmoid", "pow", "sqrt", "rsqrt", "abs", "sign", "sgn", "reciprocal", "square", "clamp",
    "clamp_min", "clamp_max", "clip", "where", "masked_fill", "relu", "gelu", "silu", "softplus", "erf",
    "erfc", "sin", "cos", "tan", "atan", "atan2", "sinh", "cosh", "asinh", "hypot", "addcmul", "addcdiv",
    "lerp", "maximum", "minimum", "fmax", "fmin", "eq", "ne", "lt", "gt", "le", "ge", "isfinite", "isnan",
    "isinf", "isposinf", "isneginf", "logical_and", "logical_or", "logical_not", "logical_xor", "bitwise_and",
    "bitwise_or", "bitwise_not", "bitwise_xor", "floor", "ceil", "round", "trunc", "frac", "fmod",
    "remainder", "rand", "randn", "rand_like", "randn_like", "normal", "uniform", "bernoulli", "exponential",
    "random", "heaviside", "xlogy", "copysign", "nan_to_num", "sigmoid_backward", "tanh_backward",
    "threshold_backward", "threshold", "leaky_relu", "elu", "hardtanh", "logit", "lgamma", "digamma",
    "polygamma", "mvlgamma", "float_power", "floor_divide", "_fused_adam", "_fused_adamw", "addcmul_",
    "cumulative_trapezoid", "logaddexp", "logaddexp2", "sinc", "deg2rad", "rad2deg", "softplus_backward",
    "pow_backward", "mul_backward", "_foreach_add", "_foreach_mul", "_foreach_div", "_foreach_sqrt",
    "_foreach_addcmul", "_foreach_addcdiv", "_foreach_lerp", "_foreach_sub", "_foreach_neg"};

/// "aten::add_" → "add"; in-place and out variants share their operator's group.
std::string base_name(const std::string& name, bool keep_inplace = false) {
  std::string n = name;
  if (const auto p = n.rfind("::"); p != std::string::npos) n = n.substr(p + 2);
  if (const auto p = n.find('.'); p != std::string::npos) n = n.substr(0, p);  // overload suffix
  if (!keep_inplace && n.size() > 1 && n.back() == '_' && n[n.size() - 2] != '_') n.pop_back();
  return n;
}

std::int64_t numel(const std::vector<std::int64_t>& s) {
  std::int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}

/// Number of elements of the broadcast of the tensor inputs (largest input if shapes disagree).
double broadcast_numel(const std::vector<OpInput>& in) {
  std::vector<std::int64_t> out;
  for (const auto& i : in) {
    if (i.element_bytes == 0 || i.shapes.size() != 1) continue;
    const auto& s = i.shapes[0];
    if (s.size() > out.size()) out.insert(out.begin(), s.size() - out.size(), 1);
    for (size_t k = 0; k < s.size(); ++k) {
      auto& o = out[out.size() - s.size() + k];
      o = std::max(o, s[k]);
    }
  }
  return out.empty() ? 0.0 : static_cast<double>(numel(out));
}

double input_bytes(const std::vector<OpInput>& in) {
  double b = 0;
  for (const auto& i : in)
    for (const auto& s : i.shapes) b += static_cast<double>(numel(s)) * i.element_bytes;
  return b;
}

int widest_element(const std::vector<OpInput>& in) {
  int w = 0;
  for (const auto& i : in) w = std::max(w, i.element_bytes);
  return w;
}

/// Tensor inputs with at least two dimensions (matrix operands), in order.
std::vector<std::vector<std::int64_t>> matrices(const std::vector<OpInput>& in) {
  std::vector<std::vector<std::int64_t>> m;
  for (const auto& i : in)
    if (i.element_bytes > 0 && i.shapes.size() == 1 && i.shapes[0].size() >= 2) m.push_back(i.shapes[0]);
  return m;
}

/// FLOPs of a linear-algebra operator `n` (base name) on the matrix operands `m`: per n×n
/// system, 2/3 n³ for LU, n³/3 for Cholesky; per right-hand-side column, n² for a triangular
/// solve and 2n² for a solve from a factorisation (two triangular solves); a solve that factors
/// too (linalg_solve) adds the LU. lu_unpack only copies. (Triangular solves were charged 2n²
/// per column: the forward Laplacian's FLOPs came out ~1.9× too high, a user audit.)
double linalg_flops(const std::string& n, const std::vector<std::vector<std::int64_t>>& m) {
  if (m.empty() || n.find("unpack") != std::string::npos) return 0;
  const auto systems = [](const std::vector<std::int64_t>& a) {  // batch × n³ of square operands
    const double k = static_cast<double>(a.back());
    return static_cast<double>(numel(a)) / (k * static_cast<double>(a[a.size() - 2])) * k * k * k;
  };
  if (n.find("solve") == std::string::npos)
    return (n.find("cholesky") != std::string::npos ? 1.0 / 3.0 : 2.0 / 3.0) * systems(m[0]);
  if (m.size() < 2) return 0;
  // Operand order per operator: torch.triangular_solve(B, A) and cholesky_solve(B, L) take the
  // right-hand side first; linalg_solve_triangular(A, B), linalg_solve(A, B) and
  // lu_solve(LU, pivots, B) take the matrix first and the right-hand side last (a review: the
  // largest operand, taken as the right-hand side, was the matrix for a one-column B).
  const bool rhs_first = n == "triangular_solve" || n.find("cholesky_solve") != std::string::npos;
  const std::size_t rhs = rhs_first ? 0 : m.size() - 1, a = rhs_first ? 1 : 0;
  const double k = static_cast<double>(m[a].back());
  const double columns_times_n2 = k * static_cast<double>(numel(m[rhs]));  // n² per column of length n
  if (n.find("triangular") != std::string::npos) return columns_times_n2;
  const bool factors_too = n == "solve" || n == "linalg_solve" || n == "linalg_solve_ex" || n == "_linalg_solve_ex";
  return 2.0 * columns_times_n2 + (factors_too ? 2.0 / 3.0 * systems(m[a]) : 0.0);
}

}  // namespace

const std::vector<OpGroup>& all_groups() {
  static const std::vector<OpGroup> g = {OpGroup::gemm, OpGroup::elementwise, OpGroup::reduction,
                                         OpGroup::data_movement, OpGroup::linalg, OpGroup::other};
  return g;
}

const char* group_name(OpGroup g) {
  switch (g) {
    case OpGroup::gemm: return "gemm";
    case OpGroup::elementwise: return "elementwise";
    case OpGroup::reduction: return "reduction";
    case OpGroup::data_movement: return "data_movement";
    case OpGroup::linalg: return "linalg";
    default: return "other";
  }
}

bool is_view_or_wrapper(const std::string& name) { return kViews.count(base_name(name)) > 0; }

/// "LinalgLuFactorExBackward0" → "linalg_lu_factor_ex": the forward operator of an autograd node.
std::string forward_of_backward_node(const std::string& name) {
  std::string n = name;
  const std::string engine = "evaluate_function: ";
  if (const auto p = n.find(engine); p != std::string::npos) n = n.substr(p + engine.size());
  const auto p = n.rfind("Backward");
  if (p == std::string::npos || p == 0 || n.find("::") != std::string::npos) return "";
  for (size_t i = p + 8; i < n.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(n[i]))) return "";
  std::string out;
  for (size_t i = 0; i < p; ++i) {
    const char c = n[i];
    if (std::isupper(static_cast<unsigned char>(c))) {
      if (i > 0) out += '_';
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else {
      out += c;
    }
  }
  return out;
}

OpGroup classify_op(const std::string& name) {
  // Autograd nodes ("MmBackward0") count with their forward operator's group.
  if (const std::string fwd = forward_of_backward_node(name); !fwd.empty()) {
    const OpGroup g = classify_op("aten::" + fwd);
    return g == OpGroup::other ? OpGroup::other : g;
  }
  const std::string full = base_name(name, true);
  std::string n = base_name(name);
  if (kDataMovement.count(full)) return OpGroup::data_movement;
  if (kGemm.count(n)) return OpGroup::gemm;
  if (kReduction.count(n)) return OpGroup::reduction;
  if (kLinalg.count(n) || n.rfind("linalg_", 0) == 0 || n.rfind("_linalg_", 0) == 0) return OpGroup::linalg;
  if (kViews.count(n) || kDataMovement.count(n)) return OpGroup::data_movement;
  if (kElementwise.count(n) || n.rfind("_foreach_", 0) == 0) return OpGroup::elementwise;
  if (const auto p = n.rfind("_backward"); p != std::string::npos && p + 9 == n.size()) {
    const std::string fwd = n.substr(0, p);
    if (kViews.count(fwd) || kDataMovement.count(fwd)) return OpGroup::data_movement;
    if (kReduction.count(fwd)) return OpGroup::reduction;
    return OpGroup::elementwise;
  }
  return OpGroup::other;
}

int dtype_bytes(const std::string& t) {
  if (t == "double" || t == "long int" || t == "int64_t" || t == "c10::complex<float>") return 8;
  if (t == "float" || t == "int" || t == "unsigned int") return 4;
  if (t == "c10::Half" || t == "c10::BFloat16" || t == "short int") return 2;
  if (t == "bool" || t == "unsigned char" || t == "signed char") return 1;
  if (t == "c10::complex<double>") return 16;
  return 0;
}

OpCost estimate_cost(const std::string& name, OpGroup group, const std::vector<OpInput>& inputs,
                     double reported_flops) {
  OpCost c;
  if (is_view_or_wrapper(name)) return c;
  const double in_bytes = input_bytes(inputs);
  const int es = std::max(1, widest_element(inputs));
  const std::string n = base_name(name);
  switch (group) {
    case OpGroup::gemm: {
      const auto m = matrices(inputs);
      double out = 0;
      if (m.size() >= 2) {
        const auto& a = m[m.size() - 2];
        const auto& b = m[m.size() - 1];
        const double rows = static_cast<double>(a[a.size() - 2]), inner = static_cast<double>(a.back());
        const double cols = static_cast<double>(b.back());
        const double batch = static_cast<double>(numel(a)) / (rows * inner);
        out = batch * rows * cols;
        c.flops = 2.0 * batch * rows * inner * cols;
      } else if (m.size() == 1) {
        // Matrix × vector (mv, addmv, addr's outer product is elementwise-like): 2·rows·cols.
        // (Broadcasting a [P] bias against [P, B] and [B] would count P·P.)
        out = static_cast<double>(m[0][m[0].size() - 2]);
        c.flops = 2.0 * static_cast<double>(numel(m[0]));
      } else {
        out = 1;  // dot / vdot of vectors
        c.flops = 2.0 * broadcast_numel(inputs);
      }
      c.bytes = in_bytes + out * es;
      break;
    }
    case OpGroup::elementwise: {
      const double out = broadcast_numel(inputs);
      c.flops = out;
      c.bytes = in_bytes + out * es;
      break;
    }
    case OpGroup::reduction:
      c.flops = in_bytes / es;
      c.bytes = in_bytes;
      break;
    case OpGroup::linalg:
      c.flops = linalg_flops(n, matrices(inputs));
      c.bytes = 2.0 * in_bytes;
      break;
    case OpGroup::data_movement:
      c.bytes = n == "copy" ? in_bytes : (n == "fill" || n == "zero") ? in_bytes : 2.0 * in_bytes;
      break;
    default:
      break;
  }
  if (reported_flops > 0) c.flops = reported_flops;
  return c;
}

}  // namespace nnvmc::profile
