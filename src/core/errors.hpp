#pragma once
/// @file errors.hpp
/// Typed exceptions used across nnvmc. Library code throws; only the command line
/// (src/app) turns them into messages and exit codes. No aborts in library code.
#include <stdexcept>
#include <string>

namespace nnvmc {

/// Base class of every nnvmc error.
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Bad user input: config keys/values, molecule files, CLI arguments (exit code 2).
struct InputError : Error {
  using Error::Error;
};

/// A config key path is unknown or its value has the wrong type/range.
struct ConfigError : InputError {
  using InputError::InputError;
};

/// A checkpoint/result file is missing, corrupt, or has the wrong format version.
struct CheckpointError : InputError {
  using InputError::InputError;
};

/// A file could not be written (disk full, permissions, I/O error) (exit code 1).
struct WriteError : Error {
  using Error::Error;
};

/// A numerical failure (non-finite values, singular matrices, no convergence).
struct NumericalError : Error {
  using Error::Error;
};

/// A memory budget cannot be met (e.g. a chunk of one walker does not fit).
struct BudgetError : Error {
  using Error::Error;
};

}  // namespace nnvmc
