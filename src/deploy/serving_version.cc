#include "deploy/serving_version.h"

#include <fmt/format.h>

#include "base/log.h"
#include "chat/chat_template.h"
#include "tools/quantizer.h"

namespace llms {

ServingVersion::ServingVersion(std::string name, std::string path, VersionMeta meta)
    : name_(std::move(name)),
      model_path_(std::move(path)),
      meta_(std::move(meta)),
      registry_(std::make_unique<Registry>()),
      quality_kl_(registry_->gauge("llmserve_quality_kl",
                                   "Mean KL divergence (nats/token) of the version on the gate text against its "
                                   "logits recorded at deploy, at its last check.")),
      quality_ppl_(registry_->gauge("llmserve_quality_perplexity",
                                    "Perplexity of the version on the gate text at its last check.")) {}

ServingVersion::~ServingVersion() {
  stop();  // every engine's requests end before the router their callbacks use goes
}

void ServingVersion::begin_drain() {
  for (auto& var : variants_) var.engine->begin_drain();
  if (engine_) engine_->begin_drain();
}

void ServingVersion::stop() {
  for (auto& var : variants_) {
    if (var.engine) var.engine->stop();
  }
  if (engine_) engine_->stop();
}

Result<std::shared_ptr<RequestHandle>> ServingVersion::submit(RequestParams params, const std::string& precision,
                                                              double* retry_after_s) {
  if (router_) return router_->submit(std::move(params), precision, retry_after_s);
  if (!precision.empty() && precision != "auto") {
    return invalid_argument(fmt::format(
        "precision '{}': this server holds one precision of the model (precision_variants is not set)", precision));
  }
  return engine_->submit(std::move(params), retry_after_s);
}

std::vector<LabeledRegistry> ServingVersion::labeled_registries() const {
  std::vector<LabeledRegistry> out{{registry_.get(), {{"version", name_}}}};
  for (const auto& var : variants_) out.push_back({var.registry.get(), {{"version", name_}, {"variant", var.name}}});
  return out;
}

Result<std::shared_ptr<ServingVersion>> ServingVersion::load(const VersionLoadOptions& o) {
  std::shared_ptr<ServingVersion> v(new ServingVersion(o.name, o.model_path, o.meta));
  static const PrecisionConfig kNoVariants;
  const PrecisionConfig& precision = o.settings.precision ? *o.settings.precision : kNoVariants;
  const std::vector<DType>& types = precision.variants;
  EngineConfig ec = o.settings.engine ? *o.settings.engine : EngineConfig{};
  if (o.meta.k_type) ec.kv.k_type = *o.meta.k_type;
  if (o.meta.v_type) ec.kv.v_type = *o.meta.v_type;
  if (types.empty()) {
    LLMS_ASSIGN_OR_RETURN(v->model_, Model::load(o.model_path));
  } else {
    LLMS_ASSIGN_OR_RETURN(v->model_, quantized_model(o.model_path, types.back(), ec.threads));
  }
  if (v->model_->config().synthetic) log_warn("{}: synthetic model with RANDOM weights; its text is noise", o.model_path);
  LLMS_ASSIGN_OR_RETURN(v->tokenizer_, Tokenizer::from_gguf(v->model_->file()));
  LLMS_ASSIGN_OR_RETURN(v->chat_template_, resolve_chat_template(o.settings.chat_template, *v->tokenizer_));
  v->template_renders_tools_ = chat_template_renders_tools(v->effective_chat_template());
  LLMS_ASSIGN_OR_RETURN(v->engine_, Engine::create(*v->model_, *v->tokenizer_, ec, v->registry_.get()));
  v->engine_->set_kv_events(o.settings.kv_events);
  v->engine_->start();
  if (!types.empty()) {
    std::vector<PrecisionVariant> routed;
    for (size_t i = 0; i + 1 < types.size(); ++i) {
      Variant var;
      var.name = std::string(dtype_name(types[i]));
      LLMS_ASSIGN_OR_RETURN(var.model, quantized_model(o.model_path, types[i], ec.threads));
      var.registry = std::make_unique<Registry>();
      LLMS_ASSIGN_OR_RETURN(var.engine, Engine::create(*var.model, *v->tokenizer_, ec, var.registry.get()));
      var.engine->set_kv_events(o.settings.kv_events);
      var.engine->start();
      routed.push_back({var.name, var.engine.get(), static_cast<uint64_t>(var.model->weights().bytes_per_token())});
      v->variants_.push_back(std::move(var));
    }
    routed.push_back({std::string(dtype_name(types.back())), v->engine_.get(),
                      static_cast<uint64_t>(v->model_->weights().bytes_per_token())});
    v->router_ = std::make_unique<PrecisionRouter>(std::move(routed), precision.policy, *v->registry_);
    log_info("version {}: precision variants {} (auto routing)", v->name_, v->router_->names());
  }
  log_info("version {}: {} loaded", v->name_, o.model_path);
  return v;
}

GateResult ServingVersion::gate() const {
  std::lock_guard<std::mutex> lock(mu_);
  return gate_;
}

void ServingVersion::set_gate(GateResult g) {
  std::lock_guard<std::mutex> lock(mu_);
  gate_ = std::move(g);
}

std::shared_ptr<const ReferenceLogprobs> ServingVersion::reference() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reference_;
}

void ServingVersion::set_reference(std::shared_ptr<const ReferenceLogprobs> ref) {
  std::lock_guard<std::mutex> lock(mu_);
  reference_ = std::move(ref);
}

}  // namespace llms
