// ServedModel: one model file, served — its weights, its tokenizer, and the engines
// that run it: one engine on the file as it is, or, with precision variants, one per
// variant, each quantized from the file at load (tools' quantizer) and held by a
// PrecisionRouter. It owns all of them; target() is where its requests go.
//
// Thread-safety: immutable after load() but for the engines and the target, which are
// thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "engine/engine.h"
#include "metrics/metrics.h"
#include "model/model.h"
#include "serving/lora_set.h"
#include "serving/precision_policy.h"
#include "serving/serving_target.h"
#include "tokenizer/tokenizer.h"

namespace llms {

class ServedModel {
 public:
  // Loads `path` (its tokenizer with load_tokenizer(), so a Hugging Face directory's
  // tokenizer.json and generation defaults come with it) and starts its engines, each
  // with `engine` as its config and publishing its prefix cache's block events to
  // `kv_events` (null: none). The primary engine (the most precise variant's) counts
  // into `registry`, which must outlive the model; each cheaper variant's engine into
  // a registry of its own.
  // `before_start` (may be empty) is called with the primary engine before it starts
  // (to add step observers).
  static Result<std::unique_ptr<ServedModel>> load(const std::string& path, const EngineConfig& engine,
                                                   const PrecisionConfig& precision,
                                                   std::shared_ptr<KvEventListener> kv_events, Registry& registry,
                                                   const std::function<void(Engine&)>& before_start = {});
  // Stops every engine first: the router's callbacks run on their threads.
  ~ServedModel();
  ServedModel(const ServedModel&) = delete;
  ServedModel& operator=(const ServedModel&) = delete;

  // The primary's model and engine: what a quality gate or monitor looks at.
  const Model& model() const { return *model_; }
  Engine& engine() { return *engine_; }
  const Engine& engine() const { return *engine_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  ServingTarget& target() { return *target_; }
  const ServingTarget& target() const { return *target_; }
  // The LoRA adapters bound to the primary model (serving/lora_set.h).
  LoraSet& loras() { return *loras_; }
  const LoraSet& loras() const { return *loras_; }
  // Loads `spec` into loras(); UNIMPLEMENTED with precision variants (an adapter binds
  // to one model's weights, and the router picks the variant after the adapter) and
  // under tensor parallelism (a rank holds a share of each weight).
  Status add_adapter(const LoraSpec& spec);

  // What its engines hold resident for good: each one's model's owned weights and its
  // KV pool (what Engine::create() checks against the memory limit), summed.
  int64_t resident_bytes() const;

  // Each cheaper variant's name and engine registry, cheapest first (none without variants).
  std::vector<std::pair<std::string, Registry*>> variant_registries() const;

 private:
  ServedModel() = default;
  Status load_variants(const std::string& path, const EngineConfig& engine, const PrecisionConfig& precision,
                       const std::shared_ptr<KvEventListener>& kv_events, Registry& registry);

  std::unique_ptr<Model> model_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<Engine> engine_;
  struct Variant {
    std::string name;
    std::unique_ptr<Model> model;
    std::unique_ptr<Registry> registry;
    std::unique_ptr<Engine> engine;
  };
  std::vector<Variant> variants_;  // the cheaper ones (the most precise is model_ and engine_)
  std::unique_ptr<ServingTarget> target_;
  std::unique_ptr<LoraSet> loras_;
  bool tensor_parallel_ = false;
};

}  // namespace llms
