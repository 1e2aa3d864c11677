#include "parallel/tensor_comm.hpp"

#include <algorithm>
#include <stdexcept>

#include "parallel/device_collectives.hpp"

namespace nnvmc::parallel {
namespace {
/// The NCCL collectives that reduce `t` on its device (a CUDA float tensor, a build with NCCL,
/// every rank able to use it), or null: then `t` goes through a float64 host buffer.
/// Collective the first time it is asked for a device.
DeviceCollectives* on_device(Communicator& comm, const torch::Tensor& t) {
  if (!device_collectives_built() || !t.is_cuda() ||
      (t.scalar_type() != torch::kFloat64 && t.scalar_type() != torch::kFloat32))
    return nullptr;
  return device_collectives_if_usable(comm, t.get_device());
}
DeviceDtype device_dtype(const torch::Tensor& t) {
  return t.scalar_type() == torch::kFloat64 ? DeviceDtype::float64 : DeviceDtype::float32;
}
torch::Tensor host64(const torch::Tensor& t) {
  return t.detach().to(torch::kCPU, torch::kFloat64).contiguous();
}
torch::Tensor back(const torch::Tensor& h, const torch::Tensor& like) { return h.to(like.options()); }
std::int64_t row_size(const torch::Tensor& t) {
  std::int64_t n = 1;
  for (int d = 1; d < t.dim(); ++d) n *= t.size(d);
  return n;
}
}  // namespace

torch::Tensor allreduce_sum(Communicator& comm, const torch::Tensor& t) {
  if (comm.size() == 1) return t;
  if (auto* dc = on_device(comm, t)) {
    auto c = t.detach().contiguous().clone();
    dc->allreduce_sum(c.data_ptr(), static_cast<std::size_t>(c.numel()), device_dtype(c));
    return c;
  }
  auto h = host64(t).clone();
  comm.allreduce_sum(h.data_ptr<double>(), static_cast<std::size_t>(h.numel()));
  return back(h, t);
}

void allreduce_sum_(Communicator& comm, std::vector<torch::Tensor>& ts) {
  if (comm.size() == 1 || ts.empty()) return;
  const bool same_device = std::all_of(ts.begin(), ts.end(), [&](const torch::Tensor& t) {
    return t.device() == ts[0].device() && t.scalar_type() == ts[0].scalar_type();
  });
  std::vector<torch::Tensor> flat;
  auto* dc = same_device ? on_device(comm, ts[0]) : nullptr;
  if (dc != nullptr) {  // one NCCL all-reduce of the concatenation, on the device
    for (const auto& t : ts) flat.push_back(t.detach().reshape({-1}));
    auto d = torch::cat(flat);
    dc->allreduce_sum(d.data_ptr(), static_cast<std::size_t>(d.numel()), device_dtype(d));
    std::int64_t at = 0;
    for (auto& t : ts) {
      t.copy_(d.slice(0, at, at + t.numel()).view(t.sizes()));
      at += t.numel();
    }
    return;
  }
  for (const auto& t : ts) flat.push_back(host64(t).reshape({-1}));
  auto h = torch::cat(flat);
  comm.allreduce_sum(h.data_ptr<double>(), static_cast<std::size_t>(h.numel()));
  std::int64_t at = 0;
  for (auto& t : ts) {
    const auto n = t.numel();
    t.copy_(h.slice(0, at, at + n).view(t.sizes()));
    at += n;
  }
}

torch::Tensor allgather_rows(Communicator& comm, const torch::Tensor& local, std::int64_t* offset) {
  if (comm.size() == 1) {
    if (offset != nullptr) *offset = 0;
    return local;
  }
  const auto rows = comm.allgather(local.size(0));
  const std::int64_t width = row_size(local);
  std::vector<std::int64_t> counts;
  std::int64_t total = 0, mine = 0;
  for (int r = 0; r < comm.size(); ++r) {
    if (r == comm.rank()) mine = total;
    counts.push_back(rows[r] * width);
    total += rows[r];
  }
  if (offset != nullptr) *offset = mine;
  auto sizes = local.sizes().vec();
  sizes[0] = total;
  if (auto* dc = on_device(comm, local)) {
    const auto c = local.detach().contiguous();
    auto out = torch::empty(sizes, c.options());
    std::vector<std::int64_t> bytes;
    for (auto n : counts) bytes.push_back(n * static_cast<std::int64_t>(c.element_size()));
    dc->allgatherv(c.data_ptr(), out.data_ptr(), bytes);
    return out;
  }
  const auto h = host64(local);
  auto out = torch::empty(sizes, torch::kFloat64);
  comm.allgatherv(h.data_ptr<double>(), out.data_ptr<double>(), counts);
  return back(out, local);
}

torch::Tensor gather_rows(Communicator& comm, const torch::Tensor& local, int root) {
  if (comm.size() == 1) return local;
  const auto rows = comm.allgather(local.size(0));
  const std::int64_t width = row_size(local);
  std::vector<std::int64_t> counts;
  std::int64_t total = 0;
  for (auto r : rows) {
    counts.push_back(r * width);
    total += r;
  }
  const auto h = host64(local);
  torch::Tensor out;
  if (comm.rank() == root) {
    auto sizes = local.sizes().vec();
    sizes[0] = total;
    out = torch::empty(sizes, torch::kFloat64);
  }
  comm.gatherv(h.data_ptr<double>(), out.defined() ? out.data_ptr<double>() : nullptr, counts, root);
  return out.defined() ? back(out, local) : out;
}

void broadcast_(Communicator& comm, torch::Tensor& t, int root) {
  if (comm.size() == 1) return;
  if (auto* dc = on_device(comm, t)) {
    auto c = t.detach().contiguous().clone();
    dc->broadcast(c.data_ptr(), static_cast<std::size_t>(c.nbytes()), root);
    t.copy_(c);
    return;
  }
  auto h = host64(t).clone();
  comm.broadcast(h.data_ptr<double>(), sizeof(double) * h.numel(), root);
  t.copy_(h);
}

torch::Tensor local_rows(const Communicator& comm, const torch::Tensor& global) {
  if (comm.size() == 1) return global;
  const auto p = partition(global.size(0), comm.rank(), comm.size());
  return global.slice(0, p.offset, p.offset + p.count);
}

torch::Tensor map_rows(Communicator& comm, const torch::Tensor& rows,
                       const std::function<torch::Tensor(const torch::Tensor&)>& f) {
  if (comm.size() == 1) return f(rows);
  return allgather_rows(comm, f(local_rows(comm, rows)));
}

}  // namespace nnvmc::parallel
