#include "engine/request.h"

#include <chrono>

#include "base/check.h"

namespace llms {

bool RequestHandle::next(RequestEvent* out, int64_t timeout_ms) {
  std::unique_lock<std::mutex> lock(mu_);
  auto ready = [&] { return !events_.empty(); };
  if (timeout_ms < 0) {
    cv_.wait(lock, ready);
  } else if (!cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), ready)) {
    return false;
  }
  *out = std::move(events_.front());
  events_.pop_front();
  return true;
}

std::vector<RequestEvent> RequestHandle::drain() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<RequestEvent> out(std::make_move_iterator(events_.begin()), std::make_move_iterator(events_.end()));
  events_.clear();
  return out;
}

void RequestHandle::cancel() {
  std::function<void()> hook;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (cancelled_ || finished_) return;
    cancelled_ = true;
    hook = cancel_hook_;
  }
  if (hook) hook();
}

void RequestHandle::set_cancel_hook(std::function<void()> fn) {
  std::lock_guard<std::mutex> lock(mu_);
  cancel_hook_ = std::move(fn);
}

bool RequestHandle::cancelled() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cancelled_;
}

bool RequestHandle::finished() const {
  std::lock_guard<std::mutex> lock(mu_);
  return finished_;
}

void RequestHandle::set_notify(std::function<void()> fn) {
  std::lock_guard<std::mutex> lock(mu_);
  notify_ = std::move(fn);
}

void RequestHandle::push(RequestEvent event) {
  std::function<void()> notify;
  {
    std::lock_guard<std::mutex> lock(mu_);
    LLMS_CHECK(!finished_, "event after a request finished");
    if (std::holds_alternative<FinishEvent>(event)) finished_ = true;
    events_.push_back(std::move(event));
    notify = notify_;
  }
  cv_.notify_all();
  if (notify) notify();
}

}  // namespace llms
