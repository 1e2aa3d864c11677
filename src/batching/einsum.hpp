#pragma once
/// @file einsum.hpp
/// Parsing of einsum-style specifications such as "xac,xbd,icjd->iajb". Torch-free.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace nnvmc::batching {

/// One einsum: a label string per operand and one for the output (explicit "->").
struct EinsumSpec {
  std::vector<std::string> inputs;  ///< labels of each operand, one char per axis
  std::string output;               ///< labels of the result, in its axis order
  std::string text() const;         ///< back to "ab,bc->ac"
};

/// Parses "ab,bc->ac". Labels are letters; every output label must occur in an input,
/// no label repeats inside one operand or the output. @throws InputError.
EinsumSpec parse_einsum(const std::string& text);

/// Extent of every label from the operand shapes (shapes[i] has inputs[i].size() axes).
/// @throws InputError on a rank or extent mismatch.
std::map<char, std::int64_t> label_extents(const EinsumSpec& spec,
                                           const std::vector<std::vector<std::int64_t>>& shapes);

}  // namespace nnvmc::batching
