#include "engine/stats_window.h"

#include <algorithm>

namespace llms {

template <typename T>
void StatsWindow::Ring<T>::push(const T& v) {
  ++pushed;
  if (slots.empty()) return;
  slots[static_cast<size_t>((pushed - 1) % static_cast<int64_t>(slots.size()))] = v;
}

template <typename T>
std::vector<T> StatsWindow::Ring<T>::in_order() const {
  const auto cap = static_cast<int64_t>(slots.size());
  const int64_t n = std::min(pushed, cap);
  std::vector<T> out;
  out.reserve(static_cast<size_t>(n));
  for (int64_t i = pushed - n; i < pushed; ++i) out.push_back(slots[static_cast<size_t>(i % cap)]);
  return out;
}

StatsWindow::StatsWindow(int capacity) : capacity_(capacity > 0 ? capacity : 0) {
  steps_.slots.resize(static_cast<size_t>(capacity_));
  requests_.slots.resize(static_cast<size_t>(capacity_));
}

void StatsWindow::record_step(const StepSample& s) {
  std::lock_guard<std::mutex> lock(mu_);
  steps_.push(s);
}

void StatsWindow::record_request(const RequestSample& r) {
  std::lock_guard<std::mutex> lock(mu_);
  requests_.push(r);
  prompt_tokens_ += r.prompt_tokens;
  completion_tokens_ += r.completion_tokens;
  ++by_reason_[static_cast<size_t>(r.reason)];
}

StatsWindowSnapshot StatsWindow::snapshot() const {
  StatsWindowSnapshot s;
  s.capacity = capacity_;
  std::lock_guard<std::mutex> lock(mu_);
  s.steps = steps_.in_order();
  s.requests = requests_.in_order();
  s.steps_total = steps_.pushed;
  s.requests_total = requests_.pushed;
  s.prompt_tokens_total = prompt_tokens_;
  s.completion_tokens_total = completion_tokens_;
  s.finished_by_reason = by_reason_;
  return s;
}

}  // namespace llms
