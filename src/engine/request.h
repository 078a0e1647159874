// What a client hands the engine (RequestParams) and what it gets back: a
// RequestHandle, the one object shared between the submitting thread and the engine
// thread. The engine pushes token and finish events into it; the client waits on it,
// reads events, and may cancel.
//
// Thread-safety: RequestHandle is fully thread-safe (a mutex and a condition variable);
// everything else here is a plain value.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "engine/engine_config.h"
#include "engine/finish_reason.h"
#include "engine/sampler.h"
#include "grammar/compiled_grammar.h"

namespace llms {

class LoraAdapter;

enum class Lane {
  kInteractive,  // latency-sensitive: ahead of the batch lane
  kBatch,        // throughput work
};

// How an embedding pools a prompt's last hidden states (after the final norm), as
// llama.cpp names them: their mean, the first token's (cls) or the last token's.
enum class Pooling { kNone, kMean, kCls, kLast };

struct RequestParams {
  std::vector<int32_t> prompt;  // token ids, BOS included when wanted
  int max_tokens = 16;
  SamplingParams sampling;
  std::vector<std::string> stop;
  bool ignore_eos = false;
  int priority = 0;          // higher runs first
  // Prefix-cache scope (0: the shared one): the request's KV blocks are shared only
  // with requests of the same salt, and its result-cache entry only read by them.
  uint64_t cache_salt = 0;
  Lane lane = Lane::kInteractive;
  SloTarget slo;             // this request's own targets (0: its lane's)
  double timeout_s = 0;      // queueing + generation; 0 = the engine's default
  int top_logprobs = -1;     // -1: no logprobs; 0..20: the chosen token's and this many alternatives
  // The prompt's own log-probabilities (echo with logprobs): each prompt token's, given
  // the tokens before it, with top_logprobs alternatives, in FinishEvent::prompt_logprobs.
  // Needs top_logprobs >= 0; allows max_tokens 0 (score the prompt, generate nothing).
  // Such a request never reads the prefix cache: a position it skipped has no logits.
  bool prompt_logprobs = false;
  // An embedding (kNone: none): the prompt's hidden states pooled into
  // FinishEvent::embedding, not normalized. Needs max_tokens 0; such a request neither
  // reads the prefix cache (every position's state is pooled) nor leaves blocks in it.
  Pooling pooling = Pooling::kNone;
  bool speculative = true;   // false: never speculate for this request (when the engine does)
  // false: never exit early (when the engine does, for greedy requests:
  // engine/early_exit_policy.h).
  bool early_exit = true;
  // true: each token event carries the entropy of the distribution it was drawn from
  // (the precision router watches it: serving/precision_router.h).
  bool report_entropy = false;
  // Every prompt position is computed in this request's own pass (prompt scoring, embeddings).
  bool computes_whole_prompt() const { return prompt_logprobs || pooling != Pooling::kNone; }
  // The LoRA adapter the request runs with (model/lora.h), bound to the engine's model;
  // null: the base model. Shared so that an adapter unloaded while the request runs
  // stays alive until it ends. Its identity scopes the request's prefix-cache blocks
  // and result-cache entry; an adapter request never exits early (the exit layers were
  // calibrated on the base); speculative proposals are verified with the adapter, so
  // they stay exact.
  std::shared_ptr<const LoraAdapter> adapter;
  // Time the request already waited before submit(), for its adapter to be loaded again
  // (serving/lora_set.h): its arrival is taken as that long before submit(), so the load
  // counts in its queue time and TTFT.
  int64_t setup_ns = 0;
  // Constrains the output (Engine::compile_grammar() makes it for this engine's
  // vocabulary); null: unconstrained. Shared and immutable.
  std::shared_ptr<const CompiledGrammar> grammar;
};

struct TokenEvent {
  int32_t token = 0;
  std::string text;                 // complete UTF-8 text released by this token (may be empty)
  float logprob = 0.0f;             // when requested
  std::vector<TokenLogprob> top;    // when requested
  float entropy = -1.0f;            // nats, when requested (report_entropy); -1 otherwise
};

struct RequestTimings {
  double queue_s = 0;        // arrival to first scheduling
  double ttft_s = 0;         // arrival to first token
  double e2e_s = 0;          // arrival to finish
  double compute_s = 0;      // time in steps that included the request
};

struct FinishEvent {
  FinishReason reason = FinishReason::kStop;
  std::string text;           // text held back until the end (a partial stop-string match, ...)
  std::string message;        // for rejected / error
  // For an error the request caused mid-generation (its grammar ran past the matcher's
  // budget or left this vocabulary no token): the code of the client error it is.
  std::string client_error_code;
  // For rejected; for an error, > 0 when the engine can serve nothing more (its model's
  // tensor-parallel group failed): unavailable here, another replica may serve it.
  double retry_after_s = 0;
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_prompt_tokens = 0;  // served by the prefix cache
  int preemptions = 0;
  RequestTimings timings;
  // Whether the request had latency targets, and met every one as the engine judges
  // them (engine/slo.h: TTFT, and ITL at EngineConfig::slo_percentile).
  bool has_slo = false;
  bool slo_met = false;
  // With RequestParams::prompt_logprobs: one entry per prompt token after the first
  // (token, logprob, top; no text), in prompt order.
  std::vector<TokenEvent> prompt_logprobs;
  // With RequestParams::pooling: the pooled hidden state [n_embd], not normalized.
  std::vector<float> embedding;
};

using RequestEvent = std::variant<TokenEvent, FinishEvent>;

inline constexpr int kMaxTopLogprobs = 20;

// The engine's rule for a request: one function, which Engine::submit applies and the
// server calls before any compute (a 400 naming ParamError::param).
//
// The prompt's part: not empty, every id within the vocabulary, and shorter than the
// context by at least the first generated token.
std::optional<ParamError> check_prompt(std::span<const int32_t> prompt, int vocab_size, int context_length);
// The whole rule: the sampling values (SamplingParams::check, with the vocabulary), the
// prompt (check_prompt), max_tokens >= 1 (>= 0 with prompt_logprobs, exactly 0 with pooling),
// top_logprobs <= kMaxTopLogprobs, timeout >= 0.
std::optional<ParamError> check_request(const RequestParams& p, int vocab_size, int context_length);

class RequestHandle {
 public:
  explicit RequestHandle(uint64_t id) : id_(id) {}
  uint64_t id() const { return id_; }

  // Client side.
  // Waits up to `timeout_ms` (negative: forever) for an event; false on timeout.
  bool next(RequestEvent* out, int64_t timeout_ms = -1);
  // Takes every queued event without waiting.
  std::vector<RequestEvent> drain();
  void cancel();
  bool cancelled() const;
  bool finished() const;
  // Called (on the engine thread) after each pushed event; lets an event loop wake up.
  void set_notify(std::function<void()> fn);
  // Called by cancel() (on the cancelling thread); lets the engine wake up at once.
  void set_cancel_hook(std::function<void()> fn);

  // Engine side.
  void push(RequestEvent event);

 private:
  const uint64_t id_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<RequestEvent> events_;
  std::function<void()> notify_;
  std::function<void()> cancel_hook_;
  bool cancelled_ = false;
  bool finished_ = false;
};

}  // namespace llms
