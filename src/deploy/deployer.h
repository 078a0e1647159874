// Deployer: the model lifecycle of a running server — deploy (load beside the serving
// version, check the tokenizer, gate, warm, then switch or start a canary), promote,
// abort, rollback — and, on the same background thread, the quality monitor, the
// automatic canary decision and the release of retired versions.
//
// A deploy that fails at any step (the file does not load, the tokenizer changed, the
// gate refuses) leaves the serving version untouched; the reason goes to the answer,
// the log and llmserve_deploys_total{result}. With a model root, `current` and
// `previous` follow what serves (deploy without canary, promote, rollback).
//
// Thread-safety: run() from any thread (jobs run one at a time on the deployer's
// thread, in order); status() from any thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "deploy/feedback.h"
#include "deploy/model_root.h"
#include "deploy/quality_gate.h"
#include "deploy/quality_monitor.h"
#include "deploy/version_set.h"
#include "engine/admission.h"
#include "metrics/metrics.h"

namespace llms {

// The automatic canary decision (canary_judge.h: a sequential test on asymptotic
// confidence sequences). Signals, each candidate vs stable, higher is worse:
//   quality   NLL per output token of sampled outputs under the stable model (nats)
//   errors    share of requests that ended "error"
//   latency   log of each request's mean inter-token latency
//   abnormal  share of completed outputs with an abnormal kind (a guard: aborts only)
//   feedback  people's ratings (POST /v1/feedback) received since the canary began,
//             with feedback_min > 0 (feedback.h: feedback_signal); a lower mean
//             rating is worse
// The candidate is aborted as soon as one signal says worse, and promoted once every
// signal but the guard says no worse and it has served at least `requests` (with the
// feedback signal on, a canary nobody rates is never promoted by itself).
struct CanaryAutoConfig {
  int requests = 0;                 // promote after at least this many candidate requests; 0: by hand
  double max_nll_increase = 0.3;    // nats per output token
  double max_error_rate_increase = 0.02;
  double max_abnormal_rate_increase = 0.05;
  double max_latency_ratio = 1.5;   // candidate / stable inter-token latency (geometric means)
  double alpha = 0.05;              // the test's level, over all signals
  int min_samples = 8;              // per side and signal, before it may decide
  int feedback_min = 0;             // ratings per side before feedback may decide; 0: not a signal
  double feedback_margin = 0.2;     // how much lower the candidate's mean rating may be (rating points)
};

// How a deploy makes room for the candidate.
enum class SwapMode {
  kAuto,    // beside the serving version when both fit in memory, else drain
  kBeside,  // always load beside (canaries and instant rollback need this)
  kDrain,   // hold new requests, let the running ones finish, unload, load, gate
};
Result<SwapMode> parse_swap_mode(const std::string& name);
const char* swap_mode_name(SwapMode m);

struct DeployConfig {
  SwapMode swap = SwapMode::kAuto;
  GateConfig gate;
  CanaryAutoConfig canary_auto;
  bool keep_previous = true;        // keep the replaced version loaded while memory allows
  double quality_interval_s = 0;    // 0: no periodic validation checks
  std::string quality_text_path;    // the validation text, read at each check ("": the gate text)
  bool auto_rollback = false;       // roll back a deployed version whose validation perplexity drifts
  double max_ppl_drift = 1.2;       // ... above this ratio to its own perplexity at deploy
  CrossScoringConfig cross;         // quality_monitor.h
  int threads = 0;                  // gate and monitor threads (0: one per core)
};

// What a deploy did, for its answer.
struct DeployOutcome {
  bool ok = false;
  std::string version;
  std::string result;               // "switched", "canary", "refused_load", "refused_tokenizer", "refused_gate", ...
  std::string message;
  GateResult gate;
};

class Deployer {
 public:
  // `root` may be null (a server started on one file: deploys need a model root).
  // `settings`: what the versions it loads are loaded with (their borrowed configs
  // outlive the deployer).
  Deployer(std::unique_ptr<ModelRoot> root, VersionSet& versions, DeployConfig config, VersionSettings settings,
           Registry& registry);
  ~Deployer();
  Deployer(const Deployer&) = delete;
  Deployer& operator=(const Deployer&) = delete;

