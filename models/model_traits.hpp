#pragma once
/// @file model_traits.hpp
/// Questions about an ansatz by name, answered by the model registry without building one.
/// Torch-free, for code that plans runs (e.g. a comparison's cells).
#include <string>

namespace nnvmc {

/// Whether the ansatz `type` has parameters to train. @throws ConfigError for an unknown name.
bool ansatz_is_trainable(const std::string& type);

}  // namespace nnvmc
