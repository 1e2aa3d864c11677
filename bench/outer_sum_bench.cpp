/// @file outer_sum_bench.cpp
/// Writing per-sample weight gradients into a Jacobian's columns, three ways, interleaved in one
/// run (medians): ATen's batched GEMM (torch::bmm_out: one dispatched GEMM per walker on the
/// CPU), train/outer_sum's loops, and a fill of the same columns (the bandwidth bound). L blocks [B, O·I] side by side in a
/// [B, P] buffer, inputs g [B, S, O] and x [B, S, I], float64.
///
///   outer_sum_bench [--walkers 256] [--width 53230] [--blocks 22] [--out 48] [--in 48]
///                   [--positions 1,4,8,16,32] [--repeats 21] [--threads 1]
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <string>

#include "bench_args.hpp"
#include "core/host_parallel.hpp"
#include "train/outer_sum_tensors.hpp"

using namespace nnvmc;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  return bench::guarded_main("outer_sum_bench", [&] {
    std::map<std::string, std::string> opt{{"walkers", "256"}, {"width", "53230"}, {"blocks", "22"}, {"out", "48"},
                                           {"in", "48"},       {"positions", "1,4,8,16,32"}, {"repeats", "21"},
                                           {"threads", "1"}};
    for (int i = 1; i + 1 < argc; i += 2) {
      const std::string key = std::string(argv[i]).substr(2);
      if (std::string(argv[i]).rfind("--", 0) != 0 || !opt.count(key)) throw std::runtime_error(std::string("unknown option ") + argv[i]);
      opt[key] = argv[i + 1];
    }
    at::set_num_threads(std::stoi(opt["threads"]));
    const std::int64_t b = std::stoll(opt["walkers"]), p = std::stoll(opt["width"]), l = std::stoll(opt["blocks"]);
    const std::int64_t o = std::stoll(opt["out"]), in = std::stoll(opt["in"]);
    const int repeats = std::stoi(opt["repeats"]);
    if (l * o * in > p) throw std::runtime_error("blocks x out x in exceeds --width");
    const auto f64 = torch::kFloat64;
    auto jac = torch::zeros({b, p}, f64);
    const double gbytes = 8.0 * b * l * o * in / 1e9;
    std::printf("# B %lld, P %lld, %lld blocks of %lld x %lld (%.1f MB written), AVX2 variant %s\n",
                static_cast<long long>(b), static_cast<long long>(p), static_cast<long long>(l),
                static_cast<long long>(o), static_cast<long long>(in), gbytes * 1e3,
                outer_sum::avx2_supported() ? "yes" : "no");
    std::printf("%4s %12s %12s %12s   (ms, medians of %d interleaved repeats)\n", "S", "bmm_out", "loops", "fill",
                repeats);
    for (const auto& s_text : bench::split_list(opt["positions"])) {
      const std::int64_t s = std::stoll(s_text);
      std::vector<torch::Tensor> g, x;
      for (std::int64_t k = 0; k < l; ++k) {
        g.push_back(torch::randn({b, s, o}, f64));
        x.push_back(torch::randn({b, s, in}, f64));
      }
      const auto block = [&](std::int64_t k) { return jac.slice(1, k * o * in, (k + 1) * o * in).view({b, o, in}); };
      const auto loops = [&] {
        for (std::int64_t k = 0; k < l; ++k) {
          auto c = block(k);
          const auto a = outer_sum::tensor_args(g[k], x[k], c, false);
          at::parallel_for(0, b, 8, [&](std::int64_t b0, std::int64_t b1) { outer_sum::run(a, b0, b1); });
        }
      };
      const std::vector<std::function<void()>> ways{
          [&] {
            for (std::int64_t k = 0; k < l; ++k) {
              auto v = block(k);
              torch::bmm_out(v, g[k].transpose(1, 2), x[k]);
            }
          },
          loops, [&] { jac.slice(1, 0, l * o * in).fill_(1.0); }};
      ways[0]();
      const auto reference = jac.slice(1, 0, l * o * in).clone();
      loops();
      const double err = (jac.slice(1, 0, l * o * in) - reference).abs().max().item<double>();
      if (err > 1e-12) throw std::runtime_error("outer_sum differs from bmm by " + std::to_string(err));
      std::vector<std::vector<double>> t(ways.size());
      for (int r = 0; r < repeats + 1; ++r)
        for (size_t w = 0; w < ways.size(); ++w) {
          const auto t0 = std::chrono::steady_clock::now();
          ways[w]();
          if (r > 0) t[w].push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() * 1e3);
        }
      std::printf("%4lld %12.2f %12.2f %12.2f\n", static_cast<long long>(s), median(t[0]), median(t[1]), median(t[2]));
    }
    return 0;
  });
}
