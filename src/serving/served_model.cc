#include "serving/served_model.h"

#include <fmt/format.h>

#include "base/log.h"
#include "serving/engine_target.h"
#include "serving/precision_router.h"
#include "tokenizer/load_tokenizer.h"
#include "tools/quantizer.h"

namespace llms {

ServedModel::~ServedModel() {
  if (target_) target_->stop();
}

Result<std::unique_ptr<ServedModel>> ServedModel::load(const std::string& path, const EngineConfig& engine,
                                                       const PrecisionConfig& precision,
                                                       std::shared_ptr<KvEventListener> kv_events, Registry& registry,
                                                       const std::function<void(Engine&)>& before_start) {
  std::unique_ptr<ServedModel> m(new ServedModel());
  const std::vector<DType>& types = precision.variants;
  if (types.empty()) {
    LLMS_ASSIGN_OR_RETURN(m->model_, Model::load(path, engine.ranks, engine.parallel));
  } else if (engine.ranks != nullptr) {
    return unimplemented("precision variants under tensor or pipeline parallelism (each variant would need a group of its own)");
  } else {
    LLMS_ASSIGN_OR_RETURN(m->model_, quantized_model(path, types.back(), engine.threads));
  }
  m->loras_ = std::make_unique<LoraSet>(*m->model_, &registry);
  m->tensor_parallel_ = engine.ranks != nullptr;
  if (m->model_->config().synthetic) log_warn("{}: synthetic model with RANDOM weights; its text is noise", path);
  // The path's tokenizer, not the GGUF metadata alone: a Hugging Face directory's
  // tokenizer.json (and generation_config.json's sampling defaults) once models load from one.
  LLMS_ASSIGN_OR_RETURN(m->tokenizer_, load_tokenizer(path));
  LLMS_ASSIGN_OR_RETURN(m->engine_, Engine::create(*m->model_, *m->tokenizer_, engine, &registry));
  m->engine_->set_kv_events(kv_events);
  if (before_start) before_start(*m->engine_);
  m->engine_->start();
  if (types.empty()) {
    m->target_ = std::make_unique<EngineTarget>(*m->engine_);
  } else {
    LLMS_RETURN_IF_ERROR(m->load_variants(path, engine, precision, kv_events, registry));
  }
  return m;
}

Status ServedModel::load_variants(const std::string& path, const EngineConfig& engine, const PrecisionConfig& precision,
                                  const std::shared_ptr<KvEventListener>& kv_events, Registry& registry) {
  const std::vector<DType>& types = precision.variants;
  std::vector<PrecisionVariant> routed;
  for (size_t i = 0; i + 1 < types.size(); ++i) {
    Variant var;
    var.name = std::string(dtype_name(types[i]));
    LLMS_ASSIGN_OR_RETURN(var.model, quantized_model(path, types[i], engine.threads));
    var.registry = std::make_unique<Registry>();
    LLMS_ASSIGN_OR_RETURN(var.engine, Engine::create(*var.model, *tokenizer_, engine, var.registry.get()));
    var.engine->set_kv_events(kv_events);
    var.engine->start();
    routed.push_back({var.name, var.engine.get(), static_cast<uint64_t>(var.model->weights().bytes_per_token())});
    variants_.push_back(std::move(var));
  }
  routed.push_back({std::string(dtype_name(types.back())), engine_.get(),
                    static_cast<uint64_t>(model_->weights().bytes_per_token())});
  auto router = std::make_unique<PrecisionRouter>(std::move(routed), precision.policy, registry);
  log_info("{}: precision variants {} (auto routing)", path, router->names());
  target_ = std::move(router);
  return ok_status();
}

Status ServedModel::add_adapter(const LoraSpec& spec) {
  if (!variants_.empty()) {
    return unimplemented(fmt::format("adapter '{}': LoRA adapters with precision variants (an adapter binds to one "
                                     "model's weights)", spec.name));
  }
  if (tensor_parallel_) {
    return unimplemented(fmt::format("adapter '{}': LoRA adapters under tensor parallelism (a rank holds a share of "
                                     "each weight)", spec.name));
  }
  return loras_->add(spec);
}

namespace {

// An engine's model's owned weights and its KV pool, as Engine::create() counts them.
int64_t held_bytes(const Model& m, const Engine& e) {
  const KvConfig& kv = e.config().kv;
  const int64_t per_block = m.kv_config(1, kv.block_size, kv.k_type, kv.v_type).bytes_per_block();
  return m.weights_memory().owned_bytes + per_block * e.num_kv_blocks();
}

}  // namespace

int64_t ServedModel::resident_bytes() const {
  int64_t bytes = held_bytes(*model_, *engine_);
  for (const Variant& v : variants_) bytes += held_bytes(*v.model, *v.engine);
  return bytes;
}

std::vector<std::pair<std::string, Registry*>> ServedModel::variant_registries() const {
  std::vector<std::pair<std::string, Registry*>> out;
  for (const auto& v : variants_) out.emplace_back(v.name, v.registry.get());
  return out;
}

}  // namespace llms
