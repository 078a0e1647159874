#include "engine/admission.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "base/memory.h"

namespace llms {

int64_t AdmissionConfig::low_mark_bytes() const {
  return static_cast<int64_t>(rss_low * static_cast<double>(effective_memory_limit(memory_limit_bytes)));
}

std::string AdmissionConfig::describe_low_mark() const {
  constexpr double kMiB = 1 << 20;
  return fmt::format("the low memory watermark ({:.1f} MiB: rss_low_watermark {} of memory_limit_bytes {:.1f} MiB)",
                     static_cast<double>(low_mark_bytes()) / kMiB, rss_low,
                     static_cast<double>(effective_memory_limit(memory_limit_bytes)) / kMiB);
}

Status AdmissionController::admit(int64_t prompt_tokens, double* retry_after_s) {
  std::lock_guard<std::mutex> lock(mu_);
  *retry_after_s = 0;
  if (draining_) return unavailable("the server is shutting down and accepts no new requests");
  if (open_mark_ != Mark::kNone) {
    *retry_after_s = 1;
    return unavailable("memory is above the high watermark (" + reason_locked() + "); try again later");
  }
  if (waiting_requests_ >= config_.max_waiting_requests) {
    *retry_after_s = std::max(1.0, std::ceil(retry_hint_s_.load()));
    return resource_exhausted(fmt::format("the waiting queue is full ({} requests)", waiting_requests_));
  }
  if (waiting_tokens_ + prompt_tokens > config_.max_waiting_tokens && waiting_requests_ > 0) {
    *retry_after_s = std::max(1.0, std::ceil(retry_hint_s_.load()));
    return resource_exhausted(fmt::format("the waiting queue holds {} prompt tokens (limit {})", waiting_tokens_,
                                          config_.max_waiting_tokens));
  }
  ++waiting_requests_;
  waiting_tokens_ += prompt_tokens;
  return ok_status();
}

void AdmissionController::release_waiting(int64_t prompt_tokens) {
  std::lock_guard<std::mutex> lock(mu_);
  --waiting_requests_;
  waiting_tokens_ -= prompt_tokens;
}

double AdmissionController::rss_high_now() const {
  return std::max(config_.rss_high, rss_floor_ + (config_.rss_high - config_.rss_low));
}

void AdmissionController::update_usage(double kv_usage, double rss_usage) {
  std::lock_guard<std::mutex> lock(mu_);
  kv_usage_ = kv_usage;
  rss_usage_ = rss_usage;
  if (rss_usage < config_.rss_low) rss_floor_ = 0;
  if (open_mark_ == Mark::kNone) {
    if (kv_usage > config_.kv_high) {
      open_mark_ = Mark::kKv;
    } else if (rss_usage > rss_high_now()) {
      open_mark_ = Mark::kRss;
    }
  } else if ((kv_usage < config_.kv_low || config_.kv_high >= 1.0) && rss_usage < config_.rss_low) {
    open_mark_ = Mark::kNone;
  }
}

void AdmissionController::close_idle() {
  std::lock_guard<std::mutex> lock(mu_);
  if (open_mark_ == Mark::kNone) return;
  open_mark_ = Mark::kNone;
  rss_floor_ = rss_usage_;  // reopens only past this plus the marks' gap
}

bool AdmissionController::overloaded() const {
  std::lock_guard<std::mutex> lock(mu_);
  return open_mark_ != Mark::kNone;
}

// The figures as they are now, not as they were when the breaker opened.
std::string AdmissionController::reason_locked() const {
  switch (open_mark_) {
    case Mark::kKv:
      return fmt::format("KV cache {:.0f}% used, high mark {:.0f}%, reopens below {:.0f}%", kv_usage_ * 100,
                         config_.kv_high * 100, config_.kv_low * 100);
    case Mark::kRss:
      return fmt::format("process memory {:.0f}% of the limit, high mark {:.0f}%, reopens below {:.0f}%",
                         rss_usage_ * 100, rss_high_now() * 100, config_.rss_low * 100);
    case Mark::kNone:
      break;
  }
  return "";
}

void AdmissionController::set_draining(bool draining) {
  std::lock_guard<std::mutex> lock(mu_);
  draining_ = draining;
}

AdmissionState AdmissionController::state() const {
  std::lock_guard<std::mutex> lock(mu_);
  AdmissionState s{open_mark_ != Mark::kNone, reason_locked(), kv_usage_, rss_usage_, waiting_requests_,
                   waiting_tokens_, draining_};
  s.queue_full = waiting_requests_ >= config_.max_waiting_requests;
  return s;
}

}  // namespace llms
