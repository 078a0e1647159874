#include "engine/engine_observers.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/clock.h"
#include "base/log.h"
#include "engine/schedule_steps.h"

namespace llms {

AutoTuning::AutoTuning(const EngineConfig& config, BatchingConfig* limits, EngineMetrics& metrics)
    : mode_(config.slo.autotune),
      tuner_(AutotuneBounds{std::min(config.slo.autotune_min_batch_tokens, config.batching.max_batch_tokens),
                            config.batching.max_batch_tokens, config.batching.max_running},
             config.slo.interactive.itl_ms * 1e-3, config.slo.percentile),
      limits_(limits),
      metrics_(metrics) {
  apply();  // the tuner's starting values
}

// The auto-tuner's decision, reported (gauges, a log line when it changes) and, with
// autotune = on, applied to the next steps' budget and cap.
void AutoTuning::on_step_done(const StepState&, const StepResult& r) {
  if (!tuner_.observe(r.plan.num_tokens, static_cast<int64_t>(r.plan.chunks.size()), r.step_s)) return;
  const AutotuneDecision& d = tuner_.decision();
  const bool applied = mode_ == AutotuneMode::kOn;
  metrics_.autotune_batch_tokens.set(d.batch_tokens);
  metrics_.autotune_max_running.set(d.max_running);
  metrics_.autotune_predicted_step.set(d.predicted_step_s);
  if (d.changed) {
    metrics_.autotune_decisions.with({applied ? "applied" : "observed"}).inc();
    log_info("autotune ({}): max_batch_tokens {}, max_running {}, predicted step {:.2f} ms (fit: {:.2f} ms + {:.2f} "
             "us/token + {:.2f} us/sequence; p{:g} of measured / predicted {:.2f})",
             autotune_mode_name(mode_), d.batch_tokens, d.max_running, d.predicted_step_s * 1e3,
             tuner_.fixed_s() * 1e3, tuner_.per_token_s() * 1e6, tuner_.per_sequence_s() * 1e6,
             100 * tuner_.percentile(), tuner_.tail_factor());
  }
  apply();
}

// With autotune = on, the tuner's current budget and cap bind the next steps.
void AutoTuning::apply() {
  if (mode_ != AutotuneMode::kOn) return;
  limits_->max_batch_tokens = tuner_.decision().batch_tokens;
  limits_->max_running = tuner_.decision().max_running;
}

BatchTuning::BatchTuning(const EngineConfig& config, BatchingConfig* limits, EngineMetrics& metrics)
    : mode_(config.slo.autotune),
      tuner_(BatchTunerBounds{config.batching.max_batch_size, config.batching.max_delay_ms,
                              config.slo.interactive.ttft_ms * 1e-3}),
      limits_(limits),
      metrics_(metrics) {}

void BatchTuning::track(const StepState& state, const SchedulePlan* plan) {
  if (batch_size_ > 0 && state.running.empty()) {
    const int size = batch_size_;
    batch_size_ = 0;
    if (tuner_.batch_done(size, static_cast<double>(state.now_ns - batch_start_ns_) * 1e-9, state.now_ns,
                          static_cast<int>(state.waiting.size()))) {
      const BatchTunerDecision& d = tuner_.decision();
      const bool applied = mode_ == AutotuneMode::kOn;
      metrics_.autotune_max_batch_size.set(d.max_batch_size);
      metrics_.autotune_max_delay.set(d.max_delay_ms * 1e-3);
      metrics_.autotune_arrival_rate.set(d.arrival_rate);
      if (d.changed) {
        metrics_.autotune_decisions.with({applied ? "applied" : "observed"}).inc();
        log_info("autotune ({}): max_batch_size {}, max_delay_ms {:.1f}, arrivals {:.2f}/s, predicted batch {:.1f} ms "
                 "(fit: {:.1f} ms + {:.1f} ms/request)",
                 autotune_mode_name(mode_), d.max_batch_size, d.max_delay_ms, d.arrival_rate,
                 d.predicted_batch_s * 1e3, tuner_.fixed_s() * 1e3, tuner_.per_request_s() * 1e3);
      }
      if (applied) {
        limits_->max_batch_size = d.max_batch_size;
        limits_->max_delay_ms = d.max_delay_ms;
      }
    }
  }
  if (plan && batch_size_ == 0 && !plan->admitted.empty()) {
    batch_size_ = static_cast<int>(plan->admitted.size());
    batch_start_ns_ = state.now_ns;
  }
}

void SloShedding::on_step_start(const StepState& state, std::vector<Refusal>& refuse) {
  // Until the queue's rate is known nothing is shed: no need to order the queue for it.
  if (state.waiting.empty() || shedder_.service_rate() <= 0) return;
  // The scheduler's order (it sorts the queue itself, totally, before it admits).
  ordered_ = state.waiting;
  order_waiting(ordered_, state.batching, state.now_ns, cluster_ ? &state.kv : nullptr);
  const double retry = shedder_.retry_after_s(ordered_.size());
  for (const ShedDecision& d : shedder_.unattainable(ordered_, state.now_ns, state.batching.max_batch_tokens,
                                                     static_cast<int64_t>(state.running.size()))) {
    metrics_.rejected.with({"slo"}).inc();
    refuse.push_back({d.seq,
                      fmt::format("the server is past its capacity: this request's first token is forecast {:.0f} ms "
                                  "after arrival, past its {:.0f} ms TTFT target; try again later",
                                  d.forecast_ttft_s * 1e3, d.seq->slo.ttft_ms),
                      retry});
  }
}

void SloShedding::on_schedule(const StepState& state, const SchedulePlan& plan) {
  const auto first =
      std::count_if(plan.admitted.begin(), plan.admitted.end(), [](const Admission& a) { return a.first; });
  shedder_.on_schedule(state.now_ns, first, !plan.chunks.empty() && !state.waiting.empty());
}

void StatsRecorder::on_step_done(const StepState& state, const StepResult& r) {
  StepSample sample;
  sample.unix_ms = unix_ms();
  sample.duration_s = r.step_s;
  sample.batch_tokens = static_cast<int32_t>(r.plan.num_tokens);
  sample.prefill_tokens = static_cast<int32_t>(r.plan.prefill_tokens);
  sample.token_budget = state.batching.max_batch_tokens;
  sample.batch_size = static_cast<int32_t>(r.plan.chunks.size());
  sample.running = static_cast<int32_t>(state.running.size());
  sample.waiting = static_cast<int32_t>(state.waiting.size());
  sample.kv_blocks_used = state.kv.num_used();
  sample.kv_blocks_total = state.kv.num_blocks();
  sample.rss_bytes = static_cast<int64_t>(rss_.value());
  window_.record_step(sample);
}

void StatsRecorder::on_finish(const Sequence& s, const FinishEvent& fe) {
  RequestSample r;
  r.unix_ms = unix_ms();
  r.queue_s = fe.timings.queue_s;
  r.ttft_s = fe.timings.ttft_s;
  const int64_t gaps = s.generated() - 1;
  if (gaps > 0 && s.first_token_ns > 0) {
    r.itl_s = static_cast<double>(s.last_token_ns - s.first_token_ns) * 1e-9 / static_cast<double>(gaps);
  }
  r.e2e_s = fe.timings.e2e_s;
  r.compute_s = fe.timings.compute_s;
  r.prompt_tokens = static_cast<int32_t>(fe.prompt_tokens);
  r.cached_prompt_tokens = static_cast<int32_t>(fe.cached_prompt_tokens);
  r.completion_tokens = static_cast<int32_t>(fe.completion_tokens);
  r.priority = s.params.priority;
  r.reason = fe.reason;
  window_.record_request(r);
}

void StepProfileReport::on_step_done(const StepState&, const StepResult& r) {
  for (int i = 0; i < kNumStepParts; ++i) {
    const auto part_ns = profile_.current()[static_cast<size_t>(i)];
    metrics_.step_part_time.with({step_part_name(static_cast<StepPart>(i))}).inc(static_cast<double>(part_ns) * 1e-9);
  }
  metrics_.step_part_time.with({"pool_wait"}).inc(static_cast<double>(profile_.current_wait()) * 1e-9);
  profile_.end_step(r.plan.num_tokens, now_ns() - r.started_wall_ns);
}

}  // namespace llms
