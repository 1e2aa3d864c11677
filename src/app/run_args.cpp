#include "app/run_args.hpp"

#include "core/errors.hpp"

namespace nnvmc::app {

RunArgs split_run_args(const std::vector<std::string>& args) {
  RunArgs out;
  for (const auto& a : args) {
    if (a.find('=') != std::string::npos) {
      out.overrides.push_back(a);
    } else if (out.file.empty()) {
      out.file = a;
    } else {
      throw InputError("unexpected argument '" + a + "' (overrides look like key.path=value)");
    }
  }
  return out;
}

}  // namespace nnvmc::app
