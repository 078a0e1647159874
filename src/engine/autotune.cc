#include "engine/autotune.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace llms {

const char* autotune_mode_name(AutotuneMode m) {
  switch (m) {
    case AutotuneMode::kOff: return "off";
    case AutotuneMode::kObserve: return "observe";
    case AutotuneMode::kOn: return "on";
  }
  return "?";
}

Result<AutotuneMode> parse_autotune_mode(const std::string& name) {
  if (name == "off") return AutotuneMode::kOff;
  if (name == "observe") return AutotuneMode::kObserve;
  if (name == "on") return AutotuneMode::kOn;
  return invalid_argument(fmt::format("unknown autotune mode '{}' (off, observe, on)", name));
}

AutoTuner::AutoTuner(AutotuneBounds bounds, double itl_target_s, double percentile, double margin, double hysteresis,
                     int decision_steps)
    : bounds_(bounds),
      itl_target_s_(itl_target_s),
      percentile_(std::clamp(percentile, 0.5, 1.0)),
      margin_(margin),
      hysteresis_(hysteresis),
      decision_steps_(std::max(1, decision_steps)) {
  // With a target, the budget starts at its floor: until the first fit nothing says
  // what a larger step costs, and a step over the target fails every sequence in it.
  decision_.batch_tokens = itl_target_s_ > 0 ? bounds_.min_batch_tokens : bounds_.max_batch_tokens;
  decision_.max_running = bounds_.max_running;
  samples_.reserve(kWindow);
  ratios_.reserve(kWindow);
}

bool AutoTuner::observe(int64_t tokens, int64_t sequences, double step_s) {
  if (tokens <= 0 || !(step_s > 0)) return false;
  const Sample s{static_cast<double>(tokens), static_cast<double>(sequences), step_s};
  if (samples_.size() < kWindow) {
    samples_.push_back(s);
  } else {
    samples_[next_] = s;
  }
  next_ = (next_ + 1) % kWindow;
  // The first decision as soon as the fit has its samples (the bounds it starts from
  // may be far over the target), then one every decision_steps.
  ++steps_;
  const bool now = !decided_ || steps_ % decision_steps_ == 0;
  if (!now || samples_.size() < kMinSamples || !fit()) return false;
  const bool first_fit = !decided_;
  decided_ = true;
  // The sequences the next steps will carry: the mean of the recent steps'.
  double seqs = 0;
  const size_t recent = std::min<size_t>(samples_.size(), static_cast<size_t>(decision_steps_));
  for (size_t i = 0; i < recent; ++i) seqs += samples_[(next_ + kWindow - 1 - i) % kWindow % samples_.size()].sequences;
  decide(seqs / static_cast<double>(recent), first_fit);
  return true;
}

// Least squares of t = a + b x + c y by the normal equations; when tokens and
// sequences move together (decode-only steps) the 3x3 system is singular, and the
// fit falls back to t = a + b x with c = 0.
bool AutoTuner::fit() {
  double n = 0, sx = 0, sy = 0, st = 0, sxx = 0, syy = 0, sxy = 0, sxt = 0, syt = 0;
  for (const Sample& s : samples_) {
    n += 1;
    sx += s.tokens;
    sy += s.sequences;
    st += s.seconds;
    sxx += s.tokens * s.tokens;
    syy += s.sequences * s.sequences;
    sxy += s.tokens * s.sequences;
    sxt += s.tokens * s.seconds;
    syt += s.sequences * s.seconds;
  }
  // | n  sx  sy  | |a|   | st  |
  // | sx sxx sxy | |b| = | sxt |
  // | sy sxy syy | |c|   | syt |
  const auto det3 = [](double m00, double m01, double m02, double m10, double m11, double m12, double m20, double m21,
                       double m22) {
    return m00 * (m11 * m22 - m12 * m21) - m01 * (m10 * m22 - m12 * m20) + m02 * (m10 * m21 - m11 * m20);
  };
  const double d = det3(n, sx, sy, sx, sxx, sxy, sy, sxy, syy);
  const double scale = n * sxx * syy;
  if (scale > 0 && std::fabs(d) > 1e-9 * scale) {
    a_ = det3(st, sx, sy, sxt, sxx, sxy, syt, sxy, syy) / d;
    b_ = det3(n, st, sy, sx, sxt, sxy, sy, syt, syy) / d;
    c_ = det3(n, sx, st, sx, sxx, sxt, sy, sxy, syt) / d;
  } else {
    const double d2 = n * sxx - sx * sx;
    if (!(d2 > 0)) return false;  // every step the same size: nothing to fit
    b_ = (n * sxt - sx * st) / d2;
    a_ = (st - b_ * sx) / n;
    c_ = 0;
  }
  // Costs are not negative; a noisy fit that says so is clipped.
  a_ = std::max(0.0, a_);
  c_ = std::max(0.0, c_);
  if (!(b_ > 0)) return false;
  ratios_.clear();
  for (const Sample& s : samples_) ratios_.push_back(s.seconds / predict(s.tokens, s.sequences));
  const auto q = ratios_.begin() + static_cast<ptrdiff_t>(percentile_ * static_cast<double>(ratios_.size() - 1));
  std::nth_element(ratios_.begin(), q, ratios_.end());
  tail_ = std::clamp(*q, 1.0, kMaxTail);
  return true;
}

int AutoTuner::approach(int current, int target, double hysteresis) {
  if (std::abs(target - current) <= hysteresis * current) return current;
  // Down in one move (every step at the current value is predicted to miss the
  // target); up by at most a doubling per decision.
  return std::min(target, current * 2);
}

void AutoTuner::decide(double seqs, bool first_fit) {
  int budget = bounds_.max_batch_tokens, cap = bounds_.max_running;
  if (itl_target_s_ > 0) {
    const double t = margin_ * itl_target_s_ / tail_;
    budget = static_cast<int>(std::floor((t - a_ - c_ * seqs) / b_));
    cap = static_cast<int>(std::floor((t - a_) / (b_ + c_)));
  }
  budget = std::clamp(budget, bounds_.min_batch_tokens, bounds_.max_batch_tokens);
  cap = std::clamp(cap, 1, bounds_.max_running);
  // The first fit's values are taken outright (the start was a guess).
  const int new_budget = first_fit ? budget : approach(decision_.batch_tokens, budget, hysteresis_);
  const int new_cap = first_fit ? cap : approach(decision_.max_running, cap, hysteresis_);
  decision_.changed = new_budget != decision_.batch_tokens || new_cap != decision_.max_running;
  decision_.batch_tokens = new_budget;
  decision_.max_running = new_cap;
  decision_.predicted_step_s = predict(new_budget, std::min<double>(seqs, new_cap));
}

}  // namespace llms
