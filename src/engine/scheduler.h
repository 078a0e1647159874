// Scheduling policies: each step, which sequences run and how many of their tokens.
//
// The rule (after vLLM): there is no prefill phase and no decode phase. Each
// sequence's computed-token count catches up with its token count within a per-step
// token budget; running decodes go first, then prefill chunks. KV blocks are reserved
// here, for every chunk of the plan; when a running sequence needs a block and none
// is free, the lowest-priority, most recently started sequence is preempted (its
// blocks freed, requeued to be recomputed).
//
// Policies: continuous (requests join and leave every step), dynamic (the classic
// request-level batcher), none (one at a time). One file per policy; the shared
// pieces (waiting order, preemption, running pass) are in schedule_steps.h.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/engine_config.h"
#include "engine/sequence.h"
#include "kv/kv_block_manager.h"

namespace llms {

struct ScheduledChunk {
  Sequence* seq = nullptr;
  int64_t n = 0;        // tokens of seq->tokens from seq->computed
  int64_t n_draft = 0;  // proposed tokens verified after them (a decode's seq->draft prefix)
};

// A sequence moved from waiting to running. `first`: it was never scheduled before,
// so it leaves the admission queue now (a preempted sequence returning is not first).
struct Admission {
  Sequence* seq = nullptr;
  bool first = false;
};

struct SchedulePlan {
  std::vector<ScheduledChunk> chunks;
  std::vector<Sequence*> preempted;  // moved back to waiting this step
  std::vector<Admission> admitted;   // moved from waiting to running this step
  int64_t num_tokens = 0;
  int64_t prefill_tokens = 0;
  int64_t decode_tokens = 0;
};

// The engine's state as a scheduler sees it. The scheduler moves sequences between
// `waiting` and `running` and changes their KV reservations; nothing else.
struct SchedulerContext {
  std::vector<Sequence*>& waiting;
  std::vector<Sequence*>& running;
  KvBlockManager& kv;
  const BatchingConfig& config;  // this step's (the auto-tuners move its limits)
  int64_t now_ns = 0;
  bool cluster_prefixes = false;  // prefix caching and clustering (KvConfig::clusters())
};

class Scheduler {
 public:
  virtual ~Scheduler() = default;
  virtual SchedulePlan schedule(SchedulerContext& ctx) = 0;
  // When work waits but nothing may run yet (a dynamic batch filling up): the time at
  // which to call schedule() again. 0 when there is no such time.
  virtual int64_t next_wake_ns(const SchedulerContext& ctx) const { return 0; }
};

std::unique_ptr<Scheduler> make_scheduler(BatchingPolicy policy);

}  // namespace llms
