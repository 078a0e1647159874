#include "deploy/traffic_sampler.h"

#include <algorithm>
#include <cmath>

#include "engine/output_check.h"

namespace llms {

void TrafficSampler::on_finish(const Sequence& s, const FinishEvent& fe) {
  const bool completed = fe.reason == FinishReason::kStop || fe.reason == FinishReason::kLength;
  if (!completed && fe.reason != FinishReason::kError) return;  // cancelled, timed out, rejected: no verdict
  const auto output = std::span<const int32_t>(s.tokens).subspan(static_cast<size_t>(s.prompt_len));
  bool abnormal = false;
  if (completed) abnormal = !abnormal_output_kinds({output, s.text, fe.reason, s.params.ignore_eos}).empty();
  const int64_t gaps = s.generated() - 1;
  std::lock_guard<std::mutex> lock(mu_);
  streams_.errors.add(completed ? 0 : 1);
  if (!completed) return;
  streams_.abnormal.add(abnormal ? 1 : 0);
  if (gaps > 0 && s.first_token_ns > 0) {
    const double itl = static_cast<double>(s.last_token_ns - s.first_token_ns) * 1e-9 / static_cast<double>(gaps);
    streams_.log_itl.add(std::log(std::max(itl, 1e-9)));
  }
  if (share_ <= 0 || output.empty()) return;
  credit_ += share_;
  if (credit_ < 1) return;
  credit_ -= 1;
  if (pending_.size() >= max_pending_) {
    ++streams_.dropped;
    return;
  }
  pending_.push_back({s.tokens, s.prompt_len});
  if (pending_gauge_) pending_gauge_->set(static_cast<double>(pending_.size()));
}

std::vector<TrafficSample> TrafficSampler::take(size_t max) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<TrafficSample> out;
  while (!pending_.empty() && out.size() < max) {
    out.push_back(std::move(pending_.front()));
    pending_.pop_front();
  }
  if (pending_gauge_) pending_gauge_->set(static_cast<double>(pending_.size()));
  return out;
}

TrafficStreams TrafficSampler::streams() const {
  std::lock_guard<std::mutex> lock(mu_);
  return streams_;
}

void TrafficSampler::reset() {
  std::lock_guard<std::mutex> lock(mu_);
  streams_ = {};
  pending_.clear();
  credit_ = 0;
  if (pending_gauge_) pending_gauge_->set(0);
}

}  // namespace llms
