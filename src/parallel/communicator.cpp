#include "parallel/communicator.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

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
    std::fprintf(stderr, "nnvmc: error [rank %d of %d]: %s\n", w.rank(), w.size(), message.c_str());
    std::fflush(stderr);
    w.abort(code);
  }
  std::fprintf(stderr, "nnvmc: error: %s\n", message.c_str());
  return code;
}

#ifndef NNVMC_HAVE_MPI
bool mpi_available() { return false; }
void init_world(int*, char***, bool) {}
std::unique_ptr<Communicator> make_self() { return make_single_process(); }
#endif

}  // namespace nnvmc::parallel
