#include "deploy/serving_version.h"

#include "base/log.h"
#include "chat/chat_template.h"

namespace llms {

VersionQualityMetrics::VersionQualityMetrics(Registry& r)
    : kl(r.gauge("llmserve_quality_kl", "Mean KL divergence (nats/token) of the version from the stable version on the "
                                        "validation text (the stable version: from itself with an F32 KV cache).")),
      perplexity(r.gauge("llmserve_quality_perplexity", "Perplexity of the version on the validation text.")),
      ppl_drift(r.gauge("llmserve_quality_ppl_drift",
                        "Validation perplexity / the version's own at deploy (auto_rollback acts on it).")),
      ppl_vs_stable(r.gauge("llmserve_quality_ppl_vs_stable", "Validation perplexity / the stable version's.")),
      cross_perplexity(r.gauge("llmserve_quality_cross_perplexity",
                               "Perplexity of the version's sampled outputs under the other version of the canary "
                               "pair.")),
      cross_kl(r.gauge("llmserve_quality_cross_kl",
                       "Mean KL(version || other version) on the version's sampled outputs, nats per token.")),
      stable_nll(r.gauge("llmserve_quality_stable_nll",
                         "Mean NLL per output token of the version's sampled outputs under the stable version.")),
      scored_tokens(r.counter("llmserve_quality_scored_tokens_total", "Output tokens of the version cross-scored.")),
      scored_outputs(r.counter("llmserve_quality_scored_outputs_total", "Outputs of the version cross-scored.")),
      samples_pending(r.gauge("llmserve_quality_samples_pending",
                              "Sampled outputs of the version waiting to be cross-scored.")) {}

ServingVersion::ServingVersion(std::string name, std::string path, VersionMeta meta)
    : name_(std::move(name)),
      model_path_(std::move(path)),
      meta_(std::move(meta)),
      registry_(std::make_unique<Registry>()),
      quality_(*registry_) {}

ServingVersion::~ServingVersion() {
  stop();  // every engine's requests end before the router their callbacks use goes
}

void ServingVersion::begin_drain() {
  if (served_) served_->target().begin_drain();
}

void ServingVersion::stop() {
  if (served_) served_->target().stop();
}

std::vector<LabeledRegistry> ServingVersion::labeled_registries() const {
  std::vector<LabeledRegistry> out{{registry_.get(), {{"version", name_}}}};
  for (const auto& [variant, registry] : served_->variant_registries()) {
    out.push_back({registry, {{"version", name_}, {"variant", variant}}});
  }
  return out;
}

Result<std::shared_ptr<ServingVersion>> ServingVersion::load(const VersionLoadOptions& o) {
  std::shared_ptr<ServingVersion> v(new ServingVersion(o.name, o.model_path, o.meta));
  static const PrecisionConfig kNoVariants;
  EngineConfig ec = o.settings.engine ? *o.settings.engine : EngineConfig{};
  if (o.meta.k_type) ec.kv.k_type = *o.meta.k_type;
  if (o.meta.v_type) ec.kv.v_type = *o.meta.v_type;
  LLMS_ASSIGN_OR_RETURN(v->served_, ServedModel::load(o.model_path, ec,
                                                      o.settings.precision ? *o.settings.precision : kNoVariants,
                                                      o.settings.kv_events, *v->registry_, [&](Engine& e) {
                                                        v->sampler_ = static_cast<TrafficSampler*>(&e.add_observer(
                                                            std::make_unique<TrafficSampler>(o.settings.sample_share, &v->quality_.samples_pending)));
                                                      }));
  v->loras().set_budget(o.settings.lora_memory);
  if (o.settings.loras) {
    for (const LoraSpec& spec : o.settings.loras->list()) LLMS_RETURN_IF_ERROR(v->add_adapter(spec));
  }
  LLMS_ASSIGN_OR_RETURN(v->chat_template_, resolve_chat_template(o.settings.chat_template, v->tokenizer()));
  v->template_renders_tools_ = chat_template_renders_tools(v->effective_chat_template());
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

}  // namespace llms

namespace llms {

double ServingVersion::deploy_perplexity() const {
  std::lock_guard<std::mutex> lock(mu_);
  return deploy_ppl_;
}

void ServingVersion::set_deploy_perplexity(double ppl) {
  std::lock_guard<std::mutex> lock(mu_);
  deploy_ppl_ = ppl;
}

}  // namespace llms
