// Engine: continuous batching over one model. One engine thread owns the waiting and
// running sets, the KV block manager and every Sequence; other threads submit
// requests and read their events through RequestHandles. Every request ends exactly
// once with a finish reason (stop, length, timeout, cancelled, error), or is refused
// at submit (rejected: the Status says why).
//
// Two ways to drive it: start() runs the engine thread; step()/run_until_idle() run
// steps on the caller's thread (CLI batch runs, tests). Do not mix them.
//
// Constrained requests carry a CompiledGrammar made by compile_grammar() for this
// engine's vocabulary; the engine thread masks their logits before sampling, in the
// same batch as every other request.
//
// A step is schedule → execute → update, as vLLM's EngineCore.step: intake, reaping
// and the scheduler's plan; the forward pass and each chunk's next token handed to its
// request; then the step's accounting and status. Features that watch steps (the
// auto-tuners, SLO shedding, the stats window, the expert metrics, the profile's report)
// are StepObservers (step_observer.h), not code in the step: the engine makes its own
// from the config, and add_observer() plugs in others.
//
// Thread-safety: submit(), cached(), compile_grammar(), snapshot(), stats_window(), begin_drain(),
// wake() from any thread; step() from one thread at a time, never while the engine thread runs.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "engine/admission.h"
#include "engine/engine_config.h"
#include "engine/engine_metrics.h"
#include "engine/engine_observers.h"
#include "engine/memory_relief.h"
#include "engine/engine_status.h"
#include "engine/grammar_cache.h"
#include "engine/model_runner.h"
#include "engine/proposer.h"
#include "engine/request.h"
#include "engine/result_cache.h"
#include "engine/scheduler.h"
#include "engine/stats_window.h"
#include "engine/step_observer.h"
#include "kv/kv_block_manager.h"
#include "metrics/metrics.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace llms {

