/// libFuzzer target for the user-facing text readers: the run config (YAML file and key=value
/// overrides), molecule YAML and XYZ. Every input must either parse or throw an nnvmc::Error
/// (InputError → exit 2 in the CLI); anything else escaping (std::exception from yaml-cpp, a
/// crash, a sanitizer report) is a finding. A config that parses must read back from its resolved
/// YAML to the same config. Built and run by bench/fuzz_inputs.sh (not part of the test suite).
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/errors.hpp"
#include "core/system.hpp"

namespace {
void check_config(const std::string& text, const std::vector<std::string>& overrides) {
  nnvmc::Config c;
  try {
    c = nnvmc::parse_config(text, overrides, "fuzz.yaml");
  } catch (const nnvmc::Error&) {
    return;
  }
  const std::string resolved = nnvmc::to_yaml(c);
  const nnvmc::Config back = nnvmc::parse_config(resolved, {}, "resolved.yaml");  // must not throw
  if (nnvmc::to_yaml(back) != resolved) std::abort();                          // must round-trip
}

void check_system(nnvmc::System s) {
  try {
    s.validate();
  } catch (const nnvmc::Error&) {
    return;
  }
  if (s.n_electrons() <= 0 || s.n_up() < s.n_down() || !std::isfinite(s.nuclear_repulsion())) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  check_config(text, {});
  // The same bytes as overrides, one per line (key.path=value).
  std::vector<std::string> overrides;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) overrides.push_back(line);
  check_config("", overrides);
  try {
    check_system(nnvmc::parse_molecule_yaml(text, "fuzz.yaml"));
  } catch (const nnvmc::Error&) {
  }
  try {
    check_system(nnvmc::parse_xyz(text, "fuzz.xyz"));
  } catch (const nnvmc::Error&) {
  }
  return 0;
}
