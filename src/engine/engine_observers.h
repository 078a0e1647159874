// The engine's own step observers (step_observer.h), each made from the engine's
// config when its feature is on:
//   AutoTuning      continuous batching with autotune: fits step times, moves the
//                   step's max_batch_tokens and max_running (autotune.h)
//   BatchTuning     dynamic batching with autotune: measures batches and arrivals,
//                   moves max_batch_size and max_delay_ms (batch_tuner.h)
//   SloShedding     slo_shed: refuses the waiting requests whose TTFT target is
//                   forecast to be missed (slo_shedding.h)
//   StatsRecorder   always: the dashboard's window of steps and requests (stats_window.h)
//   ExpertLoadRecorder  always: a mixture of experts' routing (expert_metrics.h)
//   StepProfileReport   profile: closes each step's profile and publishes its parts
// The engine registers them in that order but the profile's report, which goes last:
// the shedder refuses before the batch tuner counts the queue, the auto-tuner decides
// before the stats window records the step's budget, the profile closes the step.
//
// Thread-safety: engine thread only, as every observer; the tuners write the step's
// limits (`limits`, the engine's) that the next step's scheduler reads on that thread.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "base/step_profile.h"
#include "engine/autotune.h"
#include "engine/batch_tuner.h"
#include "engine/engine_metrics.h"
#include "engine/expert_metrics.h"
#include "engine/slo_shedding.h"
#include "engine/stats_window.h"
#include "engine/step_observer.h"

namespace llms {

class AutoTuning : public StepObserver {
 public:
  // Applies the tuner's starting values to `limits` at once (autotune = on).
  AutoTuning(const EngineConfig& config, BatchingConfig* limits, EngineMetrics& metrics);
  void on_step_done(const StepState& state, const StepResult& result) override;

 private:
  void apply();

  AutotuneMode mode_;
  AutoTuner tuner_;
  BatchingConfig* limits_;
  EngineMetrics& metrics_;
};

class BatchTuning : public StepObserver {
 public:
  BatchTuning(const EngineConfig& config, BatchingConfig* limits, EngineMetrics& metrics);
  void on_intake(const Sequence& s) override { tuner_.arrival(s.arrival_ns); }
  void on_step_start(const StepState& state, std::vector<Refusal>&) override { track(state, nullptr); }
  void on_schedule(const StepState& state, const SchedulePlan& plan) override { track(state, &plan); }
  void on_step_done(const StepState& state, const StepResult&) override { track(state, nullptr); }

 private:
  // The dynamic batch in progress: ended when the running set is empty, started when
  // `plan` (if any) admits into an empty one.
  void track(const StepState& state, const SchedulePlan* plan);

  AutotuneMode mode_;
  DynamicBatchTuner tuner_;
  BatchingConfig* limits_;
  EngineMetrics& metrics_;
  int batch_size_ = 0;  // requests of the batch in progress; 0: none
  int64_t batch_start_ns_ = 0;
};

class SloShedding : public StepObserver {
 public:
  // `cluster`: the scheduler orders by cached prefix (prefix caching and clustering).
  SloShedding(bool cluster, EngineMetrics& metrics) : cluster_(cluster), metrics_(metrics) {}
  void on_step_start(const StepState& state, std::vector<Refusal>& refuse) override;
  void on_schedule(const StepState& state, const SchedulePlan& plan) override;

 private:
  bool cluster_;
  EngineMetrics& metrics_;
  SloShedder shedder_;
  std::vector<Sequence*> ordered_;  // the waiting queue in the scheduler's order, reused
};

class StatsRecorder : public StepObserver {
 public:
  // `rss`: the gauge of process memory the engine publishes.
  StatsRecorder(int capacity, const Gauge& rss) : window_(capacity), rss_(rss) {}
  void on_step_done(const StepState& state, const StepResult& result) override;
  void on_finish(const Sequence& s, const FinishEvent& fe) override;
  // Any thread.
  const StatsWindow& window() const { return window_; }

 private:
  StatsWindow window_;
  const Gauge& rss_;
};

class ExpertLoadRecorder : public StepObserver {
 public:
  explicit ExpertLoadRecorder(Registry& registry) : metrics_(registry) {}
  void on_step_done(const StepState& state, const StepResult&) override {
    if (state.runner.expert_count() > 0) metrics_.observe(state.runner.expert_load(), state.runner.expert_count());
  }
  // overall() from any thread.
  const ExpertLoadMetrics& metrics() const { return metrics_; }

 private:
  ExpertLoadMetrics metrics_;
};

class StepProfileReport : public StepObserver {
 public:
  StepProfileReport(StepProfile& profile, EngineMetrics& metrics) : profile_(profile), metrics_(metrics) {}
  void on_step_done(const StepState& state, const StepResult& result) override;

 private:
  StepProfile& profile_;
  EngineMetrics& metrics_;
};

}  // namespace llms
