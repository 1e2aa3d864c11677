/// (T)'s CUDA kernels (ccsd/triples_cuda.cu) against the fused host loops: the sum of permuted
/// views and a triple's energy on the GPU equal the CPU's. Runs on a machine with a CUDA device
/// (bench/ccsd_gpu_figures.sh, stage "tests"); without one the same data go through the CPU's
/// automatic and torch-op kernels, and asking for the GPU is a clear error.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <array>
#include <vector>

#include "batching/backend.hpp"
#include "batching/cuda_runtime.hpp"
#include "ccsd/contractor.hpp"
#include "ccsd/triples_kernels.hpp"
#include "core/errors.hpp"

namespace {

namespace cc = nnvmc::ccsd;
using cc::KernelChoice;

/// libtorch caches "no CUDA" on first use and this build loads libtorch_cuda.so lazily: load it
/// before any test asks torch anything (as tests/batching/test_peak_memory.cpp does).
class CudaRuntimeFirst : public testing::Environment {
 public:
  void SetUp() override {
    if (nnvmc::batching::cuda_device_count() > 0) nnvmc::batching::ensure_device_runtime("cuda");
  }
};
[[maybe_unused]] testing::Environment* const kCudaRuntimeFirst = testing::AddGlobalTestEnvironment(new CudaRuntimeFirst);

const std::array<std::array<std::int64_t, 3>, 6> kPerms{{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}}};

/// One triple's inputs: twelve permuted views (six of fresh tensors, six of slices of one
/// [n·n, 6, n] slab, strided like the device path's GEMM outputs), W, the singles, ε_v.
struct TripleData {
  std::vector<torch::Tensor> plus, minus;
  torch::Tensor w, ev;
  cc::TripleSingles s;
};

TripleData make_data(std::int64_t n, torch::ScalarType dtype, const torch::Device& device) {
  const auto opt = torch::TensorOptions().dtype(dtype).device(device);
  TripleData d;
  const torch::Tensor slab = torch::randn({n * n, 6, n}, torch::kFloat64).to(opt);
  for (std::size_t q = 0; q < kPerms.size(); ++q) {
    const auto& p = kPerms[q];
    d.plus.push_back(torch::randn({n, n, n}, torch::kFloat64).to(opt).permute({p[0], p[1], p[2]}));
    d.minus.push_back(slab.select(1, std::int64_t(q)).view({n, n, n}).permute({p[2], p[0], p[1]}));
  }
  auto r = [&](std::initializer_list<std::int64_t> shape) { return torch::randn(shape, torch::kFloat64).to(opt); };
  d.w = r({n, n, n});
  d.s = {r({n}), r({n}), r({n}), r({n, n}), r({n, n}), r({n, n})};
  d.ev = (torch::rand({n}, torch::kFloat64) + 0.5).to(device);
  return d;
}

TripleData to_cpu(const TripleData& d) {
  TripleData h;
  for (const auto& t : d.plus) h.plus.push_back(t.cpu());  // dense permuted views keep their strides
  for (const auto& t : d.minus) h.minus.push_back(t.cpu());
  h.w = d.w.cpu(), h.ev = d.ev.cpu();
  h.s = {d.s.ti.cpu(), d.s.tj.cpu(), d.s.tk.cpu(), d.s.gjk.cpu(), d.s.gik.cpu(), d.s.gij.cpu()};
  return h;
}

