#pragma once
/// @file stop_request.hpp
/// The run's stop request: set by SIGINT/SIGTERM (Trainer::install_signal_handlers) or
/// Trainer::request_stop. The training loop checkpoints and stops at its next iteration; the
/// stages without a checkpoint of their own (burn-in, pretraining, the final evaluation) stop
/// at their next step by throwing Interrupted. Torch-free.
#include <string>

#include "core/errors.hpp"

namespace nnvmc {

/// A stage stopped because a stop was requested (exit code 1).
struct Interrupted : Error {
  using Error::Error;
};

/// A file of this name in a run's directory asks its training loop to stop as Ctrl-C does: a
/// checkpoint at the next iteration, then exit code 1 (`touch DIR/STOP`; under mpirun or a batch
/// system too). The run removes it when it stops.
inline constexpr const char* kStopFileName = "STOP";

/// Whether a stop was requested.
bool stop_requested();
/// Sets or clears the request.
void set_stop_requested(bool stop);
/// @throws Interrupted naming `stage` when a stop was requested.
void throw_if_stop_requested(const std::string& stage);

}  // namespace nnvmc
