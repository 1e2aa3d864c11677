#pragma once
/// @file commands.hpp
/// One function per subcommand (one file each): adds the subcommand to the CLI.
/// Each callback runs the command; library errors propagate to main(), which maps
/// InputError → exit 2 and other errors → exit 1.
#include <CLI/CLI.hpp>

#include <cerrno>
#include <climits>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string>

#include "core/config.hpp"

namespace nnvmc::app {

/// A CLI11 check: an execution device, cpu | cuda | cuda:N.
inline CLI::Validator device_name() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        return is_device_name(text) ? std::string() : "'" + text + "' is not cpu, cuda or cuda:N";
      },
      "");
}

/// Reads a whole command-line word as a number: "" on success, else the reason.
inline std::string read_number(const std::string& text, double& v) {
  errno = 0;
  char* end = nullptr;
  v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || std::isspace(static_cast<unsigned char>(text[0])))
    return "'" + text + "' is not a number";
  if (errno == ERANGE)  // (std::stod called 5e-324 "not a number")
    return "'" + text + "' is outside the range of double-precision numbers (about 2.2e-308 to 1.8e308)";
  return {};
}

/// A CLI11 check: a whole decimal number in [lo, hi] without leading zeros, checked before CLI11
/// converts it (which says only "Could not convert" for 1.5 or a number beyond the option's
/// integer type, and reads 010 as octal 8).
inline CLI::Validator integer_in(long long lo, long long hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        errno = 0;
        char* end = nullptr;
        const long long v = std::strtoll(text.c_str(), &end, 10);
        const bool whole = !text.empty() && end == text.c_str() + text.size() &&
                           !std::isspace(static_cast<unsigned char>(text[0]));
        if (!whole) return "'" + text + "' is not a whole number";
        // CLI11 reads a leading 0 as octal (010 is 8, 09 "Could not convert"): none given
        const std::size_t digits = text.find_first_not_of("+-");
        if (digits != std::string::npos && text[digits] == '0' && digits + 1 < text.size())
          return "'" + text + "': write the number without leading zeros";
        if (v < lo) return "'" + text + "' must be at least " + std::to_string(lo);  // (LLONG_MIN when below it)
        if (v > hi || errno == ERANGE) return "'" + text + "' must be at most " + std::to_string(hi);
        return {};
      },
      "");
}

/// A CLI11 check: a finite number in [lo, hi] (CLI::Range lets NaN through).
inline CLI::Validator finite_in(double lo, double hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        double v = 0;
        if (auto bad = read_number(text, v); !bad.empty()) return bad;
        if (!std::isfinite(v) || v < lo || v > hi)
          return "'" + text + "' " + (std::isfinite(v) ? "is outside" : "is not a finite number in") + " [" +
                 CLI::detail::to_string(lo) + ", " + CLI::detail::to_string(hi) + "]";
        return {};
      },
      "");
}

/// A CLI11 check: a number >= lo (CLI::PositiveNumber and NonNegativeNumber print their upper
/// bound, DBL_MAX, with 300 digits).
inline CLI::Validator at_least(double lo) {
  return CLI::Validator(
      [lo](std::string& text) -> std::string {
        double v = 0;
        if (auto bad = read_number(text, v); !bad.empty()) return bad;
        if (!std::isfinite(v) || v < lo) return "'" + text + "' must be at least " + CLI::detail::to_string(lo);
        return {};
      },
      "");
}

void add_train_command(CLI::App& app);  ///< nnvmc train CONFIG [key=value ...] [--resume DIR]
void add_eval_command(CLI::App& app);   ///< nnvmc eval CHECKPOINT [--steps N] ... [--json]
void add_scf_command(CLI::App& app);    ///< nnvmc scf MOLECULE [--basis B] [--uhf] [--json]
void add_ccsd_command(CLI::App& app);     ///< nnvmc ccsd MOLECULE [--basis B] [--cholesky TAU] ... [--triples] [--json]
void add_compare_command(CLI::App& app);  ///< nnvmc compare COMPARE.yaml [key=value ...] [--jobs K] (+ compare-cell)
void add_profile_command(CLI::App& app);  ///< nnvmc profile CONFIG [--molecules a,b] [--iterations N] [key=value ...]
void add_config_command(CLI::App& app);   ///< nnvmc config [CONFIG] [key=value ...] [--markdown]

}  // namespace nnvmc::app