class Engine {
 public:
  // An engine on `model` with a KV cache sized by the config. The model and the
  // tokenizer must outlive the engine.
  static Result<std::unique_ptr<Engine>> create(const Model& model, const Tokenizer& tokenizer,
                                                const EngineConfig& config, Registry* registry = nullptr);
  // Any runner (tests use a fake one). `context_length` caps positions per sequence.
  Engine(std::unique_ptr<ModelRunner> runner, const Tokenizer& tokenizer, const EngineConfig& config,
         Hash128 model_identity, int32_t num_kv_blocks, int context_length, Registry* registry = nullptr);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Queues a request. INVALID_ARGUMENT for a request that can never run (empty or
  // too-long prompt, bad ids or sampling values); RESOURCE_EXHAUSTED when the queue is
  // full (retry_after_s set); UNAVAILABLE above a memory watermark or while draining.
  Result<std::shared_ptr<RequestHandle>> submit(RequestParams params, double* retry_after_s = nullptr);

  // The stored completion of an identical deterministic request, if any.
  std::optional<CachedCompletion> cached(const RequestParams& params);
  ResultCacheStats result_cache_stats() const { return result_cache_.stats(); }

  // Joins a grammar with this engine's vocabulary, through a cache keyed by the
  // grammar's hash (the per-token precomputation is done once per grammar), under
  // `budget` (GrammarCache::compile).
  Result<std::shared_ptr<const CompiledGrammar>> compile_grammar(std::shared_ptr<const Grammar> g,
                                                                 const GrammarBudget& budget = {}) {
    return grammar_cache_.compile(std::move(g), budget);
  }
  GrammarCacheStats grammar_cache_stats() const { return grammar_cache_.stats(); }

  void start();
  // Stops the engine thread; every request still queued or running ends "cancelled".
  void stop();
  // Refuse new requests from now on (graceful shutdown).
  void begin_drain();
  // Makes the engine thread (or a run_until_idle() wait) look at its work now.
  void wake();

  // Manual mode: one step; true when it ran a forward pass.
  bool step();
  // Steps until nothing is waiting or running; while work waits on a timer (a
  // dynamic batch filling up) it sleeps until then or a wake().
  void run_until_idle();

  EngineSnapshot snapshot() const;
  // The admission controller's state now (the snapshot's is as of the last publish).
  AdmissionState admission_state() const { return admission_.state(); }
  // Where the steps' time went (EngineConfig::profile); read it after stop(), or from
  // the engine thread in manual mode.
  const StepProfile& step_profile() const { return profile_; }
  // Any thread: the profile starts over at the engine's next step (a benchmark's
  // warm-up is left out of it).
  void reset_step_profile() { reset_profile_.store(true, std::memory_order_relaxed); }
  // The last steps and requests, for the dashboard; any thread.
  StatsWindowSnapshot stats_window() const { return stats_->window().snapshot(); }
  // Counts an output as abnormal of `kind` in llmserve_abnormal_outputs_total, for a
  // check made outside the engine (the quality monitor's cross-perplexity); any thread.
  void count_abnormal_output(const char* kind) { metrics_.abnormal_outputs.with({kind}).inc(); }
  const EngineConfig& config() const { return config_; }
  int context_length() const { return context_length_; }
  int vocab_size() const { return runner_->vocab_size(); }
  int32_t num_kv_blocks() const { return kv_.num_blocks(); }
  Registry& registry() { return *registry_; }
  const Tokenizer& tokenizer() const { return tokenizer_; }

  // Hands the prefix cache's block events to `listener` (null: none); the engine
  // shares its ownership. Call before the first submit().
  void set_kv_events(std::shared_ptr<KvEventListener> listener);

  // Replaces the proposer of speculative decoding (benchmarks, tests); null turns
  // speculation off. Call before the first submit().
  void set_proposer(std::unique_ptr<Proposer> proposer) { proposer_ = std::move(proposer); }

  // Adds `observer` to the step's observers, after the engine's own but before the
  // profile's report (which closes the step). Call before start() or the first step().
  // The engine owns it; the reference stays valid as long as the engine.
  StepObserver& add_observer(std::unique_ptr<StepObserver> observer);

  // Replaces the monotonic clock (nanoseconds) used for arrivals, deadlines and
  // batching delays. For tests; call before the first submit().
  void set_clock(std::function<int64_t()> clock) { clock_ = std::move(clock); }

 private:
  // The pass of EngineConfig::warmup_pass, before any request; its time is logged.
  Status warm_up();
  // The observers the config asks for, in their hooks' order (engine_observers.h).
  void add_own_observers();
  void thread_main();

  // The step's three parts. schedule(): intake, reaping, the observers' refusals and
  // the scheduler's plan; nothing when no chunk can run. execute(): the forward pass,
  // then each chunk's next token handed to its request. update(): the step's
  // accounting, its failed requests ended, the status published, the observers told.
  std::optional<SchedulePlan> schedule(int64_t now);
  Status execute(const SchedulePlan& plan);
  void update(const StepResult& result);
  // A step that runs nothing: the status published, its profile dropped.
  std::nullopt_t idle(int64_t now);
  StepState step_state(int64_t now) const;
  void intake();
  void reap(int64_t now);
  // The observers' on_step_start, each one's refusals ended before the next is called.
  void start_step(int64_t now);
  void admit(const SchedulePlan& plan, int64_t now);
  void count_step(const SchedulePlan& plan, double step_s);
  void on_token(Sequence& s, int32_t token, const float* logits, int64_t now);
  void propose_drafts();
  // Checks chunk `chunk` of the last pass (a decode with n_draft proposed tokens) and
  // emits what it accepts (engine_speculative.cc).
  void verify(Sequence& s, size_t chunk, int64_t n_draft, int64_t now);
  // Samples the next token of `s` from `logits`, under its grammar when it has one;
  // -1 when the grammar leaves no token (the sequence is then finished).
  int32_t sample_next(Sequence& s, const float*& logits);
  void draw_ahead(const SchedulePlan& plan);
  // Records the log-probabilities of the prompt tokens that chunk `chunk` (computed
  // with every position's logits) predicts, into s.prompt_scores.
  void score_prompt(Sequence& s, size_t chunk);
  // An embedding's chunk `chunk` of this step into s.pooled (RequestParams::pooling).
  void pool_hidden(Sequence& s, size_t chunk);
  void finish(Sequence& s, FinishReason reason, const std::string& message = "", double retry_after_s = 0);
  // Publishes the status; with the memory breaker open, releases memory when due
  // and closes the breaker when nothing is left running.
  void publish(int64_t now, bool force_rss);
  void cancel_remaining(const std::string& why);
  // The runner can never run again (ModelRunner::health()): admission closes and every
  // sequence ends kError with a retry hint (the server's 503).
  void lose_model(const Status& why);
  // Sleeps until a submission, a cancel or wake(), stop(), the scheduler's timer or
  // the nearest deadline of a waiting request, for at most `cap_ns`.
  void wait_for_work(int64_t cap_ns);
  Status validate_request(const RequestParams& p) const;
  // The result-cache key of `params` (early-exit requests carry the exit settings).
  std::optional<Hash128> result_key(const RequestParams& params) const;
  // Counts the exit layer of chunk `chunk`'s token in the last pass (early-exit requests).
  void count_exit(size_t chunk);

  std::unique_ptr<ModelRunner> runner_;
  const Tokenizer& tokenizer_;
  EngineConfig config_;
  BatchingConfig step_batching_;  // config_.batching with the auto-tuners' limits (engine thread)
  Hash128 model_identity_;
  Hash128 exit_identity_;  // model_identity_ mixed with the exit settings
  int context_length_;
  std::unique_ptr<Registry> own_registry_;
  Registry* registry_;
  EngineMetrics metrics_;
  std::shared_ptr<KvEventListener> kv_events_;  // set_kv_events(); outlives kv_, which calls it
  KvBlockManager kv_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<Model> draft_model_;  // speculative = draft
  std::unique_ptr<Proposer> proposer_;
  AdmissionController admission_;
  ResultCache result_cache_;
  GrammarCache grammar_cache_;
  EngineStatus status_;
  MemoryRelief relief_;
  std::function<int64_t()> clock_;
  std::vector<std::unique_ptr<StepObserver>> observers_;  // in their hooks' order
  const StatsRecorder* stats_ = nullptr;          // of observers_, read by stats_window()
  const ExpertLoadRecorder* experts_ = nullptr;   // of observers_, read by snapshot()

  // Engine-thread state.
  std::unordered_map<uint64_t, std::unique_ptr<Sequence>> sequences_;
  std::vector<Sequence*> waiting_;
  std::vector<Sequence*> running_;
  std::deque<int64_t> recent_costs_;
  std::unordered_map<uint64_t, std::vector<TokenEvent>> replay_;  // cacheable requests' events
  std::vector<SequenceChunk> chunks_;                              // the step's batch, reused
  std::vector<int32_t> draws_;  // the step's tokens drawn ahead, by chunk (-1: none), reused
  std::vector<int64_t> to_draw_;  // chunks whose tokens are drawn ahead, reused
  ForwardOutput fwd_;
  StepProfile profile_;
  std::vector<float> constrained_logits_;  // a constrained sequence's masked row
  std::vector<uint32_t> token_mask_;

  // Shared with submitting threads.
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<Sequence>> inbox_;
  std::atomic<uint64_t> next_id_{1};
  std::atomic<bool> reset_profile_{false};
  bool stop_requested_ = false;
  bool wake_requested_ = false;  // a wake() since the engine last looked (cancels set it)
  std::thread thread_;
};

}  // namespace llms
