// Monotonic time for latency measurement and deadlines.
#pragma once

#include <chrono>
#include <cstdint>

namespace llms {

using SteadyClock = std::chrono::steady_clock;

inline int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(SteadyClock::now().time_since_epoch()).count();
}

// Wall-clock seconds since the epoch (OpenAI `created` fields).
inline int64_t unix_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Wall-clock milliseconds since the epoch (time axes of the dashboard's samples).
inline int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class Stopwatch {
 public:
  Stopwatch() : start_(now_ns()) {}
  void reset() { start_ = now_ns(); }
  int64_t elapsed_ns() const { return now_ns() - start_; }
  double elapsed_s() const { return static_cast<double>(elapsed_ns()) * 1e-9; }

 private:
  int64_t start_;
};

}  // namespace llms
