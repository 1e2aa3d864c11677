#include "app/run_args.hpp"

#include "core/errors.hpp"

namespace nnvmc::app {

RunArgs split_run_args(const std::vector<std::string>& args) {
  RunArgs out;
  for (const auto& a : args) {
    if (const auto eq = a.find('='); eq != std::string::npos) {
      // a key given twice is refused, as in a YAML file (which one was meant?)
      const std::string key = a.substr(0, eq);
      for (const auto& o : out.overrides)
        if (o.substr(0, o.find('=')) == key)
          throw InputError("override '" + key + "' given twice on the command line ('" + o + "' and '" + a + "')");
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
