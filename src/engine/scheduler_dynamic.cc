// Dynamic (request-level) batching, the classic server batcher: when the running batch
// is empty, wait until max_batch_size requests are queued or the oldest has waited
// max_delay_ms, take them as one batch, and run that batch to completion before the
// next. "none" is the same with batches of one and no waiting. The size and delay are
// read from the step's config each time, so the batch tuner (batch_tuner.h) can move
// them.
#include <algorithm>

#include "engine/schedule_steps.h"

namespace llms {

class DynamicScheduler : public Scheduler {
 public:
  explicit DynamicScheduler(bool fixed) : fixed_(fixed) {}

  SchedulePlan schedule(SchedulerContext& ctx) override {
    SchedulePlan plan;
    const int batch_size = fixed_ ? 1 : std::min(ctx.config.max_batch_size, ctx.config.max_running);
    int64_t budget = ctx.config.max_batch_tokens;
    int64_t long_budget = budget;  // one batch at a time: no lane sharing
    if (ctx.running.empty() && !ctx.waiting.empty()) {
      if (!batch_ready(ctx, batch_size)) return plan;
      order_waiting(ctx.waiting, ctx.config, ctx.now_ns);
      const std::vector<Sequence*> batch(ctx.waiting.begin(),
                                         ctx.waiting.begin() + std::min<size_t>(batch_size, ctx.waiting.size()));
      for (Sequence* s : batch) {
        if (!start_sequence(s, ctx, plan, budget)) break;
        if (!plan.chunks.empty() && plan.chunks.back().seq == s) budget -= plan.chunks.back().n;
      }
      return plan;
    }
    schedule_running(ctx, plan, budget, long_budget);
    return plan;
  }

  int64_t next_wake_ns(const SchedulerContext& ctx) const override {
    if (!ctx.running.empty() || ctx.waiting.empty() || fixed_) return 0;
    return oldest_arrival(ctx) + delay_ns(ctx);
  }

 private:
  static int64_t oldest_arrival(const SchedulerContext& ctx) {
    int64_t oldest = ctx.waiting.front()->arrival_ns;
    for (const Sequence* s : ctx.waiting) oldest = std::min(oldest, s->arrival_ns);
    return oldest;
  }

  bool batch_ready(const SchedulerContext& ctx, int batch_size) const {
    if (fixed_ || static_cast<int>(ctx.waiting.size()) >= batch_size) return true;
    return ctx.now_ns - oldest_arrival(ctx) >= delay_ns(ctx);
  }

  static int64_t delay_ns(const SchedulerContext& ctx) { return static_cast<int64_t>(ctx.config.max_delay_ms * 1e6); }

  bool fixed_;
};

std::unique_ptr<Scheduler> make_continuous_scheduler();

std::unique_ptr<Scheduler> make_scheduler(BatchingPolicy policy) {
  switch (policy) {
    case BatchingPolicy::kContinuous: return make_continuous_scheduler();
    case BatchingPolicy::kDynamic:
      return std::make_unique<DynamicScheduler>(false);
    case BatchingPolicy::kNone: return std::make_unique<DynamicScheduler>(true);
  }
  return nullptr;
}

}  // namespace llms
