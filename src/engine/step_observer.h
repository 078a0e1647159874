// StepObserver: a feature that watches the engine's steps instead of being wired into
// them. The engine's own (the auto-tuners, SLO shedding, the stats window, the expert
// load metrics, the step profile's report) are made from its config
// (engine_observers.h); a feature outside the engine (a quality monitor, say) plugs in
// with Engine::add_observer() before start().
//
// A step is schedule → execute → update (engine.h). Observers see it at these points,
// each called on every observer in registration order:
//   on_intake      a request joined the waiting set
//   on_step_start  cancelled and timed-out requests have ended; nothing is scheduled
//                  yet. The one hook that acts: it may refuse waiting requests, which
//                  end "rejected" before the next observer is called
//   on_schedule    the scheduler's plan (it may have no chunks: nothing could run)
//   on_step_done   the plan ran: tokens were handed out, the engine's status published
//   on_finish      a request ended (each exactly once, whatever the reason), before its
//                  client gets the finish event; the sequence still holds its tokens
//
// Thread-safety: every hook runs on the engine thread, inside the step; an observer
// that others read from other threads guards that state itself. Hooks must not block:
// their time is the step's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "engine/model_runner.h"
#include "engine/request.h"
#include "engine/scheduler.h"
#include "engine/sequence.h"
#include "kv/kv_block_manager.h"

namespace llms {

// The engine's state as an observer sees it: read-only, valid during the hook only.
struct StepState {
  int64_t now_ns = 0;  // the engine's clock at this point of the step
  const std::vector<Sequence*>& waiting;
  const std::vector<Sequence*>& running;
  const KvBlockManager& kv;
  const BatchingConfig& batching;  // this step's limits (the auto-tuners move them)
  const ModelRunner& runner;
};

// What one step did.
struct StepResult {
  const SchedulePlan& plan;
  double step_s = 0;           // the forward pass and handing out its tokens
  Status status;               // the forward pass's; not ok: the plan's requests ended "error"
  int64_t started_wall_ns = 0;  // now_ns() when the step began (the whole step's time)
};

// A waiting request an observer refuses at on_step_start (it ends "rejected").
struct Refusal {
  Sequence* seq = nullptr;
  std::string message;  // what the client is told
  double retry_after_s = 0;
};

class StepObserver {
 public:
  virtual ~StepObserver() = default;
  virtual void on_intake(const Sequence& /*s*/) {}
  virtual void on_step_start(const StepState& /*state*/, std::vector<Refusal>& /*refuse*/) {}
  virtual void on_schedule(const StepState& /*state*/, const SchedulePlan& /*plan*/) {}
  virtual void on_step_done(const StepState& /*state*/, const StepResult& /*result*/) {}
  virtual void on_finish(const Sequence& /*s*/, const FinishEvent& /*fe*/) {}
};

}  // namespace llms
