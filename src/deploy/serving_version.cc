#include "deploy/serving_version.h"

#include "base/log.h"
#include "chat/chat_template.h"

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
                                                      o.settings.kv_events, *v->registry_));
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

std::shared_ptr<const ReferenceLogprobs> ServingVersion::reference() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reference_;
}

void ServingVersion::set_reference(std::shared_ptr<const ReferenceLogprobs> ref) {
  std::lock_guard<std::mutex> lock(mu_);
  reference_ = std::move(ref);
}

}  // namespace llms