/// Both kernels on `device` (automatic: the CUDA kernels there; the host loops on the CPU)
/// against the host loops on a CPU copy and the torch ops on `device`.
void expect_kernels_agree(const torch::Device& device) {
  torch::manual_seed(17);
  const double e_ijk = -1.9;
  // the kernels that run: the host loops on the CPU, the CUDA kernels on a GPU
  const auto expected = device.is_cuda() ? cc::TriplesPath::cuda_kernels : cc::TriplesPath::host_loops;
  // on the GPU also v = 100: more pairs (5050) than the energy kernel has warps (4096)
  std::vector<std::int64_t> sizes{1, 2, 7, 33, 70};
  if (device.is_cuda()) sizes.push_back(100);
  for (const auto dtype : {torch::kFloat64, torch::kFloat32})
    for (const std::int64_t n : sizes) {
      const TripleData d = make_data(n, dtype, device), h = to_cpu(d);
      ASSERT_EQ(cc::triples_path(d.w, KernelChoice::automatic, false), expected);
      ASSERT_EQ(cc::triples_path(d.plus.back(), KernelChoice::automatic, true), expected);
      ASSERT_EQ(cc::triples_path(d.w, KernelChoice::torch_ops, false), cc::TriplesPath::torch_ops);
      const double tol = dtype == torch::kFloat64 ? 1e-13 : 1e-5;
      const torch::Tensor sum = cc::sum_of_views(d.plus, d.minus), sum_host = cc::sum_of_views(h.plus, h.minus);
      const torch::Tensor sum_ops = cc::sum_of_views(d.plus, d.minus, KernelChoice::torch_ops);
      EXPECT_EQ(sum.device(), device);
      EXPECT_TRUE(sum.is_contiguous());
      EXPECT_TRUE(torch::allclose(sum.cpu(), sum_host, tol, tol)) << "sum, n " << n;
      EXPECT_TRUE(torch::allclose(sum_ops.cpu(), sum_host, tol, tol)) << "sum (torch ops), n " << n;
      const torch::Tensor e = cc::triple_energy(d.w, d.s, e_ijk, d.ev);
      const double host = cc::triple_energy(h.w, h.s, e_ijk, h.ev).item<double>();
      const double ops = cc::triple_energy(d.w, d.s, e_ijk, d.ev, KernelChoice::torch_ops).item<double>();
      EXPECT_EQ(e.scalar_type(), torch::kFloat64);
      EXPECT_EQ(e.device(), device);
      const double etol = (dtype == torch::kFloat64 ? 1e-12 : 1e-5) * (std::abs(host) + 1);  // 0 for n = 1, exactly
      EXPECT_NEAR(e.item<double>(), host, etol) << "energy, n " << n;
      EXPECT_NEAR(ops, host, etol) << "energy (torch ops), n " << n;
      // the device energy is summed in a fixed order: the same bits twice
      EXPECT_EQ(cc::triple_energy(d.w, d.s, e_ijk, d.ev).item<double>(), e.item<double>()) << "n " << n;
    }
  // a sum whose last extent spans several thread blocks (600 > 256), of non-cubic views
  const auto opt = torch::TensorOptions().dtype(torch::kFloat64).device(device);
  const std::vector<torch::Tensor> plus{torch::randn({3, 5, 600}, torch::kFloat64).to(opt),
                                        torch::randn({600, 3, 5}, torch::kFloat64).to(opt).permute({1, 2, 0})};
  const std::vector<torch::Tensor> minus{torch::randn({600, 5, 3}, torch::kFloat64).to(opt).permute({2, 1, 0})};
  const torch::Tensor got = cc::sum_of_views(plus, minus).cpu();
  EXPECT_TRUE(torch::allclose(got, (plus[0] + plus[1] - minus[0]).cpu(), 1e-14, 1e-14));
}

TEST(TriplesCuda, KernelsOnTheGpuEqualTheHostLoops) {
  if (nnvmc::batching::cuda_device_count() == 0) {
    // no GPU here: the same comparison through the CPU's kernels, and the GPU is a clear error
    expect_kernels_agree(torch::kCPU);
    EXPECT_THROW(nnvmc::batching::require_device("cuda:0"), nnvmc::InputError);
    return;
  }
  ASSERT_TRUE(nnvmc::batching::built_with_cuda()) << "a CUDA device but a build without the CUDA kernels";
  expect_kernels_agree(torch::Device(torch::kCUDA, 0));
}

/// 300 small contractions and 300 sections (more than one harvest of the contractor's
/// intervals) through a contractor on `device`; checks each term's statistics and returns how
/// often the work waited for the device before stats() was read.
std::int64_t waits_while_timing_terms(const std::string& device) {
  nnvmc::batching::PlanOptions o;
  o.device = device;
  o.cost = nnvmc::batching::CostModel{};
  cc::Contractor c(o);
  const auto opt = torch::TensorOptions().dtype(torch::kFloat64).device(torch::Device(device));
  torch::Tensor a = torch::randn({64, 64}, torch::kFloat64).to(opt);
  const torch::Tensor b = torch::randn({64, 64}, torch::kFloat64).to(opt);
  const std::int64_t waits0 = nnvmc::batching::device_waits();
  for (int n = 0; n < 300; ++n) {
    const torch::Tensor x = c("gemm", "ij,jk->ik", {a, b});
    const cc::Contractor::Section section(c, "update");
    a = torch::tanh(x);
  }
  const std::int64_t waits = nnvmc::batching::device_waits() - waits0;
  const auto& stats = c.stats();
  EXPECT_EQ(stats.at("gemm").calls, 300);
  EXPECT_EQ(stats.at("update").calls, 300);
  EXPECT_DOUBLE_EQ(stats.at("gemm").flops, 300 * 2.0 * 64 * 64 * 64);
  EXPECT_GT(stats.at("gemm").seconds, 0);
  EXPECT_GT(stats.at("update").seconds, 0);
  c.reset_stats();
  EXPECT_TRUE(c.stats().empty());
  EXPECT_TRUE(torch::isfinite(a).all().item<bool>());
  return waits;
}

}  // namespace

TEST(TriplesCuda, TheContractorTimesEachTermWithoutWaitingForTheDevice) {
  // thousands of terms in a (T) run: a wait after each would idle the GPU between launches,
  // so on CUDA each term is timed by device events harvested when the statistics are read
  if (nnvmc::batching::cuda_device_count() == 0) {
    EXPECT_EQ(waits_while_timing_terms("cpu"), 0);  // host wall times
    return;
  }
  EXPECT_EQ(waits_while_timing_terms("cuda"), 0);
  EXPECT_EQ(waits_while_timing_terms("cuda:0"), 0);
}
