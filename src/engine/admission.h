// AdmissionController: decides at submit time whether a request may queue, so that
// overload is answered quickly and clearly instead of by growing queues or memory.
//   * bounded waiting queue, by requests and by queued prompt tokens -> RESOURCE_EXHAUSTED
//     (HTTP 429) with a retry-after hint;
//   * memory watermarks on KV-pool use and process memory (anonymous RSS) with hysteresis: above the high
//     mark new requests are refused (UNAVAILABLE, HTTP 503) until use falls below the
//     low mark;
//   * draining (shutdown) -> UNAVAILABLE.
//
// Thread-safety: admit()/release_waiting() from any thread; update_usage() from the
// engine thread; state() from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "base/status.h"

namespace llms {

struct AdmissionConfig {
  int max_waiting_requests = 1024;
  int64_t max_waiting_tokens = 1 << 22;  // prompt tokens queued, in all
  double kv_high = 1.0, kv_low = 1.0;    // refuse new requests above kv_high KV use, until below kv_low (1: off)
  double rss_high = 0.8, rss_low = 0.7;  // the same for process memory / memory limit
  int64_t memory_limit_bytes = 0;        // 0: the machine's (or cgroup's) memory

  // INVALID_ARGUMENT naming the config keys (max_waiting_requests, kv_high_watermark, ...).
  Status validate() const;
  // The low watermark in bytes of the memory limit in force, and its description for
  // errors ("the low memory watermark (X MiB: rss_low_watermark R of memory_limit_bytes
  // Y MiB)"): what weights and KV pools held together must fit under (Engine::create(),
  // several models, two versions of a deploy side by side).
  int64_t low_mark_bytes() const;
  std::string describe_low_mark() const;
};

struct AdmissionState {
  bool overloaded = false;   // above a watermark, refusing
  std::string reason;        // which mark, with the current numbers
  double kv_usage = 0;       // 0..1
  double rss_usage = 0;      // 0..1 of the memory limit
  int waiting_requests = 0;
  int64_t waiting_tokens = 0;
  bool draining = false;
  bool queue_full = false;   // the next request would be refused for want of a queue slot
};

class AdmissionController {
 public:
  explicit AdmissionController(const AdmissionConfig& config) : config_(config) {}

  // Reserves a queue slot for a request of `prompt_tokens`, or says why not.
  // `retry_after_s` gets a hint for RESOURCE_EXHAUSTED.
  Status admit(int64_t prompt_tokens, double* retry_after_s);
  // The request left the waiting queue (started running, or ended while waiting).
  void release_waiting(int64_t prompt_tokens);

  // New usage figures (fractions of capacity); applies the hysteresis.
  void update_usage(double kv_usage, double rss_usage);
  // The breaker is open and nothing is running: what could be released has been, so
  // refusing frees nothing more. Closes it; until use falls below the low mark, the
  // process-memory mark that reopens it is the use now plus the gap between the marks
  // (when that is above the high mark).
  void close_idle();
  bool overloaded() const;
  void set_draining(bool draining);
  // Hint for clients refused because the queue is full: roughly how long the queue
  // takes to drain at the recent completion rate.
  void set_retry_hint(double seconds) { retry_hint_s_.store(seconds); }

  AdmissionState state() const;

 private:
  AdmissionConfig config_;
  mutable std::mutex mu_;
  int waiting_requests_ = 0;
  int64_t waiting_tokens_ = 0;
  enum class Mark { kNone, kKv, kRss };
  double rss_high_now() const;         // mu_ held
  std::string reason_locked() const;  // mu_ held

  Mark open_mark_ = Mark::kNone;  // the breaker is open on this mark
  double rss_floor_ = 0;          // close_idle()'s figure, until use falls below rss_low
  double kv_usage_ = 0, rss_usage_ = 0;
  bool draining_ = false;
  std::atomic<double> retry_hint_s_{1.0};
};

}  // namespace llms
