#include "engine/engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <random>

#include "base/clock.h"
#include "base/log.h"
#include "base/memory.h"
#include "engine/early_exit_policy.h"
#include "engine/slo.h"
#include "model/lora.h"

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

Engine::Engine(std::unique_ptr<ModelRunner> runner, const Tokenizer& tokenizer, const EngineConfig& config,
               Hash128 model_identity, int32_t num_kv_blocks, int context_length, Registry* registry)
    : runner_(std::move(runner)),
      tokenizer_(tokenizer),
      config_(config),
      step_batching_(config.batching),
      model_identity_(model_identity),
      context_length_(context_length),
      own_registry_(registry ? nullptr : std::make_unique<Registry>()),
      registry_(registry ? registry : own_registry_.get()),
      metrics_(*registry_),
      kv_(num_kv_blocks, config.kv.block_size, kv_seed(model_identity, config.kv.k_type, config.kv.v_type),
          config.kv.prefix_cache),
      scheduler_(make_scheduler(config.batching.policy)),
      admission_(config.admission),
      result_cache_(config.result_cache_bytes),
      grammar_cache_(tokenizer, kGrammarCacheEntries),
      status_(metrics_, admission_, effective_memory_limit(config.admission.memory_limit_bytes)),
      relief_(metrics_),
      clock_(now_ns) {
  if (config.speculative.mode == SpeculativeMode::kNgram) {
    proposer_ = std::make_unique<NgramProposer>(config.speculative.ngram_max);
  }
  // create() checked the exit layers against the model; a runner built by hand must fit.
  const Status exit_ok = runner_->set_early_exit(config_.early_exit);
  LLMS_CHECK(exit_ok.ok(), exit_ok.message());
  exit_identity_ = early_exit_identity(model_identity_, config_);
  add_own_observers();
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

void Engine::add_own_observers() {
  auto experts = std::make_unique<ExpertLoadRecorder>(*registry_);
  experts_ = experts.get();
  observers_.push_back(std::move(experts));
  if (config_.slo.shed) observers_.push_back(std::make_unique<SloShedding>(config_.kv.clusters(), metrics_));
  if (config_.slo.autotune != AutotuneMode::kOff && config_.batching.policy == BatchingPolicy::kDynamic) {
    observers_.push_back(std::make_unique<BatchTuning>(config_, &step_batching_, metrics_));
  } else if (config_.slo.autotune != AutotuneMode::kOff) {
    observers_.push_back(std::make_unique<AutoTuning>(config_, &step_batching_, metrics_));
  }
  auto stats = std::make_unique<StatsRecorder>(config_.stats_window, metrics_.rss_bytes);
  stats_ = stats.get();
  observers_.push_back(std::move(stats));
  if (config_.profile) observers_.push_back(std::make_unique<StepProfileReport>(profile_, metrics_));
}

StepObserver& Engine::add_observer(std::unique_ptr<StepObserver> observer) {
  StepObserver& o = *observer;
  const auto before_report = observers_.end() - (config_.profile ? 1 : 0);
  observers_.insert(before_report, std::move(observer));
  return o;
}

void Engine::set_kv_events(std::shared_ptr<KvEventListener> listener) {
  kv_events_ = std::move(listener);
  kv_.set_listener(kv_events_.get());
}

StepState Engine::step_state(int64_t now) const {
  return StepState{now, waiting_, running_, kv_, step_batching_, *runner_};
}

Engine::~Engine() {
  stop();
  cancel_remaining("the engine was destroyed");
}

void Engine::lose_model(const Status& why) {
  admission_.set_draining(true);  // new requests: 503, and /ready says so
  publish(clock_(), false);       // before any 503 below reaches its client
  intake();
  std::vector<Sequence*> left = waiting_;
  left.insert(left.end(), running_.begin(), running_.end());
  for (Sequence* s : left) finish(*s, FinishReason::kError, "the model can no longer run: " + why.message(), 1.0);
}

void Engine::cancel_remaining(const std::string& why) {
  intake();
  std::vector<Sequence*> left = waiting_;
  left.insert(left.end(), running_.begin(), running_.end());
  for (Sequence* s : left) finish(*s, FinishReason::kCancelled, why);
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
    s.spec_k = config_.speculative.tokens;
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
      const double median = static_cast<double>(sorted[sorted.size() / 2]);
      s.long_job = static_cast<double>(s.cost()) > config_.batching.long_job_factor * median;
      if (s.long_job) metrics_.long_jobs.inc();
    }
    recent_costs_.push_back(s.cost());
    if (recent_costs_.size() > kCostWindow) recent_costs_.pop_front();
    if (result_key(s.params)) replay_[s.id];
    for (auto& o : observers_) o->on_intake(s);
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

void Engine::start_step(int64_t now) {
  std::vector<Refusal> refused;
  for (auto& o : observers_) {
    o->on_step_start(step_state(now), refused);
    for (const Refusal& r : refused) finish(*r.seq, FinishReason::kRejected, r.message, r.retry_after_s);
    refused.clear();
  }
}

bool Engine::step() {
  if (reset_profile_.exchange(false, std::memory_order_relaxed)) profile_.clear();
  const int64_t started_ns = now_ns();
  const std::optional<SchedulePlan> plan = schedule(clock_());
  if (!plan) return false;
  const Stopwatch watch;
  const Status st = execute(*plan);
  update(StepResult{*plan, watch.elapsed_s(), st, started_ns});
  return true;
}

std::optional<SchedulePlan> Engine::schedule(int64_t now) {
  std::optional<ScopedStepPart> part(std::in_place, &profile_, StepPart::kSchedule);
  intake();
  reap(now);
  start_step(now);
  if (waiting_.empty() && running_.empty()) return idle(now);
  part.reset();
  propose_drafts();
  part.emplace(&profile_, StepPart::kSchedule);
  SchedulerContext ctx{waiting_, running_, kv_, step_batching_, now, config_.kv.clusters()};
  SchedulePlan plan = scheduler_->schedule(ctx);
  admit(plan, now);
  const StepState state = step_state(now);
  for (auto& o : observers_) o->on_schedule(state, plan);
  if (plan.chunks.empty()) return idle(now);
  return plan;
}

std::nullopt_t Engine::idle(int64_t now) {
  runner_->heartbeat();  // a tensor-parallel group with a dead rank is noticed while idle too
  if (Status h = runner_->health(); !h.ok() && !admission_.state().draining) lose_model(h);
  publish(now, false);
  profile_.discard_step();
  return std::nullopt;
}

void Engine::update(const StepResult& r) {
  int64_t end = 0;
  {
    const ScopedStepPart part(&profile_, StepPart::kSchedule);
    status_.account_kv_slots(running_, kv_);
    if (!r.status.ok()) {
      log_error("engine step failed: {}", r.status.to_string());
      if (Status h = runner_->health(); !h.ok()) lose_model(h);
      for (const auto& c : r.plan.chunks) {
        if (sequences_.count(c.seq->id)) finish(*c.seq, FinishReason::kError, r.status.message());
      }
    }
    count_step(r.plan, r.step_s);
    end = clock_();
    publish(end, false);
  }
  const StepState state = step_state(end);
  for (auto& o : observers_) o->on_step_done(state, r);
}

// Sequences scheduled for the first time leave the admission queue.
void Engine::admit(const SchedulePlan& plan, int64_t now) {
  metrics_.preemptions.inc(static_cast<double>(plan.preempted.size()));
  for (const Admission& a : plan.admitted) {
    if (!a.first) continue;
    Sequence& s = *a.seq;
    admission_.release_waiting(s.prompt_len);
    metrics_.queue_time.observe(static_cast<double>(now - s.arrival_ns) * 1e-9);
    if (s.long_job) metrics_.long_job_queue_time.observe(static_cast<double>(now - s.arrival_ns) * 1e-9);
    metrics_.prefix_queries.inc(static_cast<double>(s.prompt_len));
    metrics_.prefix_hits.inc(static_cast<double>(s.cached_prompt_tokens));
    if (s.waited_for_prefix) metrics_.prefix_clustered.inc();
  }
}

void Engine::count_step(const SchedulePlan& plan, double step_s) {
  metrics_.steps.inc();
  metrics_.step_time.observe(step_s);
  metrics_.batch_size.observe(static_cast<double>(plan.chunks.size()));
  metrics_.batch_tokens.observe(static_cast<double>(plan.num_tokens));
  metrics_.batch_efficiency.observe(static_cast<double>(plan.num_tokens) / step_batching_.max_batch_tokens);
  metrics_.prefill_share.observe(static_cast<double>(plan.prefill_tokens) / static_cast<double>(plan.num_tokens));
  metrics_.prefill_tokens_computed.inc(static_cast<double>(plan.prefill_tokens));
}

Status Engine::execute(const SchedulePlan& plan) {
  chunks_.clear();
  for (const auto& c : plan.chunks) {
    Sequence& s = *c.seq;
    SequenceChunk ch;
    ch.tokens = std::span<const int32_t>(s.tokens).subspan(static_cast<size_t>(s.computed), static_cast<size_t>(c.n));
    ch.start_pos = s.computed;
    ch.block_table = s.blocks.table.blocks;
    ch.logits = s.computed + c.n == static_cast<int64_t>(s.tokens.size()) ? LogitsWanted::kLast : LogitsWanted::kNone;
    if (s.params.prompt_logprobs && s.computed < s.prompt_len) ch.logits = LogitsWanted::kAll;
    if (s.params.pooling != Pooling::kNone) {  // an embedding: hidden states, no logits
      ch.hidden = true;
      ch.logits = LogitsWanted::kNone;
    }
    if (s.early_exit) ch.early_exit_from = s.prompt_len;  // generated positions only
    ch.adapter = s.params.adapter.get();
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
    if (s.params.pooling != Pooling::kNone) {
      pool_hidden(s, i);  // and its blocks stay out of the prefix cache
    } else {
      const ScopedStepPart part(&profile_, StepPart::kSchedule);
      kv_.commit(s.blocks, s.committable());
    }
    if (s.params.prompt_logprobs && chunks_[i].logits == LogitsWanted::kAll) score_prompt(s, i);
    if (s.computed < static_cast<int64_t>(s.tokens.size())) continue;  // a prompt chunk before the last
    if (s.params.max_tokens == 0) {  // scoring only: the prompt is done
      finish(s, FinishReason::kLength);
      continue;
    }
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

void Engine::count_exit(size_t chunk) {
  if (fwd_.exit_layer.empty()) return;  // a pass without early exit: the runner ran full depth
  const int64_t row = fwd_.first_row[chunk] + (chunks_[chunk].logits == LogitsWanted::kAll
                                                   ? static_cast<int64_t>(chunks_[chunk].tokens.size()) - 1
                                                   : 0);
  const int32_t layer = fwd_.exit_layer[static_cast<size_t>(row)];
  const std::vector<int>& exits = config_.early_exit.layers;
  const bool exited = std::find(exits.begin(), exits.end(), layer) != exits.end();
  metrics_.early_exit_tokens.with({exited ? std::to_string(layer) : "full"}).inc();
}

void Engine::publish(int64_t now, bool force_rss) {
  size_t queued = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    queued = inbox_.size();
  }
  const int running = static_cast<int>(running_.size());
  const int waiting = static_cast<int>(waiting_.size() + queued);
  status_.publish(now, force_rss, kv_, running, waiting);
  status_.set_adapters(adapter_names(running_), adapter_names(waiting_));
  metrics_.long_jobs_waiting.set(
      static_cast<double>(std::count_if(waiting_.begin(), waiting_.end(), [](const Sequence* s) { return s->long_job; })));
  const bool idle = running == 0 && waiting == 0;
  // Pressure: the breaker is open, or an idle engine holds more than the low mark.
  const AdmissionState adm = admission_.state();
  const bool pressure = adm.overloaded || (idle && adm.rss_usage > config_.admission.rss_low);
  if (!relief_.due(now, pressure, idle)) return;
  relief_.release(kv_, *runner_, result_cache_);
  status_.publish(now, true, kv_, running, waiting);  // the breaker closes if use fell below the low mark
  if (idle && admission_.overloaded()) {
    // Refusing with nothing running frees nothing: what could be released was.
    const AdmissionState a = admission_.state();
    log_warn("memory breaker closed with nothing running although above the low mark ({}): the rest is weights, "
             "buffers and the KV pages in use; lower kv_cache_memory or raise memory_limit_bytes", a.reason);
    admission_.close_idle();
    status_.publish(now, false, kv_, running, waiting);
  }
}

EngineSnapshot Engine::snapshot() const {
  EngineSnapshot s = status_.snapshot();
  s.expert_load_imbalance = experts_->metrics().overall();
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
  SchedulerContext ctx{waiting_, running_, kv_, step_batching_, now, config_.kv.clusters()};
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
