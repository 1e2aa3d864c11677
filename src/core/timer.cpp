#include "core/timer.hpp"

#include <set>

namespace nnvmc {

StageTimers::Scope::Scope(StageTimers& t, std::string stage)
    : t_(t), stage_(std::move(stage)), observer_(t.observer_), clock_(t.clock_) {
  if (observer_) observer_->begin(stage_);
  if (clock_) interval_ = clock_->begin();
  start_ = std::chrono::steady_clock::now();
}

StageTimers::Scope::~Scope() {
  if (observer_) try {
      observer_->end(stage_);
    } catch (...) {  // a destructor must not throw (a device wait's error shows at the next CUDA call)
    }
  auto& e = t_.stages_[stage_];
  e.calls += 1;
  if (clock_) {
    try {
      clock_->end(interval_);
      t_.uncollected_.emplace(std::make_pair(clock_, interval_), stage_);
      // return the events of long-finished scopes to the clock's pool now and then
      if (t_.uncollected_.size() >= 256) t_.collect(clock_, false);
      return;
    } catch (...) {  // a destructor must not throw: the host's time for this scope
    }
  }
  const std::chrono::duration<double> d = std::chrono::steady_clock::now() - start_;
  e.seconds += d.count();
}

void StageTimers::collect(IntervalClock* clock, bool wait) const {
  for (const auto& [id, seconds] : clock->harvest(wait)) {
    const auto it = uncollected_.find({clock, id});
    if (it == uncollected_.end()) continue;  // an interval this StageTimers did not open
    stages_[it->second].seconds += seconds;
    uncollected_.erase(it);
  }
}

const std::map<std::string, StageTimers::Entry>& StageTimers::stages() const {
  std::set<IntervalClock*> clocks;
  for (const auto& [key, stage] : uncollected_) clocks.insert(key.first);
  for (IntervalClock* c : clocks) collect(c, true);
  return stages_;
}

void StageTimers::set_clock(IntervalClock* clock) {
  if (clock_ && clock_ != clock) collect(clock_, true);
  clock_ = clock;
}

void StageTimers::reset() {
  stages();  // closed scopes' times are collected (and dropped) before the clear
  stages_.clear();
}

}  // namespace nnvmc
