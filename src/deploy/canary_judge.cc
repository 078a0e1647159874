#include "deploy/canary_judge.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace llms {

void MeanStream::add(double x) {
  ++n;
  const double d = x - mean;
  mean += d / static_cast<double>(n);
  m2 += d * (x - mean);
}

MeanStream MeanStream::bernoulli(int64_t k, int64_t n) {
  MeanStream s;
  s.n = n;
  if (n == 0) return s;
  s.mean = static_cast<double>(k) / static_cast<double>(n);
  s.m2 = static_cast<double>(k) * (1 - s.mean) * (1 - s.mean) + static_cast<double>(n - k) * s.mean * s.mean;
  return s;
}

MeanStream MeanStream::since(const MeanStream& earlier) const {
  MeanStream s;
  s.n = n - earlier.n;
  if (s.n <= 0) return {};
  if (earlier.n == 0) return *this;
  const auto total = static_cast<double>(n), before = static_cast<double>(earlier.n), after = static_cast<double>(s.n);
  s.mean = (total * mean - before * earlier.mean) / after;
  const double d = s.mean - earlier.mean;
  s.m2 = std::max(0.0, m2 - earlier.m2 - d * d * before * after / total);
  return s;
}

Interval confidence_sequence(const MeanStream& s, double alpha, double t_star) {
  if (s.n == 0) return {-INFINITY, INFINITY};
  const double t = static_cast<double>(s.n);
  const double l = -2 * std::log(alpha);
  const double rho2 = (l + std::log(l + 1)) / t_star;
  const double radius = std::sqrt(s.variance()) *
                        std::sqrt(2 * (t * rho2 + 1) / (t * t * rho2) * std::log(std::sqrt(t * rho2 + 1) / alpha));
  return {s.mean - radius, s.mean + radius};
}

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::kUndecided: return "undecided";
    case Verdict::kNoWorse: return "no_worse";
    case Verdict::kWorse: return "worse";
  }
  return "?";
}

SignalVerdict compare_signal(const CanarySignal& s, double alpha_each) {
  SignalVerdict v;
  v.candidate = confidence_sequence(s.candidate, alpha_each);
  v.stable = confidence_sequence(s.stable, alpha_each);
  if (s.candidate.n < s.min_samples || s.stable.n < s.min_samples) return v;
  const bool worse = v.candidate.lo - v.stable.hi > s.margin;
  const bool no_worse = v.candidate.hi - v.stable.lo <= s.margin;
  v.verdict = worse ? Verdict::kWorse : no_worse ? Verdict::kNoWorse : Verdict::kUndecided;
  return v;
}

CanaryVerdict judge_canary(std::span<const CanarySignal> signals, double alpha) {
  CanaryVerdict out;
  if (signals.empty()) return out;
  const double alpha_each = alpha / (2.0 * static_cast<double>(signals.size()));
  bool all_no_worse = true;
  for (const CanarySignal& s : signals) {
    const SignalVerdict v = compare_signal(s, alpha_each);
    if (v.verdict == Verdict::kWorse && out.reason.empty()) out.reason = s.name;
    all_no_worse = all_no_worse && (s.guard || v.verdict == Verdict::kNoWorse);
    out.figures += fmt::format("{}{}: {} candidate {:.4g} [{:.4g}, {:.4g}] n={} vs stable {:.4g} [{:.4g}, {:.4g}] n={} "
                               "(margin {:g}{})",
                               out.figures.empty() ? "" : "; ", s.name, verdict_name(v.verdict), s.candidate.mean,
                               v.candidate.lo, v.candidate.hi, s.candidate.n, s.stable.mean, v.stable.lo, v.stable.hi,
                               s.stable.n, s.margin, s.guard ? ", guard" : "");
  }
  out.verdict = !out.reason.empty() ? Verdict::kWorse : all_no_worse ? Verdict::kNoWorse : Verdict::kUndecided;
  return out;
}

}  // namespace llms
