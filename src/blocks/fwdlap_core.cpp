/// @file fwdlap_core.cpp
/// Layout helpers and the layout-generic ops of FwdLap: sums, products, affine maps,
/// elementwise functions, concatenation, reshapes and slices.
#include <algorithm>

#include "core/errors.hpp"
#include "blocks/fwdlap.hpp"
#include "blocks/fwdlap_detail.hpp"

namespace nnvmc {

namespace fwdlap_detail {

torch::Tensor own_view(torch::Tensor& dense_jac, int64_t offset, int64_t electrons) {
  auto s = dense_jac.sizes().vec();  // [B, E, 3N, *F]
  std::vector<int64_t> split{s[0], s[1], s[2] / 3, 3};
  split.insert(split.end(), s.begin() + 3, s.end());
  return dense_jac.view(split).narrow(2, offset, electrons).diagonal(0, 1, 2);  // [B, 3, *F, E]
}

FwdLap like(const FwdLap& x, torch::Tensor value, torch::Tensor jac, torch::Tensor lap) {
  FwdLap out = x;
  out.value = std::move(value);
  out.jac = std::move(jac);
  out.lap = std::move(lap);
  return out;
}

void require(bool ok, const std::string& what) {
  if (!ok) throw Error("forward Laplacian: " + what);
}

}  // namespace fwdlap_detail

using namespace fwdlap_detail;

torch::Tensor FwdLap::coord_dot(const FwdLap& a, const FwdLap& b) {
  require(a.kind == b.kind, "coord_dot needs equal layouts");
  auto s = (a.jac * b.jac).sum(a.coord_axis());
  return a.kind == Sparsity::pair ? 2 * s : s;
}

torch::Tensor FwdLap::coord_sq() const {
  // Σ_c accumulated one coordinate at a time: no [.., 3N, ..]-sized temporary, and on the
  // CPU 10-40x faster than linalg_vector_norm over the (short, strided) coordinate axis, which
  // libtorch reduces slowly (512 walkers of LiH: [512, 4, 12, 48] 23 ms → 0.6 ms).
  const int64_t c = coord_axis();
  auto s = torch::zeros(jac.select(c, 0).sizes(), jac.options());
  for (int64_t k = 0; k < jac.size(c); ++k) {
    const auto g = jac.select(c, k);
    s.addcmul_(g, g);
  }
  return kind == Sparsity::pair ? 2 * s : s;
}

namespace {
bool sole_owner(const torch::Tensor& t) {
  return t.defined() && t.use_count() == 1 && t.unsafeGetTensorImpl()->storage().use_count() == 1;
}
}  // namespace

bool FwdLap::exclusive() const { return sole_owner(value) && sole_owner(jac) && sole_owner(lap); }

torch::Tensor FwdLap::own_jac() const {
  if (kind == Sparsity::local) return jac;
  require(kind == Sparsity::dense, "own_jac needs a local or dense value");
  auto j = jac;
  return own_view(j, offset, value.size(1)).movedim(-1, 1);
}

FwdLap FwdLap::to_dense() const {
  if (kind == Sparsity::dense) return *this;
  require(kind == Sparsity::local, "only local values can be made dense");
  auto s = jac.sizes().vec();  // [B, E, 3, *F]
  s[2] = n_coords;
  auto dense = torch::zeros(s, jac.options());
  own_view(dense, offset, value.size(1)).copy_(jac.movedim(1, -1));
  FwdLap out = like(*this, value, dense, lap);
  out.kind = Sparsity::dense;
  return out;
}

using Op = Blocks<FwdLap>;

FwdLap Op::add(const FwdLap& a, const FwdLap& b) {
  if (a.kind == b.kind) {
    require(a.offset == b.offset && a.offset2 == b.offset2, "add of different electron ranges");
    return like(a, a.value + b.value, a.jac + b.jac, a.lap + b.lap);
  }
  if (a.kind == Sparsity::local && b.kind == Sparsity::dense) return add(b, a);
  require(a.kind == Sparsity::dense && b.kind == Sparsity::local, "add of incompatible layouts");
  require(a.offset == b.offset, "add of different electron ranges");
  auto jac = a.jac.clone();
  own_view(jac, a.offset, a.value.size(1)).add_(b.jac.movedim(1, -1));
  return like(a, a.value + b.value, jac, a.lap + b.lap);
}

FwdLap Op::add(FwdLap&& a, const FwdLap& b) {
  const bool dense_local = a.kind == Sparsity::dense && b.kind == Sparsity::local;
  if (!a.exclusive() || (a.kind != b.kind && !dense_local) || a.offset != b.offset ||
      a.offset2 != b.offset2 || a.value.sizes() != b.value.sizes())
    return add(static_cast<const FwdLap&>(a), b);
  a.value.add_(b.value);
  if (dense_local)
    own_view(a.jac, a.offset, a.value.size(1)).add_(b.jac.movedim(1, -1));
  else
    a.jac.add_(b.jac);
  a.lap.add_(b.lap);
  return std::move(a);
}

FwdLap Op::mul(const FwdLap& a, const FwdLap& b) {
  const int64_t c = a.coord_axis();
  if (a.kind == b.kind) {
    require(a.offset == b.offset && a.offset2 == b.offset2, "mul of different electron ranges");
    return like(a, a.value * b.value,
                a.jac * b.value.unsqueeze(c) + b.jac * a.value.unsqueeze(c),
                a.lap * b.value + a.value * b.lap + 2 * FwdLap::coord_dot(a, b));
  }
  if (a.kind == Sparsity::local && b.kind == Sparsity::dense) return mul(b, a);
  require(a.kind == Sparsity::dense && b.kind == Sparsity::local, "mul of incompatible layouts");
  require(a.offset == b.offset, "mul of different electron ranges");
  auto jac = a.jac * b.value.unsqueeze(c);
  own_view(jac, a.offset, a.value.size(1)).add_((b.jac * a.value.unsqueeze(c)).movedim(1, -1));
  const auto cross = (a.own_jac() * b.jac).sum(2);  // Σ over own coordinates
  return like(a, a.value * b.value, jac, a.lap * b.value + a.value * b.lap + 2 * cross);
}

FwdLap Op::mul_const(const FwdLap& x, const torch::Tensor& c) {
  return like(x, x.value * c, x.jac * c, x.lap * c);
}

FwdLap Op::mul_const_electrons(const FwdLap& x, const torch::Tensor& c) {
  require(x.electron_axes() == 1, "mul_const_electrons needs electron features [B, E, *F]");
  return like(x, x.value * c, x.jac * c.unsqueeze(1), x.lap * c);  // jac [B, E, C, *F]
}

FwdLap Op::affine(const FwdLap& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  return like(x, torch::nn::functional::linear(x.value, weight, bias),
              torch::matmul(x.jac, weight.t()), torch::matmul(x.lap, weight.t()));
}

FwdLap Op::linear(const torch::nn::Linear& lin, const FwdLap& x) {
  return affine(x, lin->weight, lin->bias);
}

FwdLap Op::linear_cat(const torch::nn::Linear& lin, const std::vector<FwdLap>& parts) {
  // W·cat(parts) = Σ_p W_p·part_p: each column block acts on its part in that part's layout.
  std::vector<FwdLap> terms;
  int64_t col = 0;
  for (const auto& p : parts) {
    const int64_t w = p.value.size(-1);
    terms.push_back(affine(p, lin->weight.narrow(1, col, w), {}));
    col += w;
  }
  require(col == lin->weight.size(1), "linear_cat: input widths do not match the layer");
  // Accumulate in place into the first dense term (all terms are fresh tensors); local
  // terms only touch the own-electron blocks.
  std::stable_partition(terms.begin(), terms.end(),
                        [](const FwdLap& t) { return t.kind != Sparsity::local; });
  FwdLap out = std::move(terms[0]);
  for (size_t i = 1; i < terms.size(); ++i) out = add(std::move(out), terms[i]);
  if (lin->bias.defined()) out.value.add_(lin->bias);
  return out;
}

FwdLap Op::elementwise(const FwdLap& x, torch::Tensor f, const torch::Tensor& df,
                       const torch::Tensor& d2f) {
  return like(x, std::move(f), x.jac * df.unsqueeze(x.coord_axis()), df * x.lap + d2f * x.coord_sq());
}

FwdLap Op::tanh(const FwdLap& x) {
  auto t = torch::tanh(x.value);
  auto d1 = 1 - t.square();
  auto d2 = -2 * t * d1;
  return elementwise(x, t, d1, d2);
}

FwdLap Op::tanh(FwdLap&& x) {
  if (!x.exclusive()) return tanh(static_cast<const FwdLap&>(x));
  const auto sq = x.coord_sq();
  x.value.tanh_();
  auto d1 = 1 - x.value.square();
  x.jac.mul_(d1.unsqueeze(x.coord_axis()));
  x.lap.mul_(d1).addcmul_(-2 * x.value * d1, sq);
  return std::move(x);
}

FwdLap Op::sigmoid(const FwdLap& x) {
  auto sg = torch::sigmoid(x.value);
  auto d1 = sg * (1 - sg);
  auto d2 = d1 * (1 - 2 * sg);
  return elementwise(x, sg, d1, d2);
}

FwdLap Op::softplus(const FwdLap& x) {
  const auto sg = torch::sigmoid(x.value);
  return elementwise(x, torch::softplus(x.value), sg, sg * (1 - sg));
}

FwdLap Op::exp(const FwdLap& x) {
  auto e = torch::exp(x.value);
  return elementwise(x, e, e, e);
}

FwdLap Op::log(const FwdLap& x) {
  auto inv = x.value.reciprocal();
  return elementwise(x, torch::log(x.value), inv, -inv.square());
}

FwdLap Op::log1p(const FwdLap& x) {
  auto inv = (1 + x.value).reciprocal();
  return elementwise(x, torch::log1p(x.value), inv, -inv.square());
}

FwdLap Op::reciprocal(const FwdLap& x) {
  auto inv = x.value.reciprocal();
  auto inv2 = inv.square();
  return elementwise(x, inv, -inv2, 2 * inv2 * inv);
}

FwdLap Op::add_const(const FwdLap& x, const torch::Tensor& c) {
  return like(x, x.value + c, x.jac, x.lap);
}

FwdLap Op::square(const FwdLap& x) {
  return elementwise(x, x.value.square(), 2 * x.value, torch::full_like(x.value, 2.0));
}

FwdLap Op::cat(const std::vector<FwdLap>& parts) {
  std::vector<torch::Tensor> v, j, l;
  for (const auto& p : parts) {
    require(p.kind == parts[0].kind && p.offset == parts[0].offset && p.offset2 == parts[0].offset2,
            "cat of different layouts");
    v.push_back(p.value), j.push_back(p.jac), l.push_back(p.lap);
  }
  return like(parts[0], torch::cat(v, -1), torch::cat(j, -1), torch::cat(l, -1));
}

FwdLap Op::cat_electrons(const std::vector<FwdLap>& parts) {
  std::vector<torch::Tensor> v, j, l;
  int64_t next = -1;
  FwdLap first;
  for (const auto& part : parts) {
    const auto p = part.to_dense();
    require(next < 0 || p.offset == next, "cat_electrons needs consecutive electron ranges");
    if (next < 0) first = p;
    next = p.offset + p.value.size(1);
    v.push_back(p.value), j.push_back(p.jac), l.push_back(p.lap);
  }
  return like(first, torch::cat(v, 1), torch::cat(j, 1), torch::cat(l, 1));
}

FwdLap Op::reshape_features(const FwdLap& x, int64_t electron_axes, std::vector<int64_t> shape) {
  require(electron_axes == x.electron_axes(), "reshape_features: wrong number of electron axes");
  auto lead = [&](const torch::Tensor& t, int64_t keep) {
    std::vector<int64_t> s(t.sizes().begin(), t.sizes().begin() + keep);
    s.insert(s.end(), shape.begin(), shape.end());
    return t.reshape(s);
  };
  const int64_t k = 1 + electron_axes;
  return like(x, lead(x.value, k), lead(x.jac, k + 1), lead(x.lap, k));
}

FwdLap Op::slice_electrons(const FwdLap& x, int64_t axis, int64_t lo, int64_t hi) {
  require(axis >= 1 && axis <= x.electron_axes(), "slice_electrons: not an electron axis");
  FwdLap out = like(x, x.value.slice(axis, lo, hi), x.jac.slice(axis, lo, hi), x.lap.slice(axis, lo, hi));
  (axis == 1 ? out.offset : out.offset2) += lo;
  return out;
}

FwdLap Op::slice_features(const FwdLap& x, int64_t lo, int64_t hi) {
  return like(x, x.value.slice(-1, lo, hi), x.jac.slice(-1, lo, hi), x.lap.slice(-1, lo, hi));
}

FwdLap Op::sum_feature_axis(const FwdLap& x, int64_t axis) {
  require(axis < 0 && -axis <= x.value.dim() - 1 - x.electron_axes(), "sum_feature_axis: not a feature axis");
  return like(x, x.value.sum(axis), x.jac.sum(axis), x.lap.sum(axis));
}

FwdLap Op::sum_features(const FwdLap& x) {
  return like(x, x.value.sum(-1), x.jac.sum(-1), x.lap.sum(-1));
}

FwdLap Op::sum_centres(const FwdLap& x) {
  require(x.electron_axes() == 1, "sum_centres needs electron–centre features [B, E, M, *F]");
  return like(x, x.value.sum(2), x.jac.sum(3), x.lap.sum(2));
}

}  // namespace nnvmc
