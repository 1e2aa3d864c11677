/// (T) per-triple kernels (triples_kernels.hpp): torch ops and fused host loops.
#include "ccsd/triples_kernels.hpp"

#include <ATen/Dispatch.h>
#include <torch/torch.h>

#include <algorithm>
#include <functional>
#include <vector>

#include "ccsd/triples_visit.hpp"
#include "core/host_parallel.hpp"

#if NNVMC_WITH_CUDA
#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include "ccsd/triples_cuda.hpp"
#endif

namespace nnvmc::ccsd {

namespace {

#if NNVMC_WITH_CUDA
/// torch's current stream on `device` (a cudaStream_t), where the kernels go so that they are
/// ordered with the torch ops and contractions around them.
void* current_stream(const torch::Device& device) {
  return c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA)->getStream(device).native_handle();
}
#endif

/// A strided 3-D view: element (x, y, z) at p[x·s0 + y·s1 + z·s2].
template <typename T>
struct View3 {
  const T* p;
  std::int64_t s0, s1, s2;
};

template <typename T>
View3<T> view3(const torch::Tensor& t) {
  return {t.data_ptr<T>(), t.stride(0), t.stride(1), t.stride(2)};
}

/// out [n0, n1, n2] (contiguous) = Σ plus − Σ minus, tile by tile (8 × 8 × 32 elements): all
/// views are added into one L1-resident tile before it is written, so out is written once and
/// no view needs a temporary. The sum is bound by reading the views (about 12·8·v³ bytes per
/// triple, mostly from beyond L2); tile shapes from 4 to 64 and a loop order that follows each
/// view's contiguous axis were no faster on C4H4 (bench/results/ccsd_triples.txt).
template <typename T>
void sum_views_host(const std::vector<View3<T>>& plus, const std::vector<View3<T>>& minus, T* out, std::int64_t n0,
                    std::int64_t n1, std::int64_t n2) {
  constexpr std::int64_t B0 = 8, B1 = 8, B2 = 32;
  // the (a0, a1) tiles as one range, in the serial loop's order: threads share them evenly also
  // where n0 / 8 is not much more than the thread count
  const std::int64_t tiles0 = (n0 + B0 - 1) / B0, tiles1 = (n1 + B1 - 1) / B1;
  at::parallel_for(0, tiles0 * tiles1, 1, [&](std::int64_t t0, std::int64_t t1) {
    std::vector<T> buf(std::size_t(B0 * B1 * B2));
    for (std::int64_t tile = t0; tile < t1; ++tile) {
      const std::int64_t a0 = tile / tiles1 * B0, e0 = std::min(B0, n0 - a0);
      {
        const std::int64_t a1 = tile % tiles1 * B1, e1 = std::min(B1, n1 - a1);
        for (std::int64_t a2 = 0; a2 < n2; a2 += B2) {
          const std::int64_t e2 = std::min(B2, n2 - a2);
          std::fill(buf.begin(), buf.end(), T(0));
          auto accumulate = [&](const View3<T>& w, bool add) {
            for (std::int64_t x = 0; x < e0; ++x)
              for (std::int64_t y = 0; y < e1; ++y) {
                const T* row = w.p + (a0 + x) * w.s0 + (a1 + y) * w.s1 + a2 * w.s2;
                T* b = buf.data() + (x * B1 + y) * B2;
                if (w.s2 == 1) {
                  if (add)
                    for (std::int64_t z = 0; z < e2; ++z) b[z] += row[z];
                  else
                    for (std::int64_t z = 0; z < e2; ++z) b[z] -= row[z];
                } else {
                  const std::int64_t s = w.s2;
                  if (add)
                    for (std::int64_t z = 0; z < e2; ++z) b[z] += row[z * s];
                  else
                    for (std::int64_t z = 0; z < e2; ++z) b[z] -= row[z * s];
                }
              }
          };
          for (const auto& w : plus) accumulate(w, true);
          for (const auto& w : minus) accumulate(w, false);
          for (std::int64_t x = 0; x < e0; ++x)
            for (std::int64_t y = 0; y < e1; ++y)
              std::copy_n(buf.data() + (x * B1 + y) * B2, e2, out + ((a0 + x) * n1 + a1 + y) * n2 + a2);
        }
      }
    }
  });
}

/// Σ over a ≥ b ≥ c of triple_visit (triples_visit.hpp), parallel over a.
template <typename T>
double triple_energy_host(const T* w, const T* ti, const T* tj, const T* tk, const T* gjk, const T* gik,
                          const T* gij, const double* ev, double e_ijk, std::int64_t v) {
  // the rows a carry (a+1)(a+2)/2 visits each: cut [0, v) into parts of about equal work, so that
  // threads given consecutive parts are balanced
  const std::int64_t parts = std::min<std::int64_t>(v, 4 * std::int64_t(at::get_num_threads()));
  std::vector<std::int64_t> cut{0};
  const double total = double(v) * double(v + 1) * double(v + 2) / 6;
  for (std::int64_t a = 0, done = 0; a < v; ++a) {
    done += (a + 1) * (a + 2) / 2;
    if (double(done) >= total * double(cut.size()) / double(parts) && a + 1 < v) cut.push_back(a + 1);
  }
  cut.push_back(v);
  return at::parallel_reduce(
      0, std::int64_t(cut.size()) - 1, 1, 0.0,
      [&](std::int64_t p0, std::int64_t p1, double acc) {
        const std::int64_t a0 = cut[std::size_t(p0)], a1 = cut[std::size_t(p1)];
        const TripleArrays<T, std::int64_t> x{w, ti, tj, tk, gjk, gik, gij, ev, v};
        for (std::int64_t a = a0; a < a1; ++a)
          for (std::int64_t b = 0; b <= a; ++b) {
            const double dab = e_ijk - ev[a] - ev[b];
            for (std::int64_t c = 0; c <= b; ++c) acc += triple_visit(x, a, b, c, dab);
          }
        return acc;
      },
      std::plus<double>());
}

}  // namespace

