#include "server/server_config.h"

#include "serving/lora_set.h"

#include "deploy/feedback.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "server/browser_policy.h"
#include "server/model_list.h"
#include "base/log.h"

namespace llms {

Status ServerConfig::validate() const {
  auto bad = [](const char* key, const std::string& why) { return invalid_argument(fmt::format("{}: {}", key, why)); };
  if (model_path.empty() && models_dir.empty() && model_root.empty()) {
    return bad("model", "give a GGUF model file (-m MODEL.gguf), models (--model NAME=PATH, --models-dir DIR) or a "
                        "model root (--model-root DIR)");
  }
  if (!model_root.empty() && (!model_path.empty() || !models_dir.empty())) {
    return bad("model_root", "serves the root's one model, whose versions deploys change; it takes no model or "
                             "models_dir beside it (serve several models from files, without a model root)");
  }
  LLMS_RETURN_IF_ERROR(list_models(*this).status());
  if (serves_several_models(*this) && !kv_events.empty()) {
    return bad("kv_events", "publishes the blocks of one model; serve one model per process to publish its events");
  }
  if (host.empty()) return bad("host", "must not be empty");
  if (port < 0 || port > 65535) return bad("port", fmt::format("{} is not in 0..65535", port));
  if (io_threads < 1 || io_threads > 256) return bad("io_threads", fmt::format("{} is not in 1..256", io_threads));
  if (max_body_bytes < 1024) return bad("max_body_bytes", "must be >= 1024");
  if (!(idle_timeout_s > 0)) return bad("idle_timeout", "must be > 0");
  if (!(header_timeout_s > 0)) return bad("header_timeout", "must be > 0");
  if (!(body_timeout_s > 0)) return bad("body_timeout", "must be > 0");
  if (!(stream_stall_timeout_s > 0)) return bad("stream_stall_timeout", "must be > 0");
  if (stream_buffer_bytes < 4096 || stream_buffer_bytes > (64 << 20)) {
    return bad("stream_buffer_bytes", fmt::format("{} is not in 4096..67108864 (4 KiB..64 MiB)", stream_buffer_bytes));
  }
  if (max_connections < 1) return bad("max_connections", "must be >= 1");
  if (max_connections_per_client < 0) return bad("max_connections_per_client", "must be >= 0 (0: no cap)");
  if (prefix_hash != "xxh3" && prefix_hash != "sha256-cbor") {
    return bad("prefix_hash", "must be xxh3 or sha256-cbor, not \"" + prefix_hash + "\"");
  }
  if (metrics_compat != "vllm" && metrics_compat != "none") {
    return bad("metrics_compat", "must be vllm or none, not \"" + metrics_compat + "\"");
  }
  if (protect_metrics && api_key.empty() && api_key_file.empty()) {
    return bad("protect_metrics", "needs an API key (api_key or api_key_file)");
  }
  LLMS_RETURN_IF_ERROR(validate_browser_settings(*this));
  if (grammar_threads < 1 || grammar_threads > 64) return bad("grammar_threads", "must be in 1..64");
  if (grammar_queue < 0) return bad("grammar_queue", "must be >= 0");
  if (max_response_bytes < (1 << 20)) return bad("max_response_bytes", "must be >= 1 MiB");
  if (!pooling.empty() && pooling != "mean" && pooling != "cls" && pooling != "last") {
    return bad("pooling", "must be mean, cls or last (or empty: the model's), not \"" + pooling + "\"");
  }
  if (reasoning_format != "deepseek" && reasoning_format != "none") {
    return bad("reasoning_format", "must be deepseek or none, not \"" + reasoning_format + "\"");
  }
  if (prefix_cache_scope != "key" && prefix_cache_scope != "global") {
    return bad("prefix_cache_scope", "must be key or global, not \"" + prefix_cache_scope + "\"");
  }
  const GrammarBudget& g = grammar_budget;
  if (g.max_return_points < 0 || g.compile_work < 0 || g.point_work < 0 || g.mask_work < 0) {
    return bad("grammar_*_work", "budgets must be >= 0 (0: no limit)");
  }
  if (!(g.compile_seconds >= 0 && g.point_seconds >= 0 && g.mask_seconds >= 0)) {
    return bad("grammar_*_seconds", "budgets must be >= 0 (0: no limit)");
  }
  if (!log_level.empty() && !parse_log_level(log_level)) {
    return bad("log_level", "must be debug, info, warn, error or off, not \"" + log_level + "\"");
  }
  if (!parse_log_format(log_format)) return bad("log_format", "must be text or json, not \"" + log_format + "\"");
  if (!(shutdown_timeout_s >= 0)) return bad("shutdown_timeout", "must be >= 0");
  if (!(shutdown_delay_s >= 0 && shutdown_delay_s <= 3600)) return bad("shutdown_delay", "must be between 0 and 3600 seconds");
  return ok_status();
}

Status ServeConfig::validate() const {
  LLMS_RETURN_IF_ERROR(server.validate());
  LLMS_RETURN_IF_ERROR(engine.validate());
  LLMS_RETURN_IF_ERROR(precision.validate());
  auto bad = [](const char* key, const std::string& why) { return invalid_argument(fmt::format("{}: {}", key, why)); };
  const GateConfig& g = deploy.gate;
  if (!(g.max_kl >= 0)) return bad("gate_max_kl", "must be >= 0");
  if (!(g.min_top1 >= 0 && g.min_top1 <= 1)) return bad("gate_min_top1", "must be in [0, 1]");
  if (!(server.review_sample >= 0 && server.review_sample <= 1)) return bad("review_sample", "must be in [0, 1]");
  if (server.review_sample > 0 && server.review_log.empty()) return bad("review_log", "is needed by review_sample");
  if (!parse_rating_scale(server.feedback_scale).ok()) return bad("feedback_scale", "must be thumbs or stars");
  if (!(g.task.min_bleu >= 0 && g.task.min_bleu <= 100)) return bad("gate_min_bleu", "must be in [0, 100]");
  if (!(g.task.min_chrf >= 0 && g.task.min_chrf <= 100)) return bad("gate_min_chrf", "must be in [0, 100]");
  if (!(g.task.min_exact >= 0 && g.task.min_exact <= 1)) return bad("gate_min_exact", "must be in [0, 1]");
  if (!(deploy.quality_interval_s >= 0)) return bad("quality_interval", "must be >= 0 seconds (0: off)");
  if (!(deploy.cross.share >= 0 && deploy.cross.share <= 1)) return bad("quality_sample_share", "must be in [0, 1]");
  if (!(deploy.cross.tokens_per_s > 0)) return bad("quality_score_tokens_per_s", "must be > 0");
  if (!(deploy.canary_auto.alpha > 0 && deploy.canary_auto.alpha < 1)) return bad("canary_alpha", "must be in (0, 1)");
  if (!(deploy.canary_auto.max_latency_ratio >= 1)) return bad("canary_max_latency_ratio", "must be >= 1");
  if (!(deploy.canary_auto.feedback_margin >= 0)) return bad("canary_feedback_margin", "must be >= 0");
  if (!(deploy.max_ppl_drift > 1)) return bad("quality_max_drift", "must be > 1");
  if (!server.lora.empty()) {
    LLMS_RETURN_IF_ERROR(parse_lora_specs(server.lora, served_model_name(server)).status());
    if (!precision.variants.empty()) {
      return bad("lora", "adapters cannot be served with precision_variants (an adapter binds to one model's weights)");
    }
    if (engine.ranks != nullptr) {
      return bad("lora", "adapters cannot be served under tensor or pipeline parallelism (a rank holds a share of the weights)");
    }
  }
  if (serves_several_models(server) && engine.ranks != nullptr) {
    return bad("model", "tensor parallelism splits one model over the ranks; serve several models without it");
  }
  if (!server.lora.empty()) {
    LLMS_ASSIGN_OR_RETURN(const std::vector<ModelEntry> models, list_models(server));
    LLMS_ASSIGN_OR_RETURN(const std::vector<LoraSpec> loras, parse_lora_specs(server.lora, served_model_name(server)));
    for (const LoraSpec& a : loras) {
      for (const ModelEntry& m : models) {
        if (a.name == m.name || std::find(m.aliases.begin(), m.aliases.end(), a.name) != m.aliases.end()) {
          return bad("lora", fmt::format("the adapter name '{}' is also a served model's name", a.name));
        }
      }
    }
  }
  return ok_status();
}

std::string served_model_name(const ServerConfig& c) {
  if (!c.model_name.empty()) return c.model_name;
  if (!c.model_root.empty()) {
    std::filesystem::path root(c.model_root);
    return (root.has_filename() ? root : root.parent_path()).filename().string();
  }
  if (auto models = list_models(c); models.ok() && !models->empty()) return models->front().name;
  std::filesystem::path p(c.model_path);
  if (p.extension() == ".gguf") return p.stem().string();
  return p.filename().string();
}

}  // namespace llms
