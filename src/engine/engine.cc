#include "engine/engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "base/clock.h"
#include "base/log.h"
#include "base/memory.h"
#include "engine/early_exit_policy.h"
#include "engine/kv_sizing.h"
#include "engine/schedule_steps.h"
#include "engine/slo.h"

namespace llms {
namespace {

constexpr size_t kCostWindow = 64;
// Longest the engine thread sleeps without a reason to wake (a safety net: every
// event that gives it work also wakes it).
constexpr int64_t kIdleWaitNs = 50'000'000;
// Compiled grammars kept per engine (each holds its per-point token sets).
constexpr size_t kGrammarCacheEntries = 64;

Hash128 kv_seed(const Hash128& model, DType k, DType v) {
  HashBuilder h;
  h.add_pod(model).add_pod(k).add_pod(v);
  return h.finish128();
}

}  // namespace

Result<std::unique_ptr<Engine>> Engine::create(const Model& model, const Tokenizer& tokenizer,
                                               const EngineConfig& config, Registry* registry) {
  LLMS_RETURN_IF_ERROR(config.validate());
  LLMS_RETURN_IF_ERROR(early_exit_config(config).validate(model.config().n_layer));
  LLMS_ASSIGN_OR_RETURN(const KvSizing kv, size_kv_cache(model, config));
  KvCacheConfig kv_config = model.kv_config(kv.num_blocks, config.block_size, config.k_type, config.v_type);
  kv_config.commit_at_start = config.kv_commit_at_start;
  auto runner = std::make_unique<LocalModelRunner>(model, kv_config, config.threads, kv.context_length);
  log_info("engine: {} batching, {} KV blocks of {} tokens ({:.1f} MiB, {}/{}), context {}, {} threads",
           batching_policy_name(config.batching), kv.num_blocks, config.block_size,
           static_cast<double>(kv.num_blocks * kv.bytes_per_block) / (1 << 20), dtype_name(config.k_type),
           dtype_name(config.v_type), kv.context_length, runner->num_threads());
  auto engine = std::make_unique<Engine>(std::move(runner), tokenizer, config, model.identity(), kv.num_blocks,
                                         kv.context_length, registry);
  if (config.warmup_pass) LLMS_RETURN_IF_ERROR(engine->warm_up());
  if (config.speculative == SpeculativeMode::kDraft) {
    LLMS_ASSIGN_OR_RETURN(engine->draft_model_, Model::load(config.draft_model));
    const int64_t per_block = engine->draft_model_->kv_config(1, config.block_size, DType::kF16, DType::kF16).bytes_per_block();
    // As many sequences of the context as the target holds, within a twentieth of memory.
    const int64_t limit = effective_memory_limit(config.memory_limit_bytes);
    const int64_t blocks = std::max<int64_t>(
        1, std::min<int64_t>(limit / 20 / per_block,
                             static_cast<int64_t>(kv.num_blocks) + config.max_running));
    LLMS_ASSIGN_OR_RETURN(auto draft, DraftModelProposer::create(*engine->draft_model_, model.config().n_vocab,
                                                                 static_cast<int32_t>(std::min<int64_t>(blocks, 1 << 22)),
                                                                 config.block_size, config.threads));
    engine->proposer_ = std::move(draft);
    log_info("engine: speculative decoding with draft model {}", config.draft_model);
  }
  return engine;
}

Engine::Engine(std::unique_ptr<ModelRunner> runner, const Tokenizer& tokenizer, const EngineConfig& config,
               Hash128 model_identity, int32_t num_kv_blocks, int context_length, Registry* registry)
    : runner_(std::move(runner)),
      tokenizer_(tokenizer),
      config_(config),
      model_identity_(model_identity),
      context_length_(context_length),
      own_registry_(registry ? nullptr : std::make_unique<Registry>()),
      registry_(registry ? registry : own_registry_.get()),
      metrics_(*registry_),
      expert_metrics_(*registry_),
      kv_(num_kv_blocks, config.block_size, kv_seed(model_identity, config.k_type, config.v_type), config.prefix_cache),
      scheduler_(make_scheduler(config)),
      admission_({config.max_waiting_requests, config.max_waiting_tokens, config.kv_high_watermark,
                  config.kv_low_watermark, config.rss_high_watermark, config.rss_low_watermark}),
      result_cache_(config.result_cache_bytes),
      grammar_cache_(tokenizer, kGrammarCacheEntries),
      status_(metrics_, admission_, effective_memory_limit(config.memory_limit_bytes)),
      stats_window_(config.stats_window),
      clock_(now_ns) {
  if (config.speculative == SpeculativeMode::kNgram) proposer_ = std::make_unique<NgramProposer>(config.spec_ngram_max);
  // create() checked the exit layers against the model; a runner built by hand must fit.
  const Status exit_ok = runner_->set_early_exit(early_exit_config(config_));
  LLMS_CHECK(exit_ok.ok(), exit_ok.message());
  exit_identity_ = early_exit_identity(model_identity_, config_);
  kv_.set_listener(config_.kv_events.get());
  step_config_ = config_;
  if (config_.autotune != AutotuneMode::kOff && config_.batching == BatchingPolicy::kDynamic) {
    batch_tuner_ = std::make_unique<DynamicBatchTuner>(
        BatchTunerBounds{config_.max_batch_size, config_.max_delay_ms, config_.slo_interactive.ttft_ms * 1e-3});
  } else if (config_.autotune != AutotuneMode::kOff) {
    tuner_ = std::make_unique<AutoTuner>(
        AutotuneBounds{std::min(config_.autotune_min_batch_tokens, config_.max_batch_tokens), config_.max_batch_tokens,
                       config_.max_running},
        config_.slo_interactive.itl_ms * 1e-3, config_.slo_percentile);
    apply_tuning();  // the tuner's starting values
  }
  if (config_.slo_shed) shedder_ = std::make_unique<SloShedder>();
  if (config_.profile) {
    profile_.set_enabled(true);
    runner_->set_profile(&profile_);
  }
  const WeightsMemory weights = runner_->weights_memory();
  metrics_.memory_bytes.with({"weights"}).set(static_cast<double>(weights.owned_bytes));
  metrics_.memory_bytes.with({"weights_mapped"}).set(static_cast<double>(weights.mapped_bytes));
  metrics_.memory_bytes.with({"file_mapped_resident"}).set(static_cast<double>(weights.mapped_resident_bytes));
  metrics_.memory_bytes.with({"kv_reserved"}).set(static_cast<double>(runner_->kv_reserved_bytes()));
  publish(clock_(), true);
}

Status Engine::warm_up() {
  const Stopwatch watch;
  const int64_t capacity = static_cast<int64_t>(kv_.num_blocks()) * config_.block_size;
  const int64_t tokens = std::min<int64_t>({config_.max_batch_tokens, context_length_, capacity});
  if (tokens < 1) return ok_status();
  const int64_t rows = std::clamp<int64_t>(config_.max_running, 1, tokens);
  // One prompt-like chunk and rows - 1 decode-like ones of a token each, all over the
  // same blocks (every block is free now, and these are left free: sequences write a
  // position before they read it, and nothing of this pass enters the prefix cache).
  std::vector<int32_t> ids(static_cast<size_t>(tokens), 0);
  std::vector<int32_t> table(static_cast<size_t>((tokens + config_.block_size - 1) / config_.block_size));
  std::iota(table.begin(), table.end(), 0);
  const int64_t prompt = tokens - rows + 1;
  std::vector<SequenceChunk> chunks;
  chunks.push_back({std::span<const int32_t>(ids).first(static_cast<size_t>(prompt)), 0, table, LogitsWanted::kLast});
  for (int64_t i = 1; i < rows; ++i) {
    chunks.push_back({std::span<const int32_t>(ids).first(1), prompt + i - 1, table, LogitsWanted::kLast});
  }
  LLMS_RETURN_IF_ERROR(runner_->forward(chunks, fwd_));
  runner_->reset_expert_load();
  profile_.clear();
  log_info("engine: warm-up pass of {} tokens ({} rows of logits) in {:.0f} ms", tokens, rows, watch.elapsed_s() * 1e3);
  return ok_status();
}

Engine::~Engine() {
  stop();
  cancel_remaining("the engine was destroyed");
}

void Engine::cancel_remaining(const std::string& why) {
  intake();
  std::vector<Sequence*> left = waiting_;
  left.insert(left.end(), running_.begin(), running_.end());
  for (Sequence* s : left) finish(*s, FinishReason::kCancelled, why);
}

Status Engine::validate_request(const RequestParams& p) const {
  LLMS_RETURN_IF_ERROR(p.sampling.validate());
  if (p.prompt.empty()) return invalid_argument("the prompt is empty");
  for (int32_t t : p.prompt) {
    if (t < 0 || t >= runner_->vocab_size()) {
      return invalid_argument(fmt::format("token id {} is outside the vocabulary (0..{})", t, runner_->vocab_size() - 1));
    }
  }
  if (static_cast<int64_t>(p.prompt.size()) >= context_length_) {
    return invalid_argument(fmt::format("the prompt has {} tokens; the context holds {} (prompt plus at least one "
                                        "generated token)",
                                        p.prompt.size(), context_length_));
  }
  if (p.max_tokens < 1) return invalid_argument(fmt::format("max_tokens must be >= 1, got {}", p.max_tokens));
  if (p.top_logprobs > 20) return invalid_argument("top_logprobs must be at most 20");
  if (p.timeout_s < 0) return invalid_argument("timeout must be >= 0");
  for (const auto& [id, bias] : p.sampling.logit_bias) {
    if (id >= runner_->vocab_size()) {
      return invalid_argument(fmt::format("logit_bias names token id {}, outside the vocabulary (0..{})", id,
                                          runner_->vocab_size() - 1));
    }
  }
  if (p.grammar && &p.grammar->vocab() != grammar_cache_.vocabulary().get()) {
    return invalid_argument("the grammar was compiled for another engine's vocabulary");
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
  seq->arrival_ns = clock_();
  const double timeout = params.timeout_s > 0 ? params.timeout_s : config_.default_timeout_s;
  seq->deadline_ns = seq->arrival_ns + static_cast<int64_t>(timeout * 1e9);
  seq->slo = resolve_slo(params, config_);
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

void Engine::intake() {
  std::vector<std::unique_ptr<Sequence>> arrived;
  {
    std::lock_guard<std::mutex> lock(mu_);
    arrived.swap(inbox_);
  }
  std::random_device entropy;
  for (auto& up : arrived) {
    Sequence& s = *up;
    s.tokens = s.params.prompt;
    s.prompt_len = static_cast<int64_t>(s.tokens.size());
    s.spec_k = config_.spec_tokens;
    s.early_exit = early_exit_applies(config_, s.params);
    const uint64_t seed = (static_cast<uint64_t>(entropy()) << 32) | entropy();
    s.sampler = std::make_unique<Sampler>(s.params.sampling, seed, s.params.prompt);
    s.decoder = std::make_unique<StreamingDecoder>(tokenizer_);
    s.stop = std::make_unique<StopMatcher>(s.params.stop);
    if (s.params.grammar) s.matcher = std::make_unique<GrammarMatcher>(s.params.grammar);
    // Long-job lane: cost far above the recent median.
    if (recent_costs_.size() >= 8) {
      std::vector<int64_t> sorted(recent_costs_.begin(), recent_costs_.end());
      std::nth_element(sorted.begin(), sorted.begin() + static_cast<ptrdiff_t>(sorted.size() / 2), sorted.end());
      s.long_job = static_cast<double>(s.cost()) > config_.long_job_factor * static_cast<double>(sorted[sorted.size() / 2]);
    }
    recent_costs_.push_back(s.cost());
    if (recent_costs_.size() > kCostWindow) recent_costs_.pop_front();
    if (result_key(s.params)) replay_[s.id];
    if (batch_tuner_) batch_tuner_->arrival(s.arrival_ns);
    waiting_.push_back(&s);
    sequences_.emplace(s.id, std::move(up));
  }
}

void Engine::reap(int64_t now) {
  std::vector<Sequence*> ended;
  for (auto* list : {&waiting_, &running_}) {
    for (Sequence* s : *list) {
      if (s->handle->cancelled() || now >= s->deadline_ns) ended.push_back(s);
    }
  }
  for (Sequence* s : ended) finish(*s, s->handle->cancelled() ? FinishReason::kCancelled : FinishReason::kTimeout);
}

void Engine::shed(int64_t now) {
  // Until the queue's rate is known nothing is shed: no need to order the queue for it.
  if (waiting_.empty() || shedder_->service_rate() <= 0) return;
  order_waiting(waiting_, step_config_, now, config_.prefix_cache && config_.prefix_clustering ? &kv_ : nullptr);
  const double retry = shedder_->retry_after_s(waiting_.size());
  for (const ShedDecision& d :
       shedder_->unattainable(waiting_, now, step_config_.max_batch_tokens, static_cast<int64_t>(running_.size()))) {
    metrics_.rejected.with({"slo"}).inc();
    finish(*d.seq, FinishReason::kRejected,
           fmt::format("the server is past its capacity: this request's first token is forecast {:.0f} ms after "
                       "arrival, past its {:.0f} ms TTFT target; try again later",
                       d.forecast_ttft_s * 1e3, d.seq->slo.ttft_ms),
           retry);
  }
}

bool Engine::step() {
  if (reset_profile_.exchange(false, std::memory_order_relaxed)) profile_.clear();
  const Stopwatch total;
  std::optional<ScopedStepPart> part(std::in_place, &profile_, StepPart::kSchedule);
  const int64_t now = clock_();
  intake();
  reap(now);
  if (shedder_) shed(now);
  track_batch(nullptr, now);
  if (waiting_.empty() && running_.empty()) {
    publish(now, false);
    profile_.discard_step();
    return false;
  }
  part.reset();
  propose_drafts();
  part.emplace(&profile_, StepPart::kSchedule);
  SchedulerContext ctx{waiting_, running_, kv_, step_config_, now};
  const SchedulePlan plan = scheduler_->schedule(ctx);
  admit(plan, now);
  if (shedder_) {
    const auto first =
        std::count_if(plan.admitted.begin(), plan.admitted.end(), [](const Admission& a) { return a.first; });
    shedder_->on_schedule(now, first, !plan.chunks.empty() && !waiting_.empty());
  }
  track_batch(&plan, now);
  if (plan.chunks.empty()) {
    publish(now, false);
    profile_.discard_step();
    return false;
  }
  part.reset();
  const Stopwatch watch;
  const Status st = run_plan(plan);
  const double step_s = watch.elapsed_s();
  part.emplace(&profile_, StepPart::kSchedule);
  status_.account_kv_slots(running_, kv_);
  if (!st.ok()) {
    log_error("engine step failed: {}", st.to_string());
    for (const auto& c : plan.chunks) {
      if (sequences_.count(c.seq->id)) finish(*c.seq, FinishReason::kError, st.message());
    }
  }
  observe_step(plan, step_s);
  track_batch(nullptr, clock_());
  publish(clock_(), false);
  part.reset();
  if (profile_.enabled()) {
    for (int i = 0; i < kNumStepParts; ++i) {
      const auto part_ns = profile_.current()[static_cast<size_t>(i)];
      metrics_.step_part_time.with({step_part_name(static_cast<StepPart>(i))}).inc(static_cast<double>(part_ns) * 1e-9);
    }
    metrics_.step_part_time.with({"pool_wait"}).inc(static_cast<double>(profile_.current_wait()) * 1e-9);
    profile_.end_step(plan.num_tokens, total.elapsed_ns());
  }
  return true;
}

// Sequences scheduled for the first time leave the admission queue.
void Engine::admit(const SchedulePlan& plan, int64_t now) {
  metrics_.preemptions.inc(static_cast<double>(plan.preempted.size()));
  for (const Admission& a : plan.admitted) {
    if (!a.first) continue;
    Sequence& s = *a.seq;
    admission_.release_waiting(s.prompt_len);
    metrics_.queue_time.observe(static_cast<double>(now - s.arrival_ns) * 1e-9);
    metrics_.prefix_queries.inc(static_cast<double>(s.prompt_len));
    metrics_.prefix_hits.inc(static_cast<double>(s.cached_prompt_tokens));
    if (s.waited_for_prefix) metrics_.prefix_clustered.inc();
  }
}

void Engine::observe_step(const SchedulePlan& plan, double step_s) {
  metrics_.steps.inc();
  metrics_.step_time.observe(step_s);
  metrics_.batch_size.observe(static_cast<double>(plan.chunks.size()));
  metrics_.batch_tokens.observe(static_cast<double>(plan.num_tokens));
  metrics_.batch_efficiency.observe(static_cast<double>(plan.num_tokens) / step_config_.max_batch_tokens);
  metrics_.prefill_share.observe(static_cast<double>(plan.prefill_tokens) / static_cast<double>(plan.num_tokens));
  metrics_.prefill_tokens_computed.inc(static_cast<double>(plan.prefill_tokens));
  if (runner_->expert_count() > 0) expert_metrics_.observe(runner_->expert_load(), runner_->expert_count());
  if (tuner_) tune(plan, step_s);
  StepSample sample;
  sample.unix_ms = unix_ms();
  sample.duration_s = step_s;
  sample.batch_tokens = static_cast<int32_t>(plan.num_tokens);
  sample.prefill_tokens = static_cast<int32_t>(plan.prefill_tokens);
  sample.token_budget = step_config_.max_batch_tokens;
  sample.batch_size = static_cast<int32_t>(plan.chunks.size());
  sample.running = static_cast<int32_t>(running_.size());
  sample.waiting = static_cast<int32_t>(waiting_.size());
  sample.kv_blocks_used = kv_.num_used();
  sample.kv_blocks_total = kv_.num_blocks();
  sample.rss_bytes = static_cast<int64_t>(metrics_.rss_bytes.value());
  stats_window_.record_step(sample);
}

// The auto-tuner's decision, reported (gauges, a log line when it changes) and, with
// autotune = on, applied to the next steps' budget and cap.
void Engine::tune(const SchedulePlan& plan, double step_s) {
  if (!tuner_->observe(plan.num_tokens, static_cast<int64_t>(plan.chunks.size()), step_s)) return;
  const AutotuneDecision& d = tuner_->decision();
  const bool apply = config_.autotune == AutotuneMode::kOn;
  metrics_.autotune_batch_tokens.set(d.batch_tokens);
  metrics_.autotune_max_running.set(d.max_running);
  metrics_.autotune_predicted_step.set(d.predicted_step_s);
  if (d.changed) {
    metrics_.autotune_decisions.with({apply ? "applied" : "observed"}).inc();
    log_info("autotune ({}): max_batch_tokens {}, max_running {}, predicted step {:.2f} ms (fit: {:.2f} ms + {:.2f} "
             "us/token + {:.2f} us/sequence; p{:g} of measured / predicted {:.2f})",
             autotune_mode_name(config_.autotune), d.batch_tokens, d.max_running, d.predicted_step_s * 1e3,
             tuner_->fixed_s() * 1e3, tuner_->per_token_s() * 1e6, tuner_->per_sequence_s() * 1e6,
             100 * tuner_->percentile(), tuner_->tail_factor());
  }
  apply_tuning();
}

// With autotune = on, the tuner's current budget and cap bind the next steps.
void Engine::apply_tuning() {
  if (config_.autotune != AutotuneMode::kOn) return;
  step_config_.max_batch_tokens = tuner_->decision().batch_tokens;
  step_config_.max_running = tuner_->decision().max_running;
}

void Engine::track_batch(const SchedulePlan* plan, int64_t now) {
  if (!batch_tuner_) return;
  if (batch_size_ > 0 && running_.empty()) {
    const int size = batch_size_;
    batch_size_ = 0;
    if (batch_tuner_->batch_done(size, static_cast<double>(now - batch_start_ns_) * 1e-9, now,
                                 static_cast<int>(waiting_.size()))) {
      const BatchTunerDecision& d = batch_tuner_->decision();
      const bool apply = config_.autotune == AutotuneMode::kOn;
      metrics_.autotune_max_batch_size.set(d.max_batch_size);
      metrics_.autotune_max_delay.set(d.max_delay_ms * 1e-3);
      metrics_.autotune_arrival_rate.set(d.arrival_rate);
      if (d.changed) {
        metrics_.autotune_decisions.with({apply ? "applied" : "observed"}).inc();
        log_info("autotune ({}): max_batch_size {}, max_delay_ms {:.1f}, arrivals {:.2f}/s, predicted batch {:.1f} ms "
                 "(fit: {:.1f} ms + {:.1f} ms/request)",
                 autotune_mode_name(config_.autotune), d.max_batch_size, d.max_delay_ms, d.arrival_rate,
                 d.predicted_batch_s * 1e3, batch_tuner_->fixed_s() * 1e3, batch_tuner_->per_request_s() * 1e3);
      }
      if (apply) {
        step_config_.max_batch_size = d.max_batch_size;
        step_config_.max_delay_ms = d.max_delay_ms;
      }
    }
  }
  if (plan && batch_size_ == 0 && !plan->admitted.empty()) {
    batch_size_ = static_cast<int>(plan->admitted.size());
    batch_start_ns_ = now;
  }
}

Status Engine::run_plan(const SchedulePlan& plan) {
  chunks_.clear();
  for (const auto& c : plan.chunks) {
    Sequence& s = *c.seq;
    SequenceChunk ch;
    ch.tokens = std::span<const int32_t>(s.tokens).subspan(static_cast<size_t>(s.computed), static_cast<size_t>(c.n));
    ch.start_pos = s.computed;
    ch.block_table = s.blocks.table.blocks;
    ch.logits = s.computed + c.n == static_cast<int64_t>(s.tokens.size()) ? LogitsWanted::kLast : LogitsWanted::kNone;
    if (s.early_exit) ch.early_exit_from = s.prompt_len;  // generated positions only
    if (c.n_draft > 0) {  // the decode token and the proposed ones, every position scored
      s.verify_input.assign(ch.tokens.begin(), ch.tokens.end());
      s.verify_input.insert(s.verify_input.end(), s.draft.begin(), s.draft.begin() + c.n_draft);
      ch.tokens = s.verify_input;
      ch.logits = LogitsWanted::kAll;
    }
    chunks_.push_back(ch);
  }
  const Stopwatch watch;
  LLMS_RETURN_IF_ERROR(runner_->forward(chunks_, fwd_));
  const double compute_s = watch.elapsed_s();
  const int64_t done = clock_();
  draw_ahead(plan);
  for (size_t i = 0; i < plan.chunks.size(); ++i) {
    Sequence& s = *plan.chunks[i].seq;
    s.computed += plan.chunks[i].n;
    s.compute_s += compute_s;
    if (plan.chunks[i].n_draft > 0) {
      verify(s, i, plan.chunks[i].n_draft, done);
      continue;
    }
    {
      const ScopedStepPart part(&profile_, StepPart::kSchedule);
      kv_.commit(s.blocks, s.committable());
    }
    if (chunks_[i].logits == LogitsWanted::kNone) continue;
    const float* logits = fwd_.last_of(i, chunks_[i]);
    if (s.early_exit) count_exit(i);
    int32_t token = draws_[i];
    if (token < 0) {
      const ScopedStepPart part(&profile_, StepPart::kSampling);
      token = sample_next(s, logits);
    }
    if (token >= 0) on_token(s, token, logits, done);
  }
  return ok_status();
}

std::optional<Hash128> Engine::result_key(const RequestParams& params) const {
  return ResultCache::key_for(early_exit_applies(config_, params) ? exit_identity_ : model_identity_, params);
}

void Engine::count_exit(size_t chunk) {
  if (fwd_.exit_layer.empty()) return;  // a pass without early exit: the runner ran full depth
  const int64_t row = fwd_.first_row[chunk] + (chunks_[chunk].logits == LogitsWanted::kAll
                                                   ? static_cast<int64_t>(chunks_[chunk].tokens.size()) - 1
                                                   : 0);
  const int32_t layer = fwd_.exit_layer[static_cast<size_t>(row)];
  const bool exited = std::find(config_.exit_layers.begin(), config_.exit_layers.end(), layer) !=
                      config_.exit_layers.end();
  metrics_.early_exit_tokens.with({exited ? std::to_string(layer) : "full"}).inc();
}

void Engine::publish(int64_t now, bool force_rss) {
  size_t queued = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    queued = inbox_.size();
  }
  status_.publish(now, force_rss, kv_, static_cast<int>(running_.size()), static_cast<int>(waiting_.size() + queued));
}

EngineSnapshot Engine::snapshot() const {
  EngineSnapshot s = status_.snapshot();
  s.expert_load_imbalance = expert_metrics_.overall();
  std::lock_guard<std::mutex> lock(mu_);
  s.thread_running = thread_.joinable() && !stop_requested_;
  return s;
}

void Engine::run_until_idle() {
  for (;;) {
    if (step()) continue;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (waiting_.empty() && running_.empty() && inbox_.empty()) return;
    }
    wait_for_work(kIdleWaitNs);  // work waits on a timer (a dynamic batch filling up)
  }
}

void Engine::begin_drain() { admission_.set_draining(true); }

void Engine::wake() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    wake_requested_ = true;
  }
  cv_.notify_one();
}

void Engine::start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (thread_.joinable()) return;
  stop_requested_ = false;
  thread_ = std::thread([this] { thread_main(); });
}

void Engine::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!thread_.joinable()) return;
    stop_requested_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

void Engine::wait_for_work(int64_t cap_ns) {
  const int64_t now = clock_();
  int64_t wake_at = now + cap_ns;
  SchedulerContext ctx{waiting_, running_, kv_, step_config_, now};
  if (const int64_t t = scheduler_->next_wake_ns(ctx); t > 0) wake_at = std::min(wake_at, t);
  for (const Sequence* s : waiting_) wake_at = std::min(wake_at, s->deadline_ns);
  std::unique_lock<std::mutex> lock(mu_);
  const auto delay = std::chrono::nanoseconds(std::max<int64_t>(0, wake_at - now));
  cv_.wait_for(lock, delay, [&] { return stop_requested_ || wake_requested_ || !inbox_.empty(); });
  wake_requested_ = false;
}

void Engine::thread_main() {
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_requested_) break;
    }
    if (step()) continue;
    wait_for_work(kIdleWaitNs);  // idle, or waiting on a timer
  }
  cancel_remaining("the engine stopped");
  publish(clock_(), false);
}

}  // namespace llms