TriplesPath triples_path(const torch::Tensor& x, KernelChoice choice, bool any_strides) {
  if (use_host_kernels(x, choice, any_strides)) return TriplesPath::host_loops;
#if NNVMC_WITH_CUDA
  if (choice == KernelChoice::automatic && x.is_cuda() && (any_strides || x.is_contiguous()) &&
      (x.scalar_type() == torch::kFloat64 || x.scalar_type() == torch::kFloat32))
    return TriplesPath::cuda_kernels;
#endif
  return TriplesPath::torch_ops;
}

torch::Tensor sum_of_views(const std::vector<torch::Tensor>& plus, const std::vector<torch::Tensor>& minus,
                           KernelChoice kernels) {
  TORCH_CHECK(!plus.empty(), "sum_of_views needs at least one view to add");
  const torch::Tensor& first = plus.front();
  const TriplesPath path = triples_path(first, kernels, /*any_strides=*/true);
  // the fused kernels take 3-D views of one shape, type and device; anything else the torch ops
  bool alike = first.dim() == 3;
  for (const auto* list : {&plus, &minus})
    for (const auto& t : *list)
      alike = alike && t.device() == first.device() && t.scalar_type() == first.scalar_type() && t.sizes() == first.sizes();
  const bool host = alike && path == TriplesPath::host_loops;
#if NNVMC_WITH_CUDA
  if (alike && path == TriplesPath::cuda_kernels && plus.size() + minus.size() <= std::size_t(cuda::kMaxViews)) {
    torch::Tensor out = torch::empty(first.sizes(), first.options());
    cuda::SumOfViews call;
    for (const auto* list : {&plus, &minus})
      for (const auto& t : *list) {
        call.src[call.n_views] = t.data_ptr();
        for (int d = 0; d < 3; ++d) call.strides[call.n_views][d] = t.stride(d);
        ++call.n_views;
      }
    call.n_plus = int(plus.size());
    call.out = out.data_ptr();
    call.n0 = first.size(0), call.n1 = first.size(1), call.n2 = first.size(2);
    call.f64 = first.scalar_type() == torch::kFloat64;
    const c10::DeviceGuard guard(first.device());
    cuda::launch_sum_of_views(call, current_stream(first.device()));
    return out;
  }
#endif
  if (!host) {
    torch::Tensor out = first.clone(at::MemoryFormat::Contiguous);
    for (std::size_t s = 1; s < plus.size(); ++s) out.add_(plus[s]);
    for (const auto& t : minus) out.sub_(t);
    return out;
  }
  torch::Tensor out = torch::empty(first.sizes(), first.options());
  AT_DISPATCH_FLOATING_TYPES(first.scalar_type(), "sum_of_views", [&] {
    std::vector<View3<scalar_t>> p, m;
    for (const auto& t : plus) p.push_back(view3<scalar_t>(t));
    for (const auto& t : minus) m.push_back(view3<scalar_t>(t));
    sum_views_host<scalar_t>(p, m, out.data_ptr<scalar_t>(), first.size(0), first.size(1), first.size(2));
  });
  return out;
}

