/// The MPI communicator (built when NNVMC_WITH_MPI is on). Host buffers only: device tensors
/// are copied to the host by tensor_comm.cpp before they reach here.
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "parallel/communicator.hpp"
#include "parallel/launcher.hpp"

namespace nnvmc::parallel {
namespace {

void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw std::runtime_error(std::string("MPI error in ") + what);
}

/// Adds the lifetime of the object to a counter of seconds.
class Stopwatch {
 public:
  explicit Stopwatch(double& total) : total_(total), start_(std::chrono::steady_clock::now()) {}
  ~Stopwatch() { total_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }

 private:
  double& total_;
  std::chrono::steady_clock::time_point start_;
};

std::vector<int> ints(const std::vector<std::int64_t>& v, std::vector<int>* displs) {
  std::vector<int> out(v.size());
  displs->assign(v.size(), 0);
  std::int64_t at = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] > INT32_MAX || at > INT32_MAX) throw std::length_error("MPI gather larger than 2^31 entries");
    out[i] = static_cast<int>(v[i]);
    (*displs)[i] = static_cast<int>(at);
    at += v[i];
  }
  return out;
}

class MpiCommunicator final : public Communicator {
 public:
  explicit MpiCommunicator(MPI_Comm comm) : comm_(comm) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    MPI_Comm local;
    MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &local_rank_);
    MPI_Comm_size(local, &local_size_);
    MPI_Comm_free(&local);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  int local_size() const override { return local_size_; }
  void allreduce_sum(double* data, std::size_t n) override {
    Stopwatch watch(seconds_);
    check(MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(n), MPI_DOUBLE, MPI_SUM, comm_), "allreduce");
  }
  void allreduce_max(double* data, std::size_t n) override {
    Stopwatch watch(seconds_);
    check(MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(n), MPI_DOUBLE, MPI_MAX, comm_), "allreduce");
  }
  void allgatherv(const double* send, double* recv, const std::vector<std::int64_t>& counts) override {
    Stopwatch watch(seconds_);
    std::vector<int> displs;
    const auto c = ints(counts, &displs);
    check(MPI_Allgatherv(send, c.at(rank_), MPI_DOUBLE, recv, c.data(), displs.data(), MPI_DOUBLE, comm_),
          "allgatherv");
  }
  void gatherv(const double* send, double* recv, const std::vector<std::int64_t>& counts, int root) override {
    Stopwatch watch(seconds_);
    std::vector<int> displs;
    const auto c = ints(counts, &displs);
    check(MPI_Gatherv(send, c.at(rank_), MPI_DOUBLE, recv, c.data(), displs.data(), MPI_DOUBLE, root, comm_),
          "gatherv");
  }
  std::vector<std::int64_t> allgather(std::int64_t value) override {
    Stopwatch watch(seconds_);
    std::vector<std::int64_t> out(size_);
    check(MPI_Allgather(&value, 1, MPI_INT64_T, out.data(), 1, MPI_INT64_T, comm_), "allgather");
    return out;
  }
  void broadcast(void* data, std::size_t bytes, int root) override {
    Stopwatch watch(seconds_);
    check(MPI_Bcast(data, static_cast<int>(bytes), MPI_BYTE, root, comm_), "broadcast");
  }
  void barrier() override {
    Stopwatch watch(seconds_);
    check(MPI_Barrier(comm_), "barrier");
  }
  [[noreturn]] void abort(int code) override {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);
  }
  std::string describe() const override { return "MPI (" + std::to_string(size_) + " ranks)"; }
  double seconds_in_collectives() const override { return seconds_; }

 private:
  MPI_Comm comm_;
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
  double seconds_ = 0;
};

void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

}  // namespace

bool mpi_available() { return true; }

void init_world(int* argc, char*** argv, bool force) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    if (!force && !launched_by_launcher()) return;  // plain `nnvmc ...`: one process, MPI untouched
    int provided = 0;
    MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
    std::atexit(finalize_at_exit);
  }
  // Errors come back as return codes (turned into exceptions), not as an abort inside MPI.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  set_world(std::make_unique<MpiCommunicator>(MPI_COMM_WORLD));
}

std::unique_ptr<Communicator> make_self() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) return make_single_process();
  return std::make_unique<MpiCommunicator>(MPI_COMM_SELF);
}

}  // namespace nnvmc::parallel
