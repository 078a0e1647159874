// ServeConfig: everything `llmserve serve` can be told — the server's own settings
// (ServerConfig), the engine's (EngineConfig), the serving layer's (PrecisionConfig)
// and the deployer's (DeployConfig). Plain values with defaults; every
// field is a key of the TOML config file and a command-line flag (config_file.h).
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "deploy/deployer.h"
#include "engine/engine_config.h"
#include "grammar/grammar_budget.h"
#include "serving/precision_policy.h"

namespace llms {

struct ServerConfig {
  // The GGUF file or model directory to serve; or several models, one per line
  // (--model repeats), each PATH or NAME=PATH (server/model_list.h); or:
  std::string model_path;
  std::string model_root;            // a model root (deploy/model_root.h): serves its `current` version
  std::string models_dir;            // serve each GGUF file and model directory in it too
  std::string alias;                 // NAME=ALIAS, one per line (--alias repeats): model NAME answers to ALIAS too
  std::string admin_token_file;      // the admin API's bearer token; "" = admin API off
  std::string model_name;            // the id clients use; "" = the file name without .gguf
  std::string host = "127.0.0.1";
  int port = 8080;                   // 0: any free port (printed at start)
  int io_threads = 2;                // HTTP I/O threads (connections are multiplexed)
  int64_t max_body_bytes = 8 << 20;  // larger request bodies get 413
  double idle_timeout_s = 60;        // a connection may wait this long for a request's first byte
  double header_timeout_s = 10;      // ...then its headers must arrive within this (else 408)
  double body_timeout_s = 60;        // ...and then its body within this (else 408)
  double stream_stall_timeout_s = 30;  // a response no byte of is taken for this long: closed, request cancelled
  int64_t stream_buffer_bytes = 64 << 10;  // unsent bytes a stream may hold in the server (and in SO_SNDBUF)
  int max_connections = 8192;        // open connections in total (beyond: 503)
  int max_connections_per_client = 1024;  // open connections per client address (0: no cap)
  double shutdown_delay_s = 0;       // SIGTERM: keep serving (and accepting) this long with /ready 503 first
  double shutdown_timeout_s = 30;    // SIGTERM: in-flight requests get this long to finish
  std::string api_key;               // required Bearer key ("" = none); a secret: never logged or printed
  std::string api_key_file;          // more keys, one per line
  bool protect_metrics = false;      // /metrics needs a key too
  std::string allowed_hosts;         // Host names served besides IP literals, localhost and host (comma-separated; "*": any)
  std::string cors_origins;          // origins whose pages may call the API (comma-separated; "*": any; "": CORS off)
  std::string kv_events;             // publish KV-cache block events here (tcp://HOST:PORT; "" = off)
  std::string kv_events_pod;         // the events' pod id ("" = $POD_NAME, else the host name)
  std::string prefix_hash = "xxh3";  // the events' block keys: the cache's own (xxh3) or vLLM's sha256-cbor
  std::string prefix_hash_seed;      // sha256-cbor's seed (vLLM's PYTHONHASHSEED, llm-d's hashSeed)
  std::string metrics_compat = "vllm";  // also show the gateway-read metrics under vLLM's names; "none": not
  std::string chat_template;         // "" = the model's (or "plain" when it has none), a family name, a Jinja source, or "plain"
  // Embeddings: how a prompt's hidden states are pooled, mean, cls or last ("": the
  // model's <arch>.pooling_type, else mean).
  std::string pooling;
  // Chat answers of reasoning models: "deepseek" moves <think>...</think> into
  // reasoning_content, "none" leaves it in content (llama-server's --reasoning-format).
  std::string reasoning_format = "deepseek";
  bool ui = true;                    // the dashboard and playground at / (docs/ui.md); --no-ui: 404 there
  // Review sampling and feedback (server/review_log.h, deploy/feedback.h).
  double review_sample = 0;          // share of finished requests written to review_log, per version
  std::string review_log;            // the review log (JSON lines)
  // LoRA adapters, NAME=PATH, one per line (--lora, repeatable): a request whose model
  // is NAME runs with the adapter at PATH (a GGUF adapter or a PEFT directory).
  std::string lora;
  // The memory the resident adapters of a loaded version may hold (0: no budget): the
  // least recently used unused adapter is unloaded to make room, and loaded again when
  // a request names it (serving/lora_set.h).
  int64_t lora_memory = 0;
  std::string review_redact;         // more patterns to redact, one per line (--review-redact, repeatable)
  int64_t review_log_max_bytes = 64 << 20;  // then rotated to FILE.1, FILE.2, ...
  int review_log_keep = 5;           // rotated files kept
  std::string review_exclude_key_file;  // keys (one per line) whose requests are never reviewed
  int64_t review_seed = 0;           // seed of the sampling (0: random)
  std::string feedback_scale = "thumbs";  // ratings: thumbs (-1, 0, 1) or stars (1..5)
  int feedback_recent = 100000;      // request ids that can still be rated (~80 bytes each)
  // Output grammars (regex, grammar, response_format, tools) compile on their own
  // threads, never the I/O threads; requests beyond the queue get 503.
  int grammar_threads = 2;
  int grammar_queue = 64;            // compiles waiting for a thread
  GrammarBudget grammar_budget;      // past it: 400 naming the limit (its cancel flag is per request)
  // A whole (non-streamed) answer's upper bound, from n, max_tokens and logprobs:
  // past it the request is refused before compute (400); streams are not bounded.
  int64_t max_response_bytes = 64 << 20;
  // With API keys: "key" keeps each key's prefix-cache (and result-cache) entries to
  // itself; "global" shares them across keys. cache_salt scopes them further.
  std::string prefix_cache_scope = "key";
  std::string log_level;             // debug, info, warn, error, off ("" = $LLMSERVE_LOG, else info)
  std::string log_format = "text";   // text or json (one object a line)
  std::string log_file;              // append the log here ("" = stderr); reopened on SIGHUP
  std::string access_log;            // one JSON line per HTTP exchange ("" = none); reopened on SIGHUP

  Status validate() const;
};

struct ServeConfig {
  ServerConfig server;
  EngineConfig engine;        // every engine's (the variants' too)
  PrecisionConfig precision;  // automatic precision: the served model's variants
  DeployConfig deploy;        // its threads are filled from the engine's at start
  Status validate() const;
};

// The served (default) model's id: model_name, else the file name without directory
// and .gguf (the model root's folder name with --model-root); with several models,
// the first one's name (server/model_list.h).
std::string served_model_name(const ServerConfig& c);

}  // namespace llms
