#include "ccsd/diis.hpp"

#include <torch/torch.h>

namespace nnvmc::ccsd {

namespace {
double dot(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  double s = 0;
  for (std::size_t p = 0; p < a.size(); ++p) s += a[p].flatten().dot(b[p].flatten()).item<double>();
  return s;
}
/// Copies `src` into `dst` (same shapes; reused storage) or clones it when dst is empty.
void store(std::vector<torch::Tensor>& dst, const std::vector<torch::Tensor>& src) {
  if (dst.size() != src.size()) {
    dst.clear();
    for (const auto& x : src) dst.push_back(x.clone());
    return;
  }
  for (std::size_t p = 0; p < src.size(); ++p) dst[p].copy_(src[p]);
}
}  // namespace

void Diis::extrapolate(std::vector<torch::Tensor>& t, const std::vector<torch::Tensor>& e) {
  if (size_ <= 0) return;
  std::vector<torch::Tensor> t_buf, e_buf;
  if (int(ts_.size()) == size_) {  // the oldest pair's storage becomes the newest
    t_buf = std::move(ts_.front()), e_buf = std::move(es_.front());
    ts_.pop_front(), es_.pop_front(), overlap_.pop_front();
    for (auto& row : overlap_) row.erase(row.begin());
  }
  store(t_buf, t);
  store(e_buf, e);
  std::vector<double> row;
  for (const auto& ek : es_) row.push_back(dot(e_buf, ek));
  row.push_back(dot(e_buf, e_buf));
  ts_.push_back(std::move(t_buf)), es_.push_back(std::move(e_buf)), overlap_.push_back(std::move(row));
  const std::int64_t m = std::int64_t(ts_.size());
  if (m < 2) return;
  torch::Tensor B = torch::zeros({m + 1, m + 1}, torch::kFloat64);
  auto acc = B.accessor<double, 2>();
  double scale = 0;
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j <= i; ++j) acc[i][j] = acc[j][i] = overlap_[std::size_t(i)][std::size_t(j)];
    scale = std::max(scale, acc[i][i]);
  }
  if (scale > 0) B.narrow(0, 0, m).narrow(1, 0, m).div_(scale);
  for (std::int64_t i = 0; i < m; ++i) acc[i][m] = acc[m][i] = -1.0;
  torch::Tensor rhs = torch::zeros({m + 1}, torch::kFloat64);
  rhs[m] = -1.0;
  const torch::Tensor c = std::get<0>(torch::linalg_lstsq(B, rhs.unsqueeze(1))).squeeze(1);
  const auto ca = c.accessor<double, 1>();
  for (std::size_t p = 0; p < t.size(); ++p) {
    t[p].zero_();
    for (std::int64_t i = 0; i < m; ++i) t[p].add_(ts_[std::size_t(i)][p], ca[i]);
  }
}

}  // namespace nnvmc::ccsd
