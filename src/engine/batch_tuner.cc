#include "engine/batch_tuner.h"

#include <algorithm>
#include <cmath>

namespace llms {

DynamicBatchTuner::DynamicBatchTuner(BatchTunerBounds bounds, double utilization, double hysteresis)
    : bounds_(bounds), utilization_(utilization), hysteresis_(hysteresis) {
  bounds_.max_batch_size = std::max(1, bounds_.max_batch_size);
  bounds_.max_delay_ms = std::max(0.0, bounds_.max_delay_ms);
  decision_.max_batch_size = bounds_.max_batch_size;
  decision_.max_delay_ms = bounds_.max_delay_ms;
  arrivals_.reserve(kArrivalWindow);
  batches_.reserve(kBatchWindow);
}

void DynamicBatchTuner::arrival(int64_t t_ns) {
  if (arrivals_.size() < kArrivalWindow) {
    arrivals_.push_back(t_ns);
  } else {
    arrivals_[next_arrival_] = t_ns;
  }
  next_arrival_ = (next_arrival_ + 1) % kArrivalWindow;
}

// n arrivals over the span from the oldest to the newest give (n - 1) / span; when
// arrivals stop, the span up to now gives n / (now - oldest), which falls with time.
// The lower of the two.
double DynamicBatchTuner::arrival_rate(int64_t now_ns) const {
  const size_t n = arrivals_.size();
  if (n < 2) return 0;
  const auto [oldest, newest] = std::minmax_element(arrivals_.begin(), arrivals_.end());
  const double span_s = static_cast<double>(*newest - *oldest) * 1e-9;
  const double to_now_s = static_cast<double>(std::max(now_ns, *newest) - *oldest) * 1e-9;
  if (!(span_s > 0)) return 0;
  return std::min(static_cast<double>(n - 1) / span_s, static_cast<double>(n) / to_now_s);
}

void DynamicBatchTuner::fit() {
  double n = 0, sx = 0, st = 0, sxx = 0, sxt = 0;
  for (const Batch& b : batches_) {
    n += 1;
    sx += b.size;
    st += b.seconds;
    sxx += b.size * b.size;
    sxt += b.size * b.seconds;
  }
  const double d = n * sxx - sx * sx;
  beta_ = d > 1e-9 * n * sxx ? (n * sxt - sx * st) / d : 0;
  beta_ = std::max(0.0, beta_);  // a bigger batch never costs less; noise that says so is clipped
  alpha_ = std::max(0.0, (st - beta_ * sx) / n);
}

bool DynamicBatchTuner::batch_done(int size, double seconds, int64_t now_ns, int waiting) {
  if (size <= 0 || !(seconds > 0)) return false;
  const Batch b{static_cast<double>(size), seconds};
  if (batches_.size() < kBatchWindow) {
    batches_.push_back(b);
  } else {
    batches_[next_batch_] = b;
  }
  next_batch_ = (next_batch_ + 1) % kBatchWindow;
  if (batches_.size() < kMinBatches) return false;
  fit();
  const double rate = arrival_rate(now_ns);
  const auto moved = [&](double now, double then) { return std::fabs(now - then) > hysteresis_ * then; };
  if (!have_target_ || moved(rate, target_rate_) || moved(predict(target_size_), target_cost_)) {
    target_size_ = bounds_.max_batch_size;
    for (int b = 1; b <= bounds_.max_batch_size; ++b) {
      if (rate * predict(b) <= utilization_ * b) {
        target_size_ = b;
        break;
      }
    }
    target_rate_ = rate;
    target_cost_ = predict(target_size_);
    have_target_ = true;
  }
  // The size moves at most to twice or half per batch: the fit is trusted near the
  // sizes it was measured at. Up to a target the queue already fills, at once.
  const int current = decision_.max_batch_size;
  const bool queue_fills_target = target_size_ > current && waiting >= target_size_;
  const int new_size =
      queue_fills_target ? target_size_ : std::clamp(target_size_, std::max(1, current / 2), current * 2);
  // The wait for the size's last request at the rate the target was computed from.
  double delay_ms = new_size > 1 && target_rate_ > 0 ? 1e3 * (new_size - 1) / target_rate_ : 0;
  delay_ms = std::min(delay_ms, bounds_.max_delay_ms);
  if (bounds_.ttft_target_s > 0) delay_ms = std::min(delay_ms, 0.5e3 * bounds_.ttft_target_s);
  decision_.changed = new_size != current || delay_ms != decision_.max_delay_ms;
  decision_.max_batch_size = new_size;
  decision_.max_delay_ms = delay_ms;
  decision_.arrival_rate = rate;
  decision_.predicted_batch_s = predict(new_size);
  return true;
}

}  // namespace llms
