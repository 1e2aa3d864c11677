#include "core/log.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdarg>
#include <map>
#include <mutex>
#include <cstdio>

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

namespace log {
void debug(const std::string& m) { spdlog::debug(m); }
void info(const std::string& m) { spdlog::info(m); }
void warn(const std::string& m) { spdlog::warn(m); }
void error(const std::string& m) { spdlog::error(m); }
void info_unless_repeated(const std::string& topic, const std::string& m) {
  static std::mutex mutex;
  static std::map<std::string, std::string> last;  // per topic
  const std::lock_guard<std::mutex> lock(mutex);
  auto& said = last[topic];
  if (said == m) {
    spdlog::debug(m);
  } else {
    spdlog::info(m);
    said = m;
  }
}
Quiet::Quiet() : previous_(static_cast<int>(spdlog::get_level())) {
  if (spdlog::get_level() < spdlog::level::err) spdlog::set_level(spdlog::level::err);
}
Quiet::~Quiet() { spdlog::set_level(static_cast<spdlog::level::level_enum>(previous_)); }
}  // namespace log

std::string strfmt(const char* format, ...) {
  va_list args;
  va_start(args, format);
  va_list copy;
  va_copy(copy, args);
  const int n = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  std::string out(n > 0 ? n : 0, '\0');
  if (n > 0) std::vsnprintf(out.data(), out.size() + 1, format, args);
  va_end(args);
  return out;
}

}  // namespace nnvmc
