#include "engine/engine_config.h"

#include <fmt/format.h>

#include "kv/kv_layout.h"
#include "model/early_exit.h"

namespace llms {

const char* batching_policy_name(BatchingPolicy p) {
  switch (p) {
    case BatchingPolicy::kContinuous: return "continuous";
    case BatchingPolicy::kDynamic: return "dynamic";
    case BatchingPolicy::kNone: return "none";
  }
  return "?";
}

const char* speculative_mode_name(SpeculativeMode m) {
  switch (m) {
    case SpeculativeMode::kOff: return "off";
    case SpeculativeMode::kNgram: return "ngram";
    case SpeculativeMode::kDraft: return "draft";
  }
  return "?";
}

Result<SpeculativeMode> parse_speculative_mode(const std::string& name) {
  if (name == "off" || name == "none") return SpeculativeMode::kOff;
  if (name == "ngram") return SpeculativeMode::kNgram;
  if (name == "draft") return SpeculativeMode::kDraft;
  return invalid_argument(fmt::format("unknown speculative mode '{}' (off, ngram, draft)", name));
}

Result<BatchingPolicy> parse_batching_policy(const std::string& name) {
  if (name == "continuous") return BatchingPolicy::kContinuous;
  if (name == "dynamic") return BatchingPolicy::kDynamic;
  if (name == "none") return BatchingPolicy::kNone;
  return invalid_argument(fmt::format("unknown batching policy '{}' (continuous, dynamic, none)", name));
}

namespace {

Status bad(const char* field, const std::string& why) { return invalid_argument(fmt::format("{}: {}", field, why)); }

}  // namespace

Status BatchingConfig::validate() const {
  if (max_batch_tokens < 1) return bad("max_batch_tokens", "must be >= 1");
  if (max_running < 1) return bad("max_running", "must be >= 1");
  if (max_batch_size < 1) return bad("max_batch_size", "must be >= 1");
  if (max_delay_ms < 0) return bad("max_delay_ms", "must be >= 0");
  if (!(long_job_factor >= 1)) return bad("long_job_factor", "must be >= 1");
  if (!(long_job_share > 0 && long_job_share <= 1)) return bad("long_job_share", "must be in (0, 1]");
  if (!(aging_s > 0)) return bad("aging", "must be > 0");
  return ok_status();
}

Status KvConfig::validate() const {
  LLMS_RETURN_IF_ERROR(check_kv_block_size(block_size, "kv_block_size"));
  if (cache_bytes < 0) return bad("kv_cache_memory", "must be >= 0");
  return ok_status();
}

Status AdmissionConfig::validate() const {
  if (max_waiting_requests < 0) return bad("max_waiting_requests", "must be >= 0");
  if (max_waiting_tokens < 0) return bad("max_waiting_tokens", "must be >= 0");
  auto ratio = [](double v) { return v > 0.0 && v <= 1.0; };
  if (!ratio(kv_high) || !ratio(kv_low) || kv_low > kv_high) {
    return bad("kv_low_watermark, kv_high_watermark", "need 0 < low <= high <= 1");
  }
  if (!ratio(rss_high) || !ratio(rss_low) || rss_low > rss_high) {
    return bad("rss_low_watermark, rss_high_watermark", "need 0 < low <= high <= 1");
  }
  if (memory_limit_bytes < 0) return bad("memory_limit_bytes", "must be >= 0");
  return ok_status();
}

Status SloConfig::validate() const {
  for (const auto& [name, v] : {std::pair{"slo_ttft_ms", interactive.ttft_ms}, {"slo_itl_ms", interactive.itl_ms},
                                {"slo_batch_ttft_ms", batch.ttft_ms}, {"slo_batch_itl_ms", batch.itl_ms}}) {
    if (!(v >= 0)) return bad(name, "must be >= 0 (0: no target)");
  }
  if (!(percentile >= 0.5 && percentile <= 1)) return bad("slo_percentile", "must be in [0.5, 1]");
  if (autotune_min_batch_tokens < 1) return bad("autotune_min_batch_tokens", "must be >= 1");
  return ok_status();
}

Status SpeculativeConfig::validate() const {
  if (tokens < 1 || tokens > 16) return bad("spec_tokens", fmt::format("{} is not in 1..16", tokens));
  if (ngram_max < 1 || ngram_max > 8) return bad("spec_ngram_max", fmt::format("{} is not in 1..8", ngram_max));
  if ((mode == SpeculativeMode::kDraft) != !draft_model.empty()) {
    return bad("draft_model", "is needed with speculative = draft, and only then");
  }
  return ok_status();
}

Status EngineConfig::validate() const {
  LLMS_RETURN_IF_ERROR(batching.validate());
  if (stats_window < 0 || stats_window > kMaxStatsWindow) {
    return bad("stats_window", fmt::format("{} is not in 0..{}", stats_window, kMaxStatsWindow));
  }
  LLMS_RETURN_IF_ERROR(kv.validate());
  if (result_cache_bytes < 0) return bad("result_cache_bytes", "must be >= 0");
  if (context_length < 0) return bad("context_length", "must be >= 0");
  LLMS_RETURN_IF_ERROR(admission.validate());
  if (!(default_timeout_s > 0)) return bad("request_timeout", "must be > 0");
  LLMS_RETURN_IF_ERROR(slo.validate());
  if (slo.autotune != AutotuneMode::kOff && batching.policy == BatchingPolicy::kNone) {
    return bad("autotune", "batching = none runs one request at a time: there is nothing to tune");
  }
  if (threads < 0) return bad("threads", "must be >= 0");
  LLMS_RETURN_IF_ERROR(speculative.validate());
  EarlyExitConfig threshold_only;
  threshold_only.threshold = early_exit.threshold;
  if (Status s = threshold_only.validate(); !s.ok()) return bad("exit_threshold", s.message());
  // The model's layer count is checked at Engine::create.
  if (Status s = early_exit.validate(); !s.ok()) return bad("exit_layers", s.message());
  if (early_exit.threshold < 1.0 && early_exit.layers.empty()) {
    return bad("exit_threshold", "needs exit_layers (--exit-layers): the layers where tokens may exit");
  }
  return ok_status();
}

}  // namespace llms
