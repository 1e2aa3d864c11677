#pragma once
/// @file communicator.hpp
/// Processes of one run (MPI ranks) and the collective operations nnvmc needs, on host buffers.
/// Neither mpi.h nor torch is included here: the MPI implementation lives in
/// mpi_communicator.cpp (built when NNVMC_WITH_MPI is on), tensor helpers in tensor_comm.hpp.
///
/// Every collective must be called by all ranks of the communicator in the same order.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace nnvmc::parallel {

/// A group of processes. The single-process implementation (size 1) makes every collective a
/// copy, so code written against this interface runs unchanged without MPI.
class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// Rank within this node (one GPU per local rank); 0 for a single process.
  virtual int local_rank() const { return 0; }
  /// Ranks on this node (sharing its memory); 1 for a single process.
  virtual int local_size() const { return 1; }
  bool is_root() const { return rank() == 0; }

  /// In place: data[i] ← Σ_ranks data[i]. @param n entries (same on all ranks)
  virtual void allreduce_sum(double* data, std::size_t n) = 0;
  /// In place: data[i] ← max_ranks data[i].
  virtual void allreduce_max(double* data, std::size_t n) = 0;
  /// Concatenation in rank order of every rank's `send` (counts[r] doubles from rank r) into
  /// `recv` (Σ counts doubles), on every rank. counts must be the same on all ranks.
  virtual void allgatherv(const double* send, double* recv, const std::vector<std::int64_t>& counts) = 0;
  /// Like allgatherv, but only `root` receives (recv may be null elsewhere).
  virtual void gatherv(const double* send, double* recv, const std::vector<std::int64_t>& counts, int root) = 0;
  /// Every rank's one value, in rank order.
  virtual std::vector<std::int64_t> allgather(std::int64_t value) = 0;
  /// Copies `bytes` bytes at `data` from `root` to every rank.
  virtual void broadcast(void* data, std::size_t bytes, int root) = 0;
  virtual void barrier() = 0;
  /// Ends all ranks at once (MPI_Abort) with exit code `code`; after printing, never returns.
  [[noreturn]] virtual void abort(int code) = 0;
  /// "MPI (n ranks)" or "single process".
  virtual std::string describe() const = 0;
  /// Wall-clock seconds this rank has spent inside collectives so far (including waiting for
  /// slower ranks); 0 for the single process.
  virtual double seconds_in_collectives() const { return 0.0; }

  /// True on every rank when `flag` is true on any rank (e.g. a stop request seen by one rank).
  bool any(bool flag);
};

/// Collective: "" on every rank when every rank's `text` equals rank 0's; otherwise, on every
/// rank, the same description of the first rank that differs and its first differing line:
/// "rank 1 has 'walkers: 32' where rank 0 has 'walkers: 16'".
std::string first_difference_across_ranks(Communicator& comm, const std::string& text);

/// The one-process communicator.
std::unique_ptr<Communicator> make_single_process();

/// True when nnvmc was built with MPI (NNVMC_WITH_MPI).
bool mpi_available();

/// Initialises MPI when the build has it and the process was started by mpirun/srun (or
/// `force`), and installs the MPI communicator as world(); otherwise world() stays the single
/// process. Call once at the start of main. MPI is finalised at exit.
void init_world(int* argc, char*** argv, bool force = false);

/// The communicator of this run: all ranks (MPI_COMM_WORLD) or the single process.
Communicator& world();

/// Replaces world() (tests run a one-rank reference inside a multi-rank job); returns the
/// previous one. Pass nullptr to restore the single process.
std::unique_ptr<Communicator> set_world(std::unique_ptr<Communicator> comm);

/// With MPI: a communicator of this process alone (MPI_COMM_SELF); else make_single_process().
std::unique_ptr<Communicator> make_self();

/// The walkers [offset, offset + count) a rank owns out of `total`: contiguous blocks in rank
/// order, the first total % size ranks one walker more.
struct Partition {
  std::int64_t offset = 0;
  std::int64_t count = 0;
};
Partition partition(std::int64_t total, int rank, int size);

/// Prints "nnvmc: error[rank r]: message" to stderr and, when more than one rank runs, ends all
/// of them (MPI_Abort, exit code `code`), so that no rank waits forever in a collective. With one
/// rank it returns `code` for main to return.
int fail(const std::string& message, int code);

}  // namespace nnvmc::parallel
