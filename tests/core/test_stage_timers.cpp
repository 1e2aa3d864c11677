/// StageTimers with an interval clock (on a GPU: CUDA events read later instead of a device
/// wait when each stage closes), driven here by a clock whose intervals last what the test says.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <stdexcept>

#include "core/timer.hpp"

namespace {

using nnvmc::IntervalClock;
using nnvmc::StageTimers;

/// Intervals last `seconds_of[id]`; an ended interval is "reached by the device" only after
/// reach_all() (a harvest with wait reaches every ended one, as a device wait does).
class ScriptedClock final : public IntervalClock {
 public:
  std::map<std::int64_t, double> seconds_of;
  int waits = 0;
  std::int64_t begin() override {
    open_.insert(next_);
    return next_++;
  }
  void end(std::int64_t id) override {
    if (!open_.erase(id)) throw std::logic_error("not open");
    ended_.insert(id);
  }
  std::vector<std::pair<std::int64_t, double>> harvest(bool wait) override {
    if (wait) ++waits, reached_.insert(ended_.begin(), ended_.end());
    std::vector<std::pair<std::int64_t, double>> out;
    for (auto it = ended_.begin(); it != ended_.end();) {
      if (!reached_.count(*it)) {
        ++it;
        continue;
      }
      out.emplace_back(*it, seconds_of[*it]);
      it = ended_.erase(it);
    }
    return out;
  }
  void reach_all() { reached_.insert(ended_.begin(), ended_.end()); }
  std::size_t pending() const { return open_.size() + ended_.size(); }

 private:
  std::int64_t next_ = 0;
  std::set<std::int64_t> open_, ended_, reached_;
};

TEST(StageTimers, WithAClockEachStageTakesItsIntervalsTimeWhenTheStagesAreRead) {
  ScriptedClock clock;
  StageTimers t;
  t.set_clock(&clock);
  clock.seconds_of = {{0, 2.0}, {1, 0.5}, {2, 0.25}, {3, 1.0}};
  {
    auto outer = t.scope("local_energy");               // interval 0
    { auto inner = t.scope("local_energy.laplacian"); }  // 1 ends while 0 is open
    { auto inner = t.scope("local_energy.potential"); }  // 2
  }
  { auto s = t.scope("optimizer"); }  // 3
  EXPECT_EQ(clock.waits, 0);          // closing a stage never waits for the device
  const auto& st = t.stages();        // one wait, for all of them
  EXPECT_EQ(clock.waits, 1);
  EXPECT_DOUBLE_EQ(st.at("local_energy").seconds, 2.0);
  EXPECT_DOUBLE_EQ(st.at("local_energy.laplacian").seconds, 0.5);
  EXPECT_DOUBLE_EQ(st.at("local_energy.potential").seconds, 0.25);
  EXPECT_DOUBLE_EQ(st.at("optimizer").seconds, 1.0);
  EXPECT_EQ(st.at("local_energy").calls, 1);
  EXPECT_EQ(clock.pending(), 0u);
}

TEST(StageTimers, StagesClosedInsideAnOpenStageAreCountedWhenReadFromWithinIt) {
  // the trainer writes its summary (reading the stages) inside its open "bookkeeping" stage
  ScriptedClock clock;
  StageTimers t;
  t.set_clock(&clock);
  clock.seconds_of = {{0, 3.0}, {1, 1.5}};
  auto bookkeeping = t.scope("bookkeeping");
  { auto s = t.scope("sampling"); }
  EXPECT_DOUBLE_EQ(t.stages().at("sampling").seconds, 1.5);
  EXPECT_EQ(t.stages().count("bookkeeping"), 0u);  // still open
}

TEST(StageTimers, ManyClosedStagesGoBackToTheClockWithoutAWait) {
  ScriptedClock clock;
  StageTimers t;
  t.set_clock(&clock);
  for (std::int64_t i = 0; i < 1000; ++i) clock.seconds_of[i] = 0.001;
  for (int i = 0; i < 600; ++i) {
    { auto s = t.scope("sampling"); }
    clock.reach_all();  // the device keeps up
  }
  EXPECT_EQ(clock.waits, 0);
  EXPECT_LT(clock.pending(), 256u);  // collected along the way, not held until read
  EXPECT_NEAR(t.stages().at("sampling").seconds, 0.6, 1e-9);
  EXPECT_EQ(t.stages().at("sampling").calls, 600);
}

TEST(StageTimers, SwitchingTheClockOffCollectsItsTimesAndReturnsToTheHostClock) {
  ScriptedClock clock;
  StageTimers t;
  t.set_clock(&clock);
  clock.seconds_of = {{0, 7.0}};
  { auto s = t.scope("gradient"); }
  t.set_clock(nullptr);  // before the clock goes
  EXPECT_EQ(clock.pending(), 0u);
  { auto s = t.scope("gradient"); }  // host time: small, not from the clock
  const auto& e = t.stages().at("gradient");
  EXPECT_EQ(e.calls, 2);
  EXPECT_GE(e.seconds, 7.0);
  EXPECT_LT(e.seconds, 8.0);
  t.reset();
  EXPECT_TRUE(t.stages().empty());
}

}  // namespace
