#pragma once
/// @file log.hpp
/// Logging facade (spdlog behind it, to stderr). Deliberately free of spdlog/fmt includes:
/// the torch wheel ships its own fmt, which clashes with the system fmt that spdlog uses,
/// so translation units that include torch must log through these functions only.
#include <string>

namespace nnvmc {

/// Sets the global log level ("debug", "info", "warn", "error") and pattern.
void setup_logging(const std::string& level = "info");

namespace log {
void debug(const std::string& message);
void info(const std::string& message);
void warn(const std::string& message);
void error(const std::string& message);
/// Logs `message` at info, or at debug when it repeats the last message of the same `topic`
/// (one line per molecule of a run of many alike: a resume of 50 geometries printed the same
/// local-energy line 50 times, a user audit). Thread-safe.
void info_unless_repeated(const std::string& topic, const std::string& message);
/// While it lives, only errors are logged (a check that repeats work done again later, whose
/// warnings would then be printed twice).
class Quiet {
 public:
  Quiet();
  ~Quiet();
  Quiet(const Quiet&) = delete;
  Quiet& operator=(const Quiet&) = delete;

 private:
  int previous_;
};
}  // namespace log

/// printf-style formatting into a std::string, e.g. strfmt("%.6f", e).
std::string strfmt(const char* format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace nnvmc