  // The ratings the canary decision reads (feedback_min > 0); call before start().
  // `book` outlives the deployer.
  void set_feedback(const FeedbackBook* book) { feedback_ = book; }
  // Starts the background thread and the quality monitor (and measures the serving
  // version's validation perplexity, when checks are on).
  void start();
  // Ends the background thread (after the job it is running) and drops the jobs not
  // run: their closures hold HTTP exchanges, which must go before the HTTP server does.
  void stop();
  // Queues `job` for the deployer's thread (drops it once stopped).
  void run(std::function<void()> job);

  // These run on the deployer's thread (call them from a job).
  DeployOutcome deploy(const std::string& version, double canary_share);
  Status promote();
  Status abort_canary();
  Status rollback();
  // Scores every loaded version on the validation text, updates its gauges, and rolls
  // back a drifting version (auto_rollback).
  void check_quality();

  const ModelRoot* root() const { return root_.get(); }
  const DeployConfig& config() const { return config_; }
  // The last deploy's outcome, if any.
  std::optional<DeployOutcome> last_outcome() const;

 private:
  void thread_main();
  void tick();
  void decide_canary();
  std::vector<CanarySignal> canary_signals(ServingVersion& cand, ServingVersion& stable) const;
  // The feedback signal of the pair, from the ratings since the canary began.
  CanarySignal canary_feedback(const std::string& cand, const std::string& stable) const;
  void count_decision(const std::string& decision, const std::string& reason);
  // The validation text's tokens now (quality_text_path read again, or the gate text).
  Result<std::vector<int32_t>> validation_tokens(ServingVersion& v);
  // Its validation perplexity at deploy, the base of its drift (with checks on).
  void record_deploy_quality(ServingVersion& v);
  void roll_back_if_drifting(ServingVersion& v, double drift);
  DeployOutcome refuse(const std::string& version, const std::string& result, const std::string& message);
  DeployOutcome drain_and_swap(const std::string& name, VersionPtr serving);
  DeployOutcome switched(VersionPtr v, const GateResult& g, bool keep_previous, const std::string& how);
  AdmissionConfig admission() const;
  // What the loaded versions hold (ServingVersion::resident_bytes()), but `except`.
  int64_t held_bytes(const ServingVersion* except) const;
  // Before loading: whether the process's memory and the file at `model_path` fit under
  // the high memory watermark (an estimate without the candidate's KV pool).
  bool fits_beside(const std::string& model_path) const;
  // After loading: FAILED_PRECONDITION when the loaded versions and `cand` exceed the low
  // memory watermark together.
  Status check_side_by_side(const ServingVersion& cand) const;

  std::unique_ptr<ModelRoot> root_;
  VersionSet& versions_;
  DeployConfig config_;
  VersionSettings settings_;
  Family<Counter>& deploys_;
  Family<Counter>& canary_decisions_;
  Family<Counter>& quality_decisions_;
  ThreadPool pool_;
  std::vector<int32_t> gate_tokens_;  // the gate text of the current version
  int64_t last_quality_ns_ = 0;
  std::string rollback_eligible_;  // the version a deploy or promotion made current; "" after a rollback
  std::unique_ptr<QualityMonitor> monitor_;
  const FeedbackBook* feedback_ = nullptr;
  // Each side's ratings when the canary began: the feedback signal counts those since.
  struct FeedbackStart {
    std::string stable, candidate;
    MeanStream stable_ratings, candidate_ratings;
  };
  FeedbackStart feedback_start_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  bool stop_ = false;
  std::optional<DeployOutcome> last_;
  std::thread thread_;
};

}  // namespace llms
