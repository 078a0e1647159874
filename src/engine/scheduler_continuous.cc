// Continuous (iteration-level) batching: every step, running sequences take their
// decode token or next prefill chunk, then waiting sequences join in priority order
// while the token budget, the running cap and the KV cache allow.
#include "engine/schedule_steps.h"

namespace llms {

class ContinuousScheduler : public Scheduler {
 public:
  SchedulePlan schedule(SchedulerContext& ctx) override {
    SchedulePlan plan;
    int64_t budget = ctx.config.max_batch_tokens;
    int64_t long_budget = std::max<int64_t>(1, static_cast<int64_t>(ctx.config.long_job_share * budget));
    schedule_running(ctx, plan, budget, long_budget);
    // Longest cached prefix first among equals: part of prefix clustering (without it,
    // first come first served).
    const bool clustering = ctx.cluster_prefixes;
    order_waiting(ctx.waiting, ctx.config, ctx.now_ns, clustering ? &ctx.kv : nullptr);
    // Sequences preempted this step wait for the next one: they just lost their room.
    const std::vector<Sequence*> candidates = ctx.waiting;
    for (Sequence* s : candidates) {
      if (budget <= 0 || static_cast<int>(ctx.running.size()) >= ctx.config.max_running) break;
      if (std::find(plan.preempted.begin(), plan.preempted.end(), s) != plan.preempted.end()) continue;
      if (clustering && waits_for_shared_prefix(*s, ctx.running, ctx.kv.block_size())) {
        s->waited_for_prefix = true;
        continue;  // admitted once the running one has computed (and cached) the shared blocks
      }
      int64_t allowance = budget;
      if (s->long_job) {
        if (long_budget <= 0) continue;  // the long-job lane's share is spent; short jobs may still join
        allowance = std::min(allowance, long_budget);
      }
      if (!start_sequence(s, ctx, plan, allowance)) break;  // no KV room: keep the order, try next step
      const int64_t n = plan.chunks.back().n;
      budget -= n;
      if (s->long_job) long_budget -= n;
    }
    return plan;
  }
};

std::unique_ptr<Scheduler> make_continuous_scheduler() { return std::make_unique<ContinuousScheduler>(); }

}  // namespace llms
