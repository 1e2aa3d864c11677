#include "batching/einsum.hpp"

#include <cctype>

#include "core/errors.hpp"

namespace nnvmc::batching {

std::string EinsumSpec::text() const {
  std::string s;
  for (std::size_t i = 0; i < inputs.size(); ++i) s += (i ? "," : "") + inputs[i];
  return s + "->" + output;
}

EinsumSpec parse_einsum(const std::string& text) {
  const auto arrow = text.find("->");
  if (arrow == std::string::npos)
    throw InputError("einsum '" + text + "': needs an explicit '->' output");
  EinsumSpec spec;
  std::string cur;
  auto check = [&](const std::string& labels, const std::string& what) {
    for (std::size_t i = 0; i < labels.size(); ++i) {
      if (!std::isalpha(static_cast<unsigned char>(labels[i])))
        throw InputError("einsum '" + text + "': label '" + labels.substr(i, 1) + "' in " + what +
                         " is not a letter");
      if (labels.find(labels[i], i + 1) != std::string::npos)
        throw InputError("einsum '" + text + "': label '" + labels.substr(i, 1) + "' repeats in " +
                         what + " (diagonals are not supported)");
    }
  };
  for (char ch : text.substr(0, arrow)) {
    if (ch == ' ') continue;
    if (ch == ',') {
      spec.inputs.push_back(cur);
      cur.clear();
    } else {
      cur += ch;
    }
  }
  spec.inputs.push_back(cur);
  for (char ch : text.substr(arrow + 2))
    if (ch != ' ') spec.output += ch;
  for (std::size_t i = 0; i < spec.inputs.size(); ++i)
    check(spec.inputs[i], "operand " + std::to_string(i));
  check(spec.output, "the output");
  for (char l : spec.output) {
    bool found = false;
    for (const auto& in : spec.inputs) found = found || in.find(l) != std::string::npos;
    if (!found)
      throw InputError("einsum '" + text + "': output label '" + std::string(1, l) +
                       "' occurs in no operand");
  }
  return spec;
}

std::map<char, std::int64_t> label_extents(const EinsumSpec& spec,
                                           const std::vector<std::vector<std::int64_t>>& shapes) {
  if (shapes.size() != spec.inputs.size())
    throw InputError("einsum '" + spec.text() + "': expects " + std::to_string(spec.inputs.size()) +
                     " operands, got " + std::to_string(shapes.size()));
  std::map<char, std::int64_t> ext;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const auto& labels = spec.inputs[i];
    if (shapes[i].size() != labels.size())
      throw InputError("einsum '" + spec.text() + "': operand " + std::to_string(i) + " has rank " +
                       std::to_string(shapes[i].size()) + ", labels '" + labels + "'");
    for (std::size_t a = 0; a < labels.size(); ++a) {
      auto [it, fresh] = ext.emplace(labels[a], shapes[i][a]);
      if (!fresh && it->second != shapes[i][a])
        throw InputError("einsum '" + spec.text() + "': label '" + std::string(1, labels[a]) +
                         "' has extent " + std::to_string(it->second) + " and " +
                         std::to_string(shapes[i][a]));
    }
  }
  return ext;
}

}  // namespace nnvmc::batching
