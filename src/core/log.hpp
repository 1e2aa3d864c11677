#pragma once
/// @file log.hpp
/// Logging through spdlog: one logger ("nnvmc") writing to stderr.
#include <spdlog/spdlog.h>

namespace nnvmc {

/// Sets the global log level ("debug", "info", "warn", "error") and pattern.
void setup_logging(const std::string& level = "info");

}  // namespace nnvmc
