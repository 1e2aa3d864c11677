#include "parallel/communicator.hpp"

#include "parallel/launcher.hpp"

#include <cstdio>
#include <thread>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string>

#include "core/errors.hpp"

namespace nnvmc::parallel {
namespace {

class SingleProcess final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void allreduce_sum(double*, std::size_t) override {}
  void allreduce_max(double*, std::size_t) override {}
  void allgatherv(const double* send, double* recv, const std::vector<std::int64_t>& counts) override {
    if (send != recv && counts.at(0) > 0) std::memmove(recv, send, sizeof(double) * counts[0]);
  }
  void gatherv(const double* send, double* recv, const std::vector<std::int64_t>& counts, int) override {
    allgatherv(send, recv, counts);
  }
  std::vector<std::int64_t> allgather(std::int64_t value) override { return {value}; }
  void broadcast(void*, std::size_t, int) override {}
  void barrier() override {}
  [[noreturn]] void abort(int code) override { std::exit(code); }
  std::string describe() const override { return "single process"; }
};

std::unique_ptr<Communicator>& world_slot() {
  static std::unique_ptr<Communicator> w = make_single_process();
  return w;
}

}  // namespace

bool Communicator::any(bool flag) {
  if (size() == 1) return flag;
  double v = flag ? 1.0 : 0.0;
  allreduce_max(&v, 1);
  return v > 0;
}

namespace {
/// Broadcasts `text` from `root` (every rank returns root's).
std::string broadcast_text(Communicator& comm, const std::string& text, int root) {
  std::uint64_t n = text.size();
  comm.broadcast(&n, sizeof n, root);
  std::string out = comm.rank() == root ? text : std::string(n, '\0');
  if (n > 0) comm.broadcast(out.data(), n, root);
  return out;
}

/// The first line where `mine` and `root` differ, as "'mine' where rank 0 has 'root'".
std::string first_differing_line(const std::string& mine, const std::string& root) {
  std::istringstream a(mine), b(root);
  std::string la, lb;
  while (true) {
    const bool more_a = static_cast<bool>(std::getline(a, la)), more_b = static_cast<bool>(std::getline(b, lb));
    if (!more_a && !more_b) return "the same lines with other line endings";
    if (!more_a) la = "(nothing)";
    if (!more_b) lb = "(nothing)";
    if (!more_a || !more_b || la != lb) return "'" + la + "' where rank 0 has '" + lb + "'";
  }
}
}  // namespace

std::string first_difference_across_ranks(Communicator& comm, const std::string& text) {
  if (comm.size() == 1) return {};
  const std::string root = broadcast_text(comm, text, 0);
  const bool differs = text != root;
  double first = differs ? double(comm.size() - comm.rank()) : 0.0;  // the lowest differing rank wins
  comm.allreduce_max(&first, 1);
  if (first <= 0) return {};
  const int rank = comm.size() - static_cast<int>(first);
  const std::string mine = comm.rank() == rank ? "rank " + std::to_string(rank) + " has " + first_differing_line(text, root)
                                               : std::string();
  return broadcast_text(comm, mine, rank);
}

std::unique_ptr<Communicator> make_single_process() { return std::make_unique<SingleProcess>(); }

Communicator& world() { return *world_slot(); }

std::unique_ptr<Communicator> set_world(std::unique_ptr<Communicator> comm) {
  auto old = std::move(world_slot());
  world_slot() = comm ? std::move(comm) : make_single_process();
  return old;
}

Partition partition(std::int64_t total, int rank, int size) {
  if (size < 1 || rank < 0 || rank >= size) throw std::invalid_argument("partition: bad rank/size");
  const std::int64_t base = total / size, extra = total % size;
  return {rank * base + std::min<std::int64_t>(rank, extra), base + (rank < extra ? 1 : 0)};
}

int fail(const std::string& message, int code) {
  Communicator& w = world();
  if (w.size() > 1) {
    // An error every rank meets (bad input, Ctrl-C) was printed once per rank, and their
    // simultaneous aborts garbled mpirun's own report. Rank 0 speaks first; a rank that fails
    // alone still speaks, two seconds later (rank 0's abort ends it sooner when both failed).
    if (w.rank() != 0) std::this_thread::sleep_for(std::chrono::seconds(2));
    std::fprintf(stderr, "nnvmc: error [rank %d of %d]: %s\n", w.rank(), w.size(), message.c_str());
    std::fflush(stderr);
    w.abort(code);
  }
  std::fprintf(stderr, "nnvmc: error: %s\n", message.c_str());
  return code;
}

bool launched_by_launcher() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "SLURM_STEP_NUM_TASKS"})
    if (std::getenv(v) != nullptr) return true;
  return false;
}

int launcher_world_size() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS"}) {
    const char* text = std::getenv(v);
    if (text == nullptr) continue;
    char* end = nullptr;
    const long n = std::strtol(text, &end, 10);
    if (end != text && *end == '\0' && n >= 1 && n < (1L << 30)) return static_cast<int>(n);
  }
  return 1;
}

std::string launch_prefix(int ranks) {
  if (ranks <= 1) return "";
  const bool slurm = std::getenv("SLURM_STEP_NUM_TASKS") != nullptr && std::getenv("OMPI_COMM_WORLD_SIZE") == nullptr;
  return (slurm ? "srun -n " : "mpirun -np ") + std::to_string(ranks) + " ";
}

#ifndef NNVMC_HAVE_MPI
bool mpi_available() { return false; }
void init_world(int*, char***, bool) {
  // Each of the processes would run the whole job and write the same files.
  if (const int n = launcher_world_size(); n > 1)
    throw InputError("started as one of " + std::to_string(n) +
                     " processes (mpirun/srun), but this nnvmc was built without MPI (NNVMC_WITH_MPI=OFF), so each "
                     "would run the whole job into the same files: rebuild with libopenmpi-dev installed, or run "
                     "without the launcher");
}
std::unique_ptr<Communicator> make_self() { return make_single_process(); }
#endif

}  // namespace nnvmc::parallel
