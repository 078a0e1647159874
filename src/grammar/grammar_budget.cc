#include "grammar/grammar_budget.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/clock.h"

namespace llms {

WorkMeter::WorkMeter(int64_t max_work, double max_seconds, const std::atomic<bool>* cancel)
    : max_work_(max_work),
      max_seconds_(max_seconds),
      deadline_ns_(max_seconds > 0 ? now_ns() + static_cast<int64_t>(max_seconds * 1e9) : 0),
      cancel_(cancel) {}

bool WorkMeter::check() {
  if (stop_ == Stop::kNone) {
    if (max_work_ > 0 && used_ > max_work_) {
      stop_ = Stop::kWork;
    } else if (cancel_ != nullptr && cancel_->load(std::memory_order_relaxed)) {
      stop_ = Stop::kCancelled;
    } else if (deadline_ns_ > 0 && now_ns() > deadline_ns_) {
      stop_ = Stop::kTime;
    }
  }
  if (stop_ != Stop::kNone) {
    next_check_ = 0;
    return false;
  }
  next_check_ = used_ + kCheckEvery;
  if (max_work_ > 0) next_check_ = std::min(next_check_, max_work_ + 1);
  return true;
}

Status WorkMeter::status(std::string_view what, std::string_view work_name, std::string_view seconds_name) const {
  switch (stop_) {
    case Stop::kNone: return ok_status();
    case Stop::kCancelled: return Status(StatusCode::kCancelled, fmt::format("{} was cancelled", what));
    case Stop::kWork:
      return resource_exhausted(fmt::format("the grammar is too complex: {} needs more than {} work units (budget {})",
                                            what, max_work_, work_name));
    case Stop::kTime:
      return resource_exhausted(
          fmt::format("the grammar is too complex: {} takes more than {} s (budget {})", what, max_seconds_, seconds_name));
  }
  return ok_status();
}

}  // namespace llms
