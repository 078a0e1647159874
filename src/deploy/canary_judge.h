// The automatic canary decision as a sequential test: each signal (cross-scored NLL,
// error rate, abnormal-output rate, inter-token latency, and any a later feature adds)
// is a stream of per-request observations on each side, the candidate and the stable
// version. After every new observation each side's mean gets an anytime-valid
// confidence interval, an asymptotic confidence sequence (Waudby-Smith, Arbour, Sinha,
// Kennedy and Ramdas, "Time-uniform central limit theory and asymptotic confidence
// sequences", 2021: the Robbins normal mixture with a plug-in variance), so the
// verdict may be read after every request without inflating the error rates that
// repeated looks give a fixed-n test. Per signal, with higher meaning worse:
//   worse     the candidate's lower bound exceeds the stable's upper bound by more than
//             the margin
//   no worse  the candidate's upper bound is within the margin of the stable's lower
//             bound
// (a ratio is judged on logarithms: latency). The canary is worse as soon as one signal
// is worse, and no worse when every signal that is not a guard is (a guard, such as
// the abnormal-output rate, can only abort: a rare event's rate needs thousands of
// requests to be shown within a small margin). The level alpha is split over the signals and the two sides (a union bound).
// The intervals are asymptotic: below `min_samples` per side a signal is undecided.
//
// Thread-safety: values and pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace llms {

// Running mean and variance of a stream of observations (Welford).
struct MeanStream {
  int64_t n = 0;
  double mean = 0;
  double m2 = 0;  // sum of squared deviations from the mean

  void add(double x);
  double variance() const { return n > 1 ? m2 / static_cast<double>(n - 1) : 0; }
  // k successes in n trials as a stream of 0/1 observations.
  static MeanStream bernoulli(int64_t k, int64_t n);
  // The observations added to this stream since it was `earlier` (a copy taken then):
  // the pooled-moments formula run backwards.
  MeanStream since(const MeanStream& earlier) const;
  // The same observations with their signs flipped (a "higher is better" stream as a
  // signal, where higher is worse).
  MeanStream negated() const { return {n, -mean, m2}; }
};

struct Interval {
  double lo = 0, hi = 0;
};

// The two-sided asymptotic confidence sequence at level `alpha` for the stream's mean
// at its current length, tightest near `t_star` observations.
Interval confidence_sequence(const MeanStream& s, double alpha, double t_star = 16);

enum class Verdict { kUndecided, kNoWorse, kWorse };
const char* verdict_name(Verdict v);

// One signal of the decision: what each side observed and how much worse the candidate
// may be.
struct CanarySignal {
  std::string name;          // "quality", "errors", "abnormal", "latency", ...
  MeanStream candidate, stable;
  double margin = 0;         // how much larger the candidate's mean may be
  bool guard = false;        // can make the canary worse, not needed for "no worse"
  int64_t min_samples = 8;   // per side, before any verdict
};

struct SignalVerdict {
  Verdict verdict = Verdict::kUndecided;
  Interval candidate, stable;
};

SignalVerdict compare_signal(const CanarySignal& s, double alpha_each);

struct CanaryVerdict {
  Verdict verdict = Verdict::kUndecided;
  std::string reason;   // the first worse signal's name ("" unless worse)
  std::string figures;  // every signal: means, intervals, counts (for the log)
};

// The verdict over all signals at overall level `alpha`.
CanaryVerdict judge_canary(std::span<const CanarySignal> signals, double alpha);

}  // namespace llms
