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
#include "deploy/model_root.h"
#include "deploy/quality_gate.h"
#include "deploy/version_set.h"
#include "metrics/metrics.h"

namespace llms {

// When a candidate is worse: a rate (errors, abnormal outputs) higher than the current
// version's by more than the margin and by more than chance explains (one-sided
// two-proportion z-test at 1%), or a mean inter-token latency above the ratio.
struct CanaryAutoConfig {
  int requests = 0;                 // decide after this many finished candidate requests; 0: off
  double max_error_rate_increase = 0.02;
  double max_abnormal_rate_increase = 0.05;
  double max_latency_ratio = 1.5;   // candidate / current mean inter-token latency
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
  double quality_interval_s = 0;    // 0: no periodic quality checks
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

  // Starts the background thread (and records the serving version's quality
  // reference, when checks are on).
  void start();
  // Queues `job` for the deployer's thread.
  void run(std::function<void()> job);

  // These run on the deployer's thread (call them from a job).
  DeployOutcome deploy(const std::string& version, double canary_share);
  Status promote();
  Status abort_canary();
  Status rollback();
  // Scores every loaded version against its reference and updates its gauges.
  void check_quality();

  const ModelRoot* root() const { return root_.get(); }
  const DeployConfig& config() const { return config_; }
  // The last deploy's outcome, if any.
  std::optional<DeployOutcome> last_outcome() const;

 private:
  void thread_main();
  void tick();
  void decide_canary();
  DeployOutcome refuse(const std::string& version, const std::string& result, const std::string& message);
  DeployOutcome drain_and_swap(const std::string& name, VersionPtr serving);
  DeployOutcome switched(VersionPtr v, const GateResult& g, bool keep_previous, const std::string& how);
  Status record_reference(ServingVersion& v);
  bool fits_beside(const std::string& model_path) const;

  std::unique_ptr<ModelRoot> root_;
  VersionSet& versions_;
  DeployConfig config_;
  VersionSettings settings_;
  Family<Counter>& deploys_;
  Family<Counter>& canary_decisions_;
  ThreadPool pool_;
  std::vector<int32_t> gate_tokens_;  // the gate text of the current version
  int64_t last_quality_ns_ = 0;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  bool stop_ = false;
  std::optional<DeployOutcome> last_;
  std::thread thread_;
};

}  // namespace llms
