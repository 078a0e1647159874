#include "server/config_file.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <fstream>
#include <sstream>

#include "kv/kv_layout.h"
#include "model/early_exit.h"
#include "server/config_keys.h"
#include "server/config_special_keys.h"

namespace llms {
namespace {

#define SRV(field) [](ServeConfig& c) -> auto& { return c.server.field; }
#define GRM(field) [](ServeConfig& c) -> auto& { return c.server.grammar_budget.field; }
#define ENG(field) [](ServeConfig& c) -> auto& { return c.engine.field; }
#define BAT(field) [](ServeConfig& c) -> auto& { return c.engine.batching.field; }
#define KV(field) [](ServeConfig& c) -> auto& { return c.engine.kv.field; }
#define ADM(field) [](ServeConfig& c) -> auto& { return c.engine.admission.field; }
#define SLO(field) [](ServeConfig& c) -> auto& { return c.engine.slo.field; }
#define SPEC(field) [](ServeConfig& c) -> auto& { return c.engine.speculative.field; }
#define EXIT(field) [](ServeConfig& c) -> auto& { return c.engine.early_exit.field; }
#define DEP(field) [](ServeConfig& c) -> auto& { return c.deploy.field; }
#define PREC(field) [](ServeConfig& c) -> auto& { return c.precision.policy.field; }

std::vector<ConfigKey> make_keys() {
  constexpr int kBig = 1 << 30;
  return {
      str_key("model",
              "GGUF model file or Hugging Face model directory to serve; several: one per line, PATH or NAME=PATH "
              "(the flag repeats; the first is the default model)",
              SRV(model_path)),
      str_key("models_dir", "Serve each GGUF file and Hugging Face model directory in this folder too, named after it",
              SRV(models_dir)),
      str_key("alias", "Other model ids: NAME=ALIAS, one per line (the flag repeats); model NAME answers to ALIAS too",
              SRV(alias)),
      str_key("model_root", "Model root to serve (versions/, current, previous); instead of model", SRV(model_root)),
      str_key("admin_token_file", "File holding the admin API's bearer token (\"\": admin API off)", SRV(admin_token_file)),
      swap_key(),
      bool_key("keep_previous", "Keep the replaced version loaded for instant rollback while memory allows",
               DEP(keep_previous)),
      str_key("gate_text", "Quality gate text file (\"\": a sample of the serving version)", DEP(gate.text_path)),
      int_key("gate_sample_tokens", "Tokens of the serving version's sample used as gate text", DEP(gate.sample_tokens), 2,
              1 << 20),
      num_key("gate_max_kl", "Quality gate: largest mean KL divergence (nats/token) a candidate may have", DEP(gate.max_kl)),
      num_key("gate_min_top1", "Quality gate: smallest top-1 agreement a candidate may have", DEP(gate.min_top1)),
      str_key("gate_reference",
              "Reference answers (JSON lines of prompt or messages, and reference) a candidate answers greedily and "
              "is scored on (\"\": no task scores)",
              DEP(gate.task.reference_path)),
      num_key("gate_min_bleu", "Quality gate: smallest corpus BLEU-4 (0-100) on gate_reference", DEP(gate.task.min_bleu)),
      num_key("gate_min_chrf", "Quality gate: smallest chrF (0-100) on gate_reference", DEP(gate.task.min_chrf)),
      num_key("gate_min_exact", "Quality gate: smallest exact-match share (0-1) on gate_reference",
              DEP(gate.task.min_exact)),
      num_key("review_sample", "Share of finished requests, per version, written to review_log for people to read",
              SRV(review_sample)),
      str_key("review_log", "Review log file (JSON lines; rotated at review_log_max_bytes)", SRV(review_log)),
      str_key("lora",
              "LoRA adapters, NAME=PATH (a GGUF adapter or a PEFT directory), one per line; the flag repeats; a "
              "request whose model is NAME runs with it",
              SRV(lora)),
      i64_key("lora_memory",
              "Memory the resident LoRA adapters may hold (0: no limit); past it the least recently used adapter no "
              "request is using is unloaded, and loaded again when a request names it",
              SRV(lora_memory), ConfigType::kBytes),
      str_key("review_redact",
              "Regular expressions redacted in the review log besides e-mails, phone and card numbers (one per line; "
              "the flag repeats)",
              SRV(review_redact)),
      i64_key("review_log_max_bytes", "Size at which the review log is rotated", SRV(review_log_max_bytes),
              ConfigType::kBytes),
      int_key("review_log_keep", "Rotated review logs kept", SRV(review_log_keep), 0, 1000),
      str_key("review_exclude_key_file", "File of API keys (one per line) whose requests are never reviewed",
              SRV(review_exclude_key_file)),
      i64_key("review_seed", "Seed of the review sampling (0: random)", SRV(review_seed), ConfigType::kInt),
      str_key("feedback_scale", "Ratings of POST /v1/feedback: thumbs (-1, 0, 1) or stars (1 to 5)",
              SRV(feedback_scale)),
      int_key("feedback_recent", "Recent request ids that can still be rated", SRV(feedback_recent), 1, 1 << 24),
      int_key("gate_max_tokens", "Tokens of each answer to gate_reference", DEP(gate.task.max_tokens), 1, 1 << 20),
      bool_key("allow_tokenizer_change", "Let a deploy change the vocabulary or tokenizer",
               DEP(gate.allow_tokenizer_change)),
      int_key("canary_auto",
              "Decide a canary by itself (sequential test on the quality signals); promote after at least this "
              "many of its requests (0: by hand)",
              DEP(canary_auto.requests), 0, 1 << 30),
      num_key("canary_max_nll_increase", "canary_auto: how much higher the candidate's NLL per output token under "
              "the stable model may be (nats)", DEP(canary_auto.max_nll_increase)),
      num_key("canary_max_error_increase", "canary_auto: how much higher the candidate's error rate may be",
              DEP(canary_auto.max_error_rate_increase)),
      num_key("canary_max_abnormal_increase", "canary_auto: how much higher the candidate's abnormal-output rate may be",
              DEP(canary_auto.max_abnormal_rate_increase)),
      num_key("canary_max_latency_ratio", "canary_auto: how many times slower the candidate's inter-token latency may be",
              DEP(canary_auto.max_latency_ratio)),
      num_key("canary_alpha", "canary_auto: the sequential test's level (chance of a wrong decision)",
              DEP(canary_auto.alpha)),
      int_key("canary_feedback_min", "canary_auto: ratings (POST /v1/feedback) per version before feedback may decide; "
              "0: feedback is not a signal", DEP(canary_auto.feedback_min), 0, 1 << 30),
      num_key("canary_feedback_margin", "canary_auto: how much lower the candidate's mean rating may be (rating points)",
              DEP(canary_auto.feedback_margin)),
      num_key("quality_sample_share",
              "Share of each version's completed requests cross-scored by the other version while a canary runs (0: off)",
              DEP(cross.share)),
      num_key("quality_score_tokens_per_s", "Cross-scoring budget: teacher-forced tokens per second, at most",
              DEP(cross.tokens_per_s)),
      int_key("quality_score_nice", "CPU priority (nice) of the cross-scoring thread: 19 scores in idle capacity only",
              DEP(cross.nice), 0, 19),
      num_key("quality_max_cross_perplexity",
              "A candidate output whose perplexity under the stable model is above this is abnormal (0: off)",
              DEP(cross.max_cross_perplexity)),
      num_key("quality_interval", "Seconds between validation-perplexity checks of the loaded versions (0: off)",
              DEP(quality_interval_s)),
      str_key("quality_text", "Validation text file, read again at each check (\"\": the gate text)",
              DEP(quality_text_path)),
      bool_key("auto_rollback", "Roll back a deployed version whose validation perplexity drifts past quality_max_drift",
               DEP(auto_rollback)),
      num_key("quality_max_drift", "auto_rollback: largest validation perplexity / the version's own at deploy",
              DEP(max_ppl_drift)),
      str_key("model_name", "Model id clients use (default: the file name without .gguf)", SRV(model_name)),
      str_key("host", "Address to listen on", SRV(host)),
      int_key("port", "TCP port (0: any free port)", SRV(port), 0, 65535),
      int_key("io_threads", "HTTP I/O threads", SRV(io_threads), 1, 256),
      i64_key("max_body_bytes", "Largest request body (larger: 413)", SRV(max_body_bytes), ConfigType::kBytes),
      num_key("idle_timeout", "Seconds a keep-alive connection may wait for a request", SRV(idle_timeout_s)),
      num_key("header_timeout", "Seconds a request's headers may take once its first byte arrived (else 408)",
              SRV(header_timeout_s)),
      num_key("body_timeout", "Seconds a request's body may take after its headers (else 408)", SRV(body_timeout_s)),
      num_key("stream_stall_timeout",
              "Seconds a client may take no response bytes; then its connection closes and its request is cancelled",
              SRV(stream_stall_timeout_s)),
      i64_key("stream_buffer_bytes",
              "Unsent bytes a streaming response may hold in the server (and in the socket's send buffer)",
              SRV(stream_buffer_bytes), ConfigType::kBytes),
      int_key("max_connections", "Open connections in total (beyond: 503)", SRV(max_connections), 1, kBig),
      int_key("max_connections_per_client", "Open connections per client address (beyond: 503; 0: no cap)",
              SRV(max_connections_per_client), 0, kBig),
      secret_key("api_key", "Bearer key every request but /health, /ready, /metrics must carry (prefer api_key_file)",
                 SRV(api_key)),
      str_key("api_key_file", "File of Bearer keys, one per line", SRV(api_key_file)),
      bool_key("protect_metrics", "Require an API key on /metrics too", SRV(protect_metrics)),
      str_key("allowed_hosts",
              "Host names served besides IP addresses, localhost and host (comma-separated; .example.com: the domain "
              "and its subdomains; *: any)",
              SRV(allowed_hosts)),
      str_key("cors_origins", "Origins whose pages may call the API (comma-separated, e.g. https://app.example.com; "
              "*: any; \"\": CORS off)", SRV(cors_origins)),
      bool_key("ui", "Serve the dashboard and playground at / (false, or --no-ui: 404 there)", SRV(ui)),
      int_key("stats_window", "Steps and finished requests GET /v1/stats keeps for the dashboard (0: none)",
              ENG(stats_window), 0, kMaxStatsWindow),
      str_key("kv_events", "Publish KV-cache block events (vLLM's format, ZeroMQ PUB) on tcp://HOST:PORT (\"\": off)",
              SRV(kv_events)),
      str_key("kv_events_pod", "Pod id in the events' topic kv@POD@MODEL (\"\": $POD_NAME, else the host name)",
              SRV(kv_events_pod)),
      str_key("prefix_hash",
              "Block keys of the KV events: xxh3 (the prefix cache's own) or sha256-cbor (vLLM's sha256_cbor, which "
              "llm-d's indexer computes from prompts)",
              SRV(prefix_hash)),
      str_key("prefix_hash_seed", "Seed of sha256-cbor keys: vLLM's PYTHONHASHSEED, llm-d's hashSeed (default \"\")",
              SRV(prefix_hash_seed)),
      str_key("log_level", "Log level: debug, info, warn, error, off (\"\": $LLMSERVE_LOG, else info); SIGHUP reloads it",
              SRV(log_level)),
      str_key("log_format", "Log lines as text or json (one object a line); SIGHUP reloads it", SRV(log_format)),
      str_key("log_file", "Append the log to this file (\"\": stderr); SIGHUP reopens it", SRV(log_file)),
      str_key("access_log",
              "Write one JSON line per HTTP request to this file (time, request id, endpoint, version, status, tokens, "
              "TTFT, total time, finish reason; \"\": none); SIGHUP reopens it",
              SRV(access_log)),
      str_key("metrics_compat",
              "Also show the metrics gateways read under vLLM's names (vllm), or not (none)", SRV(metrics_compat)),
      num_key("shutdown_delay",
              "Seconds the server keeps serving and accepting after SIGTERM with /ready answering 503, so that load "
              "balancers take it out of rotation first",
              SRV(shutdown_delay_s)),
      num_key("shutdown_timeout", "Seconds in-flight requests get to finish on SIGTERM", SRV(shutdown_timeout_s)),
      str_key("chat_template", "Chat template name, Jinja source or \"plain\" (default: the model's)", SRV(chat_template)),
      int_key("grammar_threads", "Threads that compile output grammars (regex, grammar, schemas, tools)",
              SRV(grammar_threads), 1, 64),
      int_key("grammar_queue", "Grammar compiles that may wait for a thread (beyond: 503)", SRV(grammar_queue), 0, kBig),
      i64_key("grammar_compile_work", "Work units a grammar's compile may take (beyond: 400; 0: no limit)",
              GRM(compile_work), ConfigType::kInt),
      num_key("grammar_compile_seconds", "Seconds a grammar's compile may take (beyond: 400; 0: no limit)",
              GRM(compile_seconds)),
      i64_key("grammar_max_return_points", "Return points of a grammar's rules, its expanded size (0: no limit)",
              GRM(max_return_points), ConfigType::kInt),
      i64_key("grammar_mask_work", "Work units one token mask may take (beyond: finish reason error; 0: no limit)",
              GRM(mask_work), ConfigType::kInt),
      num_key("grammar_mask_seconds", "Seconds one token mask may take (0: no limit)", GRM(mask_seconds)),
      i64_key("max_response_bytes",
              "Upper bound of a whole (non-streamed) answer, from n, max_tokens and logprobs; beyond: 400 before "
              "compute",
              SRV(max_response_bytes), ConfigType::kBytes),
      str_key("prefix_cache_scope",
              "With API keys: key (each key's prefix-cache entries are its own) or global (shared)",
              SRV(prefix_cache_scope)),
      chat_template_file_key(),
      str_key("pooling", "Embeddings' pooling: mean, cls or last (default: the model's pooling_type, else mean)",
              SRV(pooling)),
      str_key("reasoning_format",
              "deepseek: a chat answer's <think>...</think> goes to reasoning_content; none: it stays in content",
              SRV(reasoning_format)),
      batching_key(),
      int_key("max_batch_tokens", "Tokens per forward pass (decodes + prefill chunks)", BAT(max_batch_tokens), 1, kBig),
      int_key("max_running", "Sequences in the running set", BAT(max_running), 1, kBig),
      int_key("max_batch_size", "Dynamic batching: requests per batch", BAT(max_batch_size), 1, kBig),
      num_key("max_delay_ms", "Dynamic batching: longest wait for a full batch (ms)", BAT(max_delay_ms)),
      int_key("kv_block_size", fmt::format("KV cache block size in tokens ({}..{})", kMinKvBlockSize, kMaxKvBlockSize),
              KV(block_size), kMinKvBlockSize, kMaxKvBlockSize),
      memory_key("kv_cache_memory",
                 "KV cache size, bytes or % of memory (0: 10% of the memory limit, capped by max_running contexts)",
                 KV(cache_bytes)),
      dtype_key("kv_k_type", "KV cache type of keys", KV(k_type)),
      dtype_key("kv_v_type", "KV cache type of values", KV(v_type)),
      bool_key("kv_commit_at_start",
               "Commit the KV cache's memory at start, as llama.cpp does (false: as blocks are first written)",
               KV(commit_at_start)),
      bool_key("warmup_pass",
               "Run one pass of max_batch_tokens dummy tokens at start, so that no request pays the buffers' first "
               "touch",
               ENG(warmup_pass)),
      bool_key("prefix_cache", "Share KV blocks of identical prompt prefixes", KV(prefix_cache)),
      bool_key("prefix_clustering",
               "Admit a request that shares a prefix with one still computing it after that prefix is cached, and "
               "the longest cached prefix first among equals (false: first come, first served)",
               KV(prefix_clustering)),
      i64_key("result_cache_bytes", "Result cache for deterministic requests (0: off)", ENG(result_cache_bytes),
              ConfigType::kBytes),
      int_key("context_length", "Context length (0: the model's)", ENG(context_length), 0, kBig),
      int_key("max_waiting_requests", "Queue bound in requests (beyond: 429)", ADM(max_waiting_requests), 0, kBig),
      i64_key("max_waiting_tokens", "Queue bound in prompt tokens (beyond: 429)", ADM(max_waiting_tokens),
              ConfigType::kInt),
      num_key("kv_high_watermark", "Refuse new requests (503) above this KV use (1: off; the queue absorbs a busy KV pool)", ADM(kv_high)),
      num_key("kv_low_watermark", "...until KV use falls below this", ADM(kv_low)),
      num_key("rss_high_watermark", "Refuse new requests above this share of the memory limit", ADM(rss_high)),
      num_key("rss_low_watermark", "...until memory use falls below this", ADM(rss_low)),
      i64_key("memory_limit_bytes", "Memory limit (0: the machine's or cgroup's)", ADM(memory_limit_bytes),
              ConfigType::kBytes),
      num_key("request_timeout", "Default per-request timeout in seconds (queueing + generation)", ENG(default_timeout_s)),
      num_key("long_job_factor", "Cost above this x the recent median puts a request in the long-job lane",
              BAT(long_job_factor)),
      num_key("long_job_share", "Largest share of a step's budget the long-job lane may take", BAT(long_job_share)),
      num_key("aging", "Seconds of waiting that raise a request's priority by one", BAT(aging_s)),
      int_key("interactive_boost", "Priority advantage of the interactive lane", BAT(interactive_boost), -kBig, kBig),
      num_key("slo_ttft_ms", "Time-to-first-token target of interactive requests without their own (ms; 0: none)",
              SLO(interactive.ttft_ms)),
      num_key("slo_itl_ms", "Inter-token latency target of interactive requests without their own (ms; 0: none)",
              SLO(interactive.itl_ms)),
      num_key("slo_batch_ttft_ms", "Time-to-first-token target of batch-lane requests (ms; 0: none)",
              SLO(batch.ttft_ms)),
      num_key("slo_batch_itl_ms", "Inter-token latency target of batch-lane requests (ms; 0: none)",
              SLO(batch.itl_ms)),
      autotune_key(),
      bool_key("slo_shed",
               "Past capacity, refuse (503, Retry-After) a waiting request as soon as its TTFT target is forecast "
               "to be missed, instead of serving it late",
               SLO(shed)),
      int_key("autotune_min_batch_tokens", "Smallest step token budget the auto-tuner may choose",
              SLO(autotune_min_batch_tokens), 1, kBig),
      num_key("slo_percentile", "Share of a request's inter-token intervals its ITL target holds for (0.5..1)",
              SLO(percentile)),
      int_key("threads", "Kernel threads (0: one per core)", ENG(threads), 0, 4096),
      bool_key("profile_steps", "Time each step's parts into llmserve_step_part_seconds_total (debugging)",
               ENG(profile)),
      speculative_key(),
      int_key("spec_tokens", "Speculative decoding: most tokens proposed per sequence and step", SPEC(tokens), 1, 16),
      str_key("draft_model", "Speculative decoding: the draft model (GGUF, same vocabulary)", SPEC(draft_model)),
      int_key("spec_ngram_max", "Speculative decoding: longest suffix the ngram proposer looks up", SPEC(ngram_max),
              1, 8),
      exit_layers_key(),
      num_key("exit_threshold",
              "Early exit: a greedy request's token exits at an exit layer when its top probability is at least "
              "this (0..1; 1: never)",
              EXIT(threshold)),
      precision_variants_key(),
      precision_limits_key("precision_prompt_max",
                           "Automatic precision: per variant but the most precise, the longest prompt (tokens) it "
                           "takes, e.g. \"32,128\"",
                           &PrecisionPolicy::prompt_max),
      precision_limits_key("precision_max_tokens",
                           "Automatic precision: per variant but the most precise, the largest max_tokens it takes",
                           &PrecisionPolicy::max_tokens_max),
      num_key("precision_entropy",
              "Automatic precision: move a request up one variant when its tokens' mean entropy over "
              "precision_window exceeds this (nats; 0: never)",
              PREC(entropy_bound)),
      int_key("precision_window", "Automatic precision: tokens the fallback's entropy mean is taken over",
              PREC(window), 1, 4096),
  };
}

#undef SRV
#undef GRM
#undef ENG
#undef BAT
#undef KV
#undef ADM
#undef SLO
#undef SPEC
#undef EXIT
#undef DEP
#undef PREC

std::string node_text(const toml::node& n, ConfigType type, bool* ok) {
  *ok = true;
  if (type == ConfigType::kBool && n.is_boolean()) return *n.value<bool>() ? "true" : "false";
  if ((type == ConfigType::kInt || type == ConfigType::kBytes || type == ConfigType::kNumber) && n.is_integer()) {
    return std::to_string(*n.value<int64_t>());
  }
  if (type == ConfigType::kNumber && n.is_floating_point()) return fmt::format("{}", *n.value<double>());
  if ((type == ConfigType::kString || type == ConfigType::kBytes) && n.is_string()) return *n.value<std::string>();
  *ok = false;
  return "";
}

const char* type_name(ConfigType t) {
  switch (t) {
    case ConfigType::kInt: return "an integer";
    case ConfigType::kNumber: return "a number";
    case ConfigType::kBool: return "a boolean";
    case ConfigType::kString: return "a string";
    case ConfigType::kBytes: return "a byte size (integer or string like \"64MiB\")";
  }
  return "?";
}

}  // namespace

const std::vector<ConfigKey>& config_keys() {
  static const std::vector<ConfigKey> keys = make_keys();
  return keys;
}

std::string config_flag_name(const std::string& key) {
  std::string f = key;
  for (auto& ch : f) {
    if (ch == '_') ch = '-';
  }
  return f;
}

Status set_config_value(ServeConfig& c, std::string_view key, const std::string& value) {
  for (const auto& k : config_keys()) {
    if (k.name == key) return k.set(c, value);
  }
  return invalid_argument(fmt::format("unknown configuration key '{}'", key));
}

Status load_config_text(std::string_view text, const std::string& origin, ServeConfig& c) {
  toml::table table;
  try {
    table = toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    const auto& src = e.source();
    return invalid_argument(fmt::format("{}:{}:{}: {}", origin, src.begin.line, src.begin.column, e.description()));
  }
  for (const auto& [k, node] : table) {
    const std::string key(k.str());
    const ConfigKey* found = nullptr;
    for (const auto& ck : config_keys()) {
      if (ck.name == key) found = &ck;
    }
    if (found == nullptr) return invalid_argument(fmt::format("{}: unknown configuration key '{}'", origin, key));
    bool ok = false;
    const std::string v = node_text(node, found->type, &ok);
    if (!ok) return invalid_argument(fmt::format("{}: {}: expected {}", origin, key, type_name(found->type)));
    if (Status s = found->set(c, v); !s.ok()) return s.with_context(origin);
  }
  return ok_status();
}

Status load_config_file(const std::string& path, ServeConfig& c) {
  std::ifstream in(path);
  if (!in) return not_found(fmt::format("cannot open config file '{}'", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return load_config_text(ss.str(), path, c);
}

std::string config_to_toml(const ServeConfig& c) {
  std::string out = "# llmserve serve: effective configuration\n";
  for (const auto& k : config_keys()) {
    const std::string v = k.get(c);
    if (k.secret && v == kRedacted) {
      out += fmt::format("# {} is set; redacted (give it again: --{} or a config file)\n", k.name, config_flag_name(k.name));
    } else {
      out += fmt::format("{} = {}  # {}\n", k.name, v, k.help);
    }
  }
  return out;
}

}  // namespace llms
