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

/// Watches a run's stop file while it lives (rank 0's trainer holds one): take_stop_file then
/// looks for it. On destruction a file left unconsumed (made as the run ended) is removed, so
/// that it does not stop the next resume at once.
class StopFileWatch {
 public:
  StopFileWatch() = default;
  explicit StopFileWatch(std::string path);
  StopFileWatch(StopFileWatch&& other) noexcept;
  StopFileWatch& operator=(StopFileWatch&& other) noexcept;
  StopFileWatch(const StopFileWatch&) = delete;
  StopFileWatch& operator=(const StopFileWatch&) = delete;
  ~StopFileWatch();

 private:
  void release() noexcept;
  std::string path_;
};

/// Whether the watched stop file exists (a filesystem error counts as no file); when it does it
/// is removed, said in the log, and a stop is requested (set_stop_requested). Called by every
/// stage's stop check (throw_if_stop_requested_on_any_rank, the training loop) on every rank:
/// only the rank that watches a file can find one.
bool take_stop_file();

/// Whether a stop was requested.
bool stop_requested();
/// Sets or clears the request.
void set_stop_requested(bool stop);
/// @throws Interrupted naming `stage` when a stop was requested.
void throw_if_stop_requested(const std::string& stage);

}  // namespace nnvmc
