#pragma once
/// @file json_text.hpp
/// JSON as text for outputs (stdout, summary.json, cell files). Strings that are not valid UTF-8
/// (e.g. a molecule path with a Latin-1 byte) are written with U+FFFD instead of throwing after
/// the run's work is done. Header-only: for code that already uses nlohmann::json.
#include <nlohmann/json.hpp>

#include <string>

namespace nnvmc {

/// `j` as text; `indent` < 0: one line.
inline std::string json_text(const nlohmann::json& j, int indent = -1) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace nnvmc
