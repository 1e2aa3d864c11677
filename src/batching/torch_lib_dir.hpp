#pragma once
/// @file torch_lib_dir.hpp
/// Where the libtorch this process runs against lives (no torch headers needed to ask).
#include <string>

namespace nnvmc::batching {

/// Folder of the libtorch_cpu library loaded by this process (found with dladdr), where the same
/// wheel's libtorch_cuda.so lives; the build-time path if dladdr cannot tell.
std::string loaded_torch_lib_dir();

}  // namespace nnvmc::batching
