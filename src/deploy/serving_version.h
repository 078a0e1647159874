// ServingVersion: one loaded version of the served model — its name and metadata, its
// chat template, its quality gate's results, and the model served with engines of its
// own (serving/served_model.h: KV cache, result cache, prefix cache and metrics are
// per version, so nothing computed by one version is served by another). Requests go
// to target(): the one engine, or the precision router over the version's variants.
//
// Shared by pointer: the version set holds the versions that take traffic, and every
// request in flight holds the version it started on, so a version retired by a deploy
// stays alive until its last request ends.
//
// Thread-safety: immutable after load() but for the engine (thread-safe) and the
// gate/monitor fields, which only the deployer's and monitor's thread write (under
// the mutex).
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "base/status.h"
#include "deploy/traffic_sampler.h"
#include "deploy/version_meta.h"
#include "engine/engine.h"
#include "eval/perplexity.h"
#include "eval/task_score.h"
#include "metrics/metrics.h"
#include "model/model.h"
#include "serving/precision_policy.h"
#include "serving/served_model.h"
#include "serving/serving_target.h"
#include "tokenizer/tokenizer.h"

namespace llms {

// How a candidate compared with the version serving when it was deployed.
struct GateResult {
  bool ran = false;
  bool passed = false;
  double kl = 0;            // mean KL(serving || candidate), nats per token
  double top1 = 0;          // top-1 agreement
  double ppl_ratio = 0;     // candidate perplexity / serving perplexity
  int64_t tokens = 0;       // tokens of gate text scored
  bool task_ran = false;    // task scores on --gate-reference (deploy/task_gate.h)
  TaskScores task;
  std::string reason;       // why it failed (or "passed: ...")
};

// What every version of a server loads with besides its own files: the server's
// settings, borrowed (the server's configuration outlives its versions and its
// deployer), and the listener of the prefix caches' block events.
struct VersionSettings {
  const EngineConfig* engine = nullptr;        // every engine's (a version's meta sets KV types); null: defaults
  const PrecisionConfig* precision = nullptr;  // the precision variants; null: none
  std::string chat_template;                   // the configured one ("" = the model's)
  std::shared_ptr<KvEventListener> kv_events;  // every engine publishes its blocks there; null: none
  double sample_share = 0;                     // of completed requests kept for cross-scoring (traffic_sampler.h)
  // The server's LoRA adapters: every version loads each (a deploy whose model one
  // does not fit fails); null: none.
  std::shared_ptr<LoraCatalog> loras;
  int64_t lora_memory = 0;  // each version's budget for resident adapters (--lora-memory; 0: none)
};

// The quality monitor's and the validation check's gauges of one version
// (docs/metrics.md), in the version's registry.
struct VersionQualityMetrics {
  explicit VersionQualityMetrics(Registry& r);
  Gauge& kl;               // llmserve_quality_kl: validation text, KL(stable || version)
  Gauge& perplexity;       // llmserve_quality_perplexity: validation text
  Gauge& ppl_drift;        // llmserve_quality_ppl_drift: perplexity / its own at deploy
  Gauge& ppl_vs_stable;    // llmserve_quality_ppl_vs_stable: perplexity / the stable version's
  Gauge& cross_perplexity; // quality_monitor.h
  Gauge& cross_kl;
  Gauge& stable_nll;
  Counter& scored_tokens;
  Counter& scored_outputs;
  Gauge& samples_pending;
};

struct VersionLoadOptions {
  std::string name;
  std::string model_path;
  VersionMeta meta;
  VersionSettings settings;
};

class ServingVersion {
 public:
  static Result<std::shared_ptr<ServingVersion>> load(const VersionLoadOptions& options);
  ~ServingVersion();

  const std::string& name() const { return name_; }
  const std::string& model_path() const { return model_path_; }
  const Model& model() const { return served_->model(); }
  const Tokenizer& tokenizer() const { return served_->tokenizer(); }
  // With precision variants (PrecisionConfig::variants), the most precise one's:
  // the model and engine the gate and the monitor look at.
  Engine& engine() { return served_->engine(); }
  const Engine& engine() const { return served_->engine(); }
  Registry& registry() { return *registry_; }
  // Where the version's requests go (a request's route: its `precision`).
  ServingTarget& target() { return served_->target(); }
  const ServingTarget& target() const { return served_->target(); }
  // The LoRA adapters bound to this version's model (ServedModel::add_adapter).
  LoraSet& loras() { return served_->loras(); }
  const LoraSet& loras() const { return served_->loras(); }
  Status add_adapter(const LoraSpec& spec) { return served_->add_adapter(spec); }
  // The weights and KV pools its engines hold (ServedModel::resident_bytes()).
  int64_t resident_bytes() const { return served_->resident_bytes(); }
  // Every engine of the version (the variants' too) refuses new requests / stops.
  void begin_drain();
  void stop();
  // The version's registry and each cheaper variant's engine registry, with the
  // labels /metrics shows them under (`version`, and `variant` for the variants).
  std::vector<LabeledRegistry> labeled_registries() const;
  const std::string& chat_template() const { return chat_template_; }
  // The template chat requests use: the configured one, else the model's.
  const std::string& effective_chat_template() const {
    return chat_template_.empty() ? tokenizer().chat_template() : chat_template_;
  }
  // Whether that template writes the tools it is given (probed once at load).
  bool template_renders_tools() const { return template_renders_tools_; }
  const VersionMeta& meta() const { return meta_; }
  // The KV types this version's engine runs with.
  DType k_type() const { return engine().config().kv.k_type; }
  DType v_type() const { return engine().config().kv.v_type; }

  GateResult gate() const;
  void set_gate(GateResult g);

  Gauge& quality_kl() { return quality_.kl; }
  Gauge& quality_perplexity() { return quality_.perplexity; }
  VersionQualityMetrics& quality() { return quality_; }
  // The observer on the primary engine that samples its traffic (owned by the engine).
  TrafficSampler* sampler() const { return sampler_; }
  // Its validation perplexity when it was deployed (0: not measured).
  double deploy_perplexity() const;
  void set_deploy_perplexity(double ppl);

 private:
  ServingVersion(std::string name, std::string path, VersionMeta meta);

  std::string name_;
  std::string model_path_;
  VersionMeta meta_;
  std::string chat_template_;
  bool template_renders_tools_ = false;
  std::unique_ptr<Registry> registry_;  // the primary engine's metrics: outlives served_
  std::unique_ptr<ServedModel> served_;
  VersionQualityMetrics quality_;
  TrafficSampler* sampler_ = nullptr;

  mutable std::mutex mu_;
  GateResult gate_;
  double deploy_ppl_ = 0;
};

}  // namespace llms
