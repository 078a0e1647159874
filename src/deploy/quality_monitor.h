// QualityMonitor: cross-scoring on live traffic while a canary runs. Each version's
// TrafficSampler (traffic_sampler.h) sets aside a share of its finished requests; the
// monitor's thread scores the candidate's samples teacher-forced by the stable version
// and the stable version's by the candidate (cross_score.h), within a budget of tokens
// per second, at the lowest CPU priority (nice 19 by default, one thread of its own):
// it takes the cores only when the engines leave them idle, and the budget bounds it
// even then. Under sustained saturation it falls behind: samples wait (at most 64 per
// version, then new ones are dropped) and the canary's quality signal stays undecided.
//
// What it publishes, per version (the version's registry, so /metrics labels them):
//   llmserve_quality_cross_perplexity  exp(mean NLL per output token) of the version's
//                                      outputs under the other version of the pair
//   llmserve_quality_cross_kl          mean KL(version || other) on those outputs
//   llmserve_quality_stable_nll        mean NLL per output token of the version's outputs
//                                      under the stable model (the canary's quality signal)
//   llmserve_quality_scored_tokens_total, llmserve_quality_scored_outputs_total
//   llmserve_quality_samples_pending      sampled outputs waiting to be scored
// and counts a candidate's output whose perplexity under the stable model is above the
// bound as abnormal (kind cross_perplexity). The streams start over when the pair
// (stable, candidate) changes.
//
// Thread-safety: nll_under_stable() and pair() from any thread; the rest is the
// monitor's thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "base/thread_pool.h"
#include "deploy/canary_judge.h"
#include "deploy/version_set.h"

namespace llms {

struct CrossScoringConfig {
  double share = 0.25;               // of each version's completed requests, while a canary runs (0: off)
  double tokens_per_s = 4000;        // teacher-forced tokens (both models' runs) per second, at most
  double max_cross_perplexity = 0;   // a candidate output above it is abnormal (0: off)
  int nice = 19;                     // the scoring thread's CPU priority (19: the lowest)
};

// The quality signal of the pair the monitor compares now.
struct PairQuality {
  std::string stable, candidate;
  MeanStream candidate_nll;  // per scored candidate output: mean NLL per token under the stable model
  MeanStream stable_nll;     // per scored stable output: the same (its own model)
};

class QualityMonitor {
 public:
  // `on_scored`: called on the monitor's thread after each scored sample (the deployer
  // wakes to decide).
  QualityMonitor(VersionSet& versions, CrossScoringConfig config, std::function<void()> on_scored);
  ~QualityMonitor();
  QualityMonitor(const QualityMonitor&) = delete;
  QualityMonitor& operator=(const QualityMonitor&) = delete;

  PairQuality pair() const;

 private:
  void thread_main();
  // Scores queued samples of the pair within the budget; returns whether it scored any.
  bool score_some(const VersionPtr& stable, const VersionPtr& cand);
  bool score_one(ServingVersion& writer, ServingVersion& other, bool writer_is_candidate, const TrafficSample& s);

  VersionSet& versions_;
  const CrossScoringConfig config_;
  std::function<void()> on_scored_;
  ThreadPool pool_{1};  // the monitor's thread alone
  double allowance_ = 0;  // tokens the budget allows now
  int64_t last_ns_ = 0;
  double kl_sum_[2] = {0, 0}, nll_sum_[2] = {0, 0};  // [candidate, stable] outputs, per output token
  int64_t tokens_[2] = {0, 0};

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  PairQuality pair_;
  std::thread thread_;
};

}  // namespace llms
