// AutoTuner: holds the step token budget (max_batch_tokens) and the running cap
// (max_running) where the inter-token latency target is met, from the engine's own
// measurements, within the operator's bounds.
//
// Model. A step's time is fitted as t = a + b * tokens + c * sequences (least squares
// over the last kWindow steps, refitted at each decision): a is the fixed cost of a
// pass, b the cost of a token's matrix work, c what each sequence adds (its attention,
// sampling and streaming). Every running sequence decodes one token per step, so its
// inter-token latency is the step time: the tuner wants t <= margin * itl target.
// The target holds for a share of the intervals (the SLO's percentile, 0.99 unless
// the operator chose another), so the fit's prediction is scaled by its tail: that
// percentile, over the window, of each step's measured time against its prediction
// (at least 1, at most 2). At p99, steps that run long now and then (a prefill chunk's
// attention, the machine's other work) lower the budget and cap until they too stay
// under the target; at p50 (a target on the typical interval, as a TPOT target on
// each request's mean interval is) they do not.
//
// Decision (every decision_steps steps, once the fit has kMinSamples points):
//   budget = the most tokens whose predicted step, with the sequences now running,
//            stays under the target; bounds [min_batch_tokens, max_batch_tokens];
//   cap    = the most sequences whose decode-only step stays under it; bounds
//            [1, max_running];
// without an ITL target the budget and cap stay at their upper bounds (throughput).
// It never oscillates: a new value is taken only when it differs from the current by
// more than `hysteresis` (20%). A lower value is taken in one move, since steps at the
// current one are predicted to miss the target; a higher one in at most a doubling per
// decision, so a steady load settles and a load step is followed in a few decisions
// without overshooting back and forth. With an ITL target the budget starts at its
// lower bound (the cap at its upper one), and the first decision comes as soon as the
// fit has kMinSamples steps and takes its values outright: a start at the upper bound
// under load ran steps far over the target until the fit had caught up.
//
// Modes: off (never constructed), observe (decides and reports, changes nothing), on.
//
// Thread-safety: engine thread only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace llms {

enum class AutotuneMode { kOff, kObserve, kOn };
const char* autotune_mode_name(AutotuneMode m);
Result<AutotuneMode> parse_autotune_mode(const std::string& name);

struct AutotuneBounds {
  int min_batch_tokens = 32;
  int max_batch_tokens = 512;
  int max_running = 64;
};

struct AutotuneDecision {
  int batch_tokens = 0;
  int max_running = 0;
  double predicted_step_s = 0;  // at the chosen budget with the sequences now running
  bool changed = false;         // differs from the previous decision
};

class AutoTuner {
 public:
  // percentile: the share of intervals the target holds for, in [0.5, 1].
  AutoTuner(AutotuneBounds bounds, double itl_target_s, double percentile = 0.99, double margin = 0.9,
            double hysteresis = 0.2, int decision_steps = 32);

  // One finished step: its tokens, sequences and time. Returns true when a decision
  // was made (read it with decision()).
  bool observe(int64_t tokens, int64_t sequences, double step_s);

  const AutotuneDecision& decision() const { return decision_; }
  // The fitted coefficients (a, b, c); zeros before the first fit.
  double fixed_s() const { return a_; }
  double per_token_s() const { return b_; }
  double per_sequence_s() const { return c_; }
  double predict(double tokens, double sequences) const { return a_ + b_ * tokens + c_ * sequences; }
  // The percentile of measured / predicted step time over the window, in [1, 2].
  double tail_factor() const { return tail_; }
  double percentile() const { return percentile_; }

  static constexpr size_t kWindow = 256;
  static constexpr size_t kMinSamples = 16;
  static constexpr double kMaxTail = 2.0;

 private:
  struct Sample {
    double tokens, sequences, seconds;
  };
  bool fit();
  void decide(double sequences_now, bool first_fit);
  static int approach(int current, int target, double hysteresis);

  AutotuneBounds bounds_;
  double itl_target_s_;
  double percentile_;
  double margin_;
  double hysteresis_;
  int decision_steps_;
  std::vector<Sample> samples_;  // ring of the last kWindow steps
  size_t next_ = 0;
  int64_t steps_ = 0;
  bool decided_ = false;
  double a_ = 0, b_ = 0, c_ = 0;
  double tail_ = 1;
  std::vector<double> ratios_;  // scratch of fit()
  AutotuneDecision decision_;
};

}  // namespace llms