torch::Tensor triple_energy(const torch::Tensor& w, const TripleSingles& s, double e_ijk, const torch::Tensor& ev,
                            KernelChoice kernels) {
  const std::int64_t v = w.size(0);
  TORCH_CHECK(w.sizes() == torch::IntArrayRef({v, v, v}) && ev.numel() == v, "triple_energy: w must be [v, v, v], ev [v]");
  for (const auto* t : {&s.ti, &s.tj, &s.tk}) TORCH_CHECK(t->numel() == v, "triple_energy: t1 rows must be [v]");
  for (const auto* g : {&s.gjk, &s.gik, &s.gij})
    TORCH_CHECK(g->sizes() == torch::IntArrayRef({v, v}), "triple_energy: integral slices must be [v, v]");
  // the denominators in float64 whatever W's precision (and so the sum), where W is
  const torch::Tensor ev64 = ev.to(w.device(), torch::kFloat64);
  if (triples_path(w, kernels, /*any_strides=*/false) == TriplesPath::host_loops) {
    double e = 0;
    AT_DISPATCH_FLOATING_TYPES(w.scalar_type(), "triple_energy", [&] {
      auto host = [&](const torch::Tensor& t) { return t.to(torch::kCPU, w.scalar_type()).contiguous(); };
      const torch::Tensor ti = host(s.ti), tj = host(s.tj), tk = host(s.tk), gjk = host(s.gjk), gik = host(s.gik),
                          gij = host(s.gij), e_v = ev64.to(torch::kCPU).contiguous();
      e = triple_energy_host<scalar_t>(w.data_ptr<scalar_t>(), ti.data_ptr<scalar_t>(), tj.data_ptr<scalar_t>(),
                                       tk.data_ptr<scalar_t>(), gjk.data_ptr<scalar_t>(), gik.data_ptr<scalar_t>(),
                                       gij.data_ptr<scalar_t>(), e_v.data_ptr<double>(), e_ijk, v);
    });
    return torch::tensor(e, torch::kFloat64);
  }
#if NNVMC_WITH_CUDA
  if (triples_path(w, kernels, /*any_strides=*/false) == TriplesPath::cuda_kernels) {
    auto on_device = [&](const torch::Tensor& t) { return t.to(w.device(), w.scalar_type()).contiguous(); };
    const torch::Tensor ti = on_device(s.ti), tj = on_device(s.tj), tk = on_device(s.tk), gjk = on_device(s.gjk),
                        gik = on_device(s.gik), gij = on_device(s.gij), e_v = ev64.contiguous();
    const auto f64 = w.options().dtype(torch::kFloat64);
    torch::Tensor sum = torch::zeros({}, f64), partials = torch::empty({cuda::triple_energy_partials()}, f64);
    cuda::TripleEnergy call;
    call.w = w.data_ptr(), call.ti = ti.data_ptr(), call.tj = tj.data_ptr(), call.tk = tk.data_ptr();
    call.gjk = gjk.data_ptr(), call.gik = gik.data_ptr(), call.gij = gij.data_ptr();
    call.ev = e_v.data_ptr<double>(), call.e_ijk = e_ijk, call.v = v, call.f64 = w.scalar_type() == torch::kFloat64;
    call.sum = sum.data_ptr<double>(), call.partials = partials.data_ptr<double>(), call.n_partials = int(partials.numel());
    const c10::DeviceGuard guard(w.device());
    cuda::launch_triple_energy(call, current_stream(w.device()));
    return sum;
  }
#endif
  const torch::Tensor V = w + s.ti.view({v, 1, 1}) * s.gjk.view({1, v, v}) + s.tj.view({1, v, 1}) * s.gik.view({v, 1, v}) +
                          s.tk.view({1, 1, v}) * s.gij.view({v, v, 1});
  const torch::Tensor r3 = 4 * V + V.permute({1, 2, 0}) + V.permute({2, 0, 1}) -
                           2 * (V.permute({2, 1, 0}) + V.permute({0, 2, 1}) + V.permute({1, 0, 2}));
  const torch::Tensor d = e_ijk - (ev64.view({v, 1, 1}) + ev64.view({1, v, 1}) + ev64.view({1, 1, v}));
  return (w * r3).to(torch::kFloat64).div_(d).sum();
}

}  // namespace nnvmc::ccsd
