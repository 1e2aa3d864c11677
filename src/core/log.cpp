#include "core/log.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>

namespace nnvmc {

void setup_logging(const std::string& level) {
  auto logger = spdlog::get("nnvmc");
  if (!logger) {
    logger = spdlog::stderr_color_mt("nnvmc");
    spdlog::set_default_logger(logger);
  }
  spdlog::set_pattern("[%H:%M:%S] %^%l%$ %v");
  spdlog::set_level(spdlog::level::from_str(level));
}

}  // namespace nnvmc
