// The engine's intake from other threads (engine.h): a request's checks, admission,
// its sequence's making (arrival, deadline, KV salt) and the result cache's lookup.
#include <fmt/format.h>

#include "base/hash.h"
#include "engine/early_exit_policy.h"
#include "engine/engine.h"
#include "engine/slo.h"
#include "model/lora.h"

namespace llms {

Status Engine::validate_request(const RequestParams& p) const {
  if (auto e = check_request(p, runner_->vocab_size(), context_length_)) return invalid_argument(e->message);
  if (p.grammar && &p.grammar->vocab() != grammar_cache_.vocabulary().get()) {
    return invalid_argument("the grammar was compiled for another engine's vocabulary");
  }
  if (p.adapter && p.adapter->base_identity() != model_identity_) {
    return invalid_argument("the LoRA adapter was loaded for another base model than this engine's");
  }
  return ok_status();
}

Result<std::shared_ptr<RequestHandle>> Engine::submit(RequestParams params, double* retry_after_s) {
  double retry = 0;
  if (retry_after_s) *retry_after_s = 0;
  if (Status s = validate_request(params); !s.ok()) {
    metrics_.rejected.with({"invalid"}).inc();
    metrics_.finished.with({"rejected"}).inc();
    return s;
  }
  if (Status s = admission_.admit(static_cast<int64_t>(params.prompt.size()), &retry); !s.ok()) {
    const char* why = s.code() == StatusCode::kResourceExhausted ? "queue_full"
                      : admission_.state().draining                 ? "draining"
                                                                    : "memory";
    metrics_.rejected.with({why}).inc();
    metrics_.finished.with({"rejected"}).inc();
    if (retry_after_s) *retry_after_s = retry;
    return s;
  }
  auto seq = std::make_unique<Sequence>();
  seq->id = next_id_.fetch_add(1);
  seq->handle = std::make_shared<RequestHandle>(seq->id);
  seq->handle->set_cancel_hook([this] { wake(); });
  seq->arrival_ns = clock_() - std::max<int64_t>(0, params.setup_ns);
  const double timeout = params.timeout_s > 0 ? params.timeout_s : config_.default_timeout_s;
  seq->deadline_ns = seq->arrival_ns + static_cast<int64_t>(timeout * 1e9);
  seq->slo = resolve_slo(params, config_.slo);
  seq->blocks.salt = params.cache_salt;
  if (params.adapter) {  // an adapter's KV differs from the base's: blocks shared only under it
    HashBuilder h;
    h.add("lora").add_pod(params.cache_salt).add_pod(params.adapter->identity());
    seq->blocks.salt = h.finish128().lo | 1;  // never 0 (the shared scope)
  }
  seq->params = std::move(params);
  auto handle = seq->handle;
  {
    std::lock_guard<std::mutex> lock(mu_);
    inbox_.push_back(std::move(seq));
  }
  cv_.notify_one();
  return handle;
}

std::optional<CachedCompletion> Engine::cached(const RequestParams& params) {
  const auto key = result_key(params);
  if (!key || result_cache_.max_bytes() == 0) return std::nullopt;
  auto hit = result_cache_.lookup(*key);
  (hit ? metrics_.result_cache_hits : metrics_.result_cache_misses).inc();
  if (hit) metrics_.result_cache_seconds_saved.inc(hit->finish.timings.e2e_s);
  return hit;
}

std::optional<Hash128> Engine::result_key(const RequestParams& params) const {
  return ResultCache::key_for(early_exit_applies(config_, params) ? exit_identity_ : model_identity_, params);
}

}  // namespace llms
