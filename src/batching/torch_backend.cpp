/// The libtorch GEMM backend and backend selection.
#include <ATen/ATen.h>

#include "batching/backend.hpp"
#include "core/errors.hpp"

namespace nnvmc::batching {

namespace {
class TorchBackend final : public GemmBackend {
 public:
  void bmm(const at::Tensor& a, const at::Tensor& b, const at::Tensor& c, bool accumulate) override {
    if (accumulate) {
      at::Tensor cc = c;
      cc.baddbmm_(a, b);
    } else {
      at::Tensor cc = c;
      at::bmm_out(cc, a, b);
    }
  }
};
}  // namespace

std::unique_ptr<GemmBackend> make_torch_backend() { return std::make_unique<TorchBackend>(); }

std::unique_ptr<GemmBackend> make_backend(BackendKind kind, const std::string& device) {
  if (kind == BackendKind::torch) return make_torch_backend();
  if (device != "cpu")
    throw InputError("backend 'cublas' stages host tensors itself: use it with device 'cpu' "
                     "(the host side), got device '" + device + "'");
  return make_cublas_backend(0);
}

}  // namespace nnvmc::batching
