#include "engine/admission.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>

namespace llms {

Status AdmissionController::admit(int64_t prompt_tokens, double* retry_after_s) {
  std::lock_guard<std::mutex> lock(mu_);
  *retry_after_s = 0;
  if (draining_) return unavailable("the server is shutting down and accepts no new requests");
  if (overloaded_) return unavailable("memory is above the high watermark (" + reason_ + "); try again later");
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

void AdmissionController::update_usage(double kv_usage, double rss_usage) {
  std::lock_guard<std::mutex> lock(mu_);
  kv_usage_ = kv_usage;
  rss_usage_ = rss_usage;
  if (!overloaded_) {
    if (kv_usage > config_.kv_high) {
      overloaded_ = true;
      reason_ = fmt::format("KV cache {:.0f}% used, high mark {:.0f}%", kv_usage * 100, config_.kv_high * 100);
    } else if (rss_usage > config_.rss_high) {
      overloaded_ = true;
      reason_ = fmt::format("process memory {:.0f}% of the limit, high mark {:.0f}%", rss_usage * 100,
                            config_.rss_high * 100);
    }
  } else if (kv_usage < config_.kv_low && rss_usage < config_.rss_low) {
    overloaded_ = false;
    reason_.clear();
  }
}

void AdmissionController::set_draining(bool draining) {
  std::lock_guard<std::mutex> lock(mu_);
  draining_ = draining;
}

AdmissionState AdmissionController::state() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {overloaded_, reason_, kv_usage_, rss_usage_, waiting_requests_, waiting_tokens_, draining_};
}

}  // namespace llms
