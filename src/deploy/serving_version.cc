#include "deploy/serving_version.h"

#include "base/log.h"
#include "tokenizer/chat_template.h"

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
  if (engine_) engine_->stop();
}

Result<std::shared_ptr<ServingVersion>> ServingVersion::load(const VersionLoadOptions& o) {
  std::shared_ptr<ServingVersion> v(new ServingVersion(o.name, o.model_path, o.meta));
  LLMS_ASSIGN_OR_RETURN(v->model_, Model::load(o.model_path));
  if (v->model_->config().synthetic) log_warn("{}: synthetic model with RANDOM weights; its text is noise", o.model_path);
  LLMS_ASSIGN_OR_RETURN(v->tokenizer_, Tokenizer::from_gguf(v->model_->file()));
  LLMS_ASSIGN_OR_RETURN(v->chat_template_, resolve_chat_template(o.chat_template, *v->tokenizer_));
  v->template_renders_tools_ = chat_template_renders_tools(v->effective_chat_template());
  EngineConfig ec = o.engine;
  if (o.meta.k_type) ec.k_type = *o.meta.k_type;
  if (o.meta.v_type) ec.v_type = *o.meta.v_type;
  LLMS_ASSIGN_OR_RETURN(v->engine_, Engine::create(*v->model_, *v->tokenizer_, ec, v->registry_.get()));
  v->engine_->start();
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
