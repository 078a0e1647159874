#include "engine/schedule_steps.h"

#include <algorithm>
#include <cmath>

#include "base/check.h"
#include "engine/slo.h"

namespace llms {

double effective_priority(const Sequence& s, const BatchingConfig& config, int64_t now_ns) {
  const double waited_s = static_cast<double>(std::max<int64_t>(0, now_ns - s.arrival_ns)) * 1e-9;
  const double lane = s.params.lane == Lane::kInteractive ? config.interactive_boost : 0;
  return s.params.priority + lane + std::floor(waited_s / config.aging_s) + slo_urgency(s, now_ns);
}

void order_waiting(std::vector<Sequence*>& waiting, const BatchingConfig& config, int64_t now_ns,
                   const KvBlockManager* kv) {
  for (Sequence* s : waiting) {
    s->cached_hint = kv != nullptr && waiting.size() > 1 && s->blocks.table.blocks.empty()
                         ? kv->cached_prefix_tokens(std::span<const int32_t>(s->tokens).first(static_cast<size_t>(s->prompt_len)),
                                                  s->blocks.salt)
                         : 0;
  }
  std::stable_sort(waiting.begin(), waiting.end(), [&](const Sequence* a, const Sequence* b) {
    const double pa = effective_priority(*a, config, now_ns), pb = effective_priority(*b, config, now_ns);
    if (pa != pb) return pa > pb;
    const int64_t da = ttft_deadline_ns(*a), db = ttft_deadline_ns(*b);
    if (da != db) return da != 0 && (db == 0 || da < db);  // earliest deadline first; none last
    if (a->cached_hint != b->cached_hint) return a->cached_hint > b->cached_hint;
    if (a->arrival_ns != b->arrival_ns) return a->arrival_ns < b->arrival_ns;
    return a->id < b->id;
  });
}

Sequence* choose_victim(const std::vector<Sequence*>& candidates, const Sequence* needy) {
  Sequence* victim = nullptr;
  for (Sequence* s : candidates) {
    if (s == needy) continue;
    if (victim == nullptr || s->params.priority < victim->params.priority ||
        (s->params.priority == victim->params.priority && s->started_ns > victim->started_ns) ||
        (s->params.priority == victim->params.priority && s->started_ns == victim->started_ns && s->id > victim->id)) {
      victim = s;
    }
  }
  return victim;
}

void preempt(Sequence* s, SchedulerContext& ctx, SchedulePlan& plan) {
  ctx.kv.release(s->blocks);
  s->draft.clear();
  s->computed = 0;
  s->running = false;
  ++s->preemptions;
  std::erase(ctx.running, s);
  ctx.waiting.push_back(s);
  plan.preempted.push_back(s);
}

void add_chunk(Sequence* s, int64_t n, SchedulePlan& plan, int64_t n_draft) {
  LLMS_DCHECK(n > 0 && n <= s->pending(), "chunk size out of range");
  LLMS_DCHECK(n_draft == 0 || (n == 1 && n_draft <= static_cast<int64_t>(s->draft.size())), "draft out of range");
  plan.chunks.push_back({s, n, n_draft});
  plan.num_tokens += n + n_draft;
  if (s->computed + n <= s->prompt_len || n > 1) {
    plan.prefill_tokens += n;
  } else {
    plan.decode_tokens += n + n_draft;
  }
}

void schedule_running(SchedulerContext& ctx, SchedulePlan& plan, int64_t& budget, int64_t& long_budget) {
  // Decodes first, then prefill continuations; within each, higher priority and
  // earlier start first (so preemption victims come from the tail, not yet planned).
  std::vector<Sequence*> order = ctx.running;
  std::stable_sort(order.begin(), order.end(), [](const Sequence* a, const Sequence* b) {
    const bool da = a->pending() == 1, db = b->pending() == 1;
    if (da != db) return da;
    if (a->params.priority != b->params.priority) return a->params.priority > b->params.priority;
    return a->started_ns < b->started_ns;
  });
  std::vector<Sequence*> unplanned = order;
  for (Sequence* s : order) {
    if (!s->running) continue;  // preempted as a victim earlier in this pass
    std::erase(unplanned, s);
    if (budget <= 0) continue;
    int64_t n = std::min(s->pending(), budget);
    if (s->long_job && s->pending() > 1) n = std::min(n, long_budget);
    if (n <= 0) continue;
    // A decode verifies the proposed tokens in the same pass, as far as the budget goes.
    const int64_t n_draft = s->pending() == 1 ? std::min<int64_t>(static_cast<int64_t>(s->draft.size()), budget - 1) : 0;
    bool placed = false;
    while (!(placed = ctx.kv.reserve(s->blocks, n + n_draft))) {
      Sequence* victim = choose_victim(unplanned, s);
      if (victim == nullptr || victim->params.priority > s->params.priority) break;
      std::erase(unplanned, victim);
      preempt(victim, ctx, plan);
    }
    if (!placed) {
      preempt(s, ctx, plan);
      continue;
    }
    budget -= n + n_draft;
    if (s->long_job && s->pending() > 1) long_budget -= n;
    add_chunk(s, n, plan, n_draft);
  }
}

bool waits_for_shared_prefix(const Sequence& s, const std::vector<Sequence*>& running, int block_size) {
  if (s.computed > 0 || !s.blocks.table.blocks.empty() || s.prompt_len < block_size ||
      s.params.computes_whole_prompt()) {
    return false;  // (a sequence that scores its prompt shares nothing)
  }
  for (const Sequence* r : running) {
    if (r == &s || r->computed >= r->prompt_len) continue;  // only prompts still being computed
    const int64_t limit = std::min(s.prompt_len, r->prompt_len);
    int64_t shared = 0;
    while (shared < limit && s.tokens[static_cast<size_t>(shared)] == r->tokens[static_cast<size_t>(shared)]) ++shared;
    const int64_t shared_blocks = shared / block_size * block_size;
    // The last prompt token is always computed, never shared (KvBlockManager::begin_sequence).
    const int64_t sharable = std::min(shared_blocks, (s.prompt_len - 1) / block_size * block_size);
    if (sharable > 0 && r->computed < sharable) return true;
  }
  return false;
}

bool start_sequence(Sequence* s, SchedulerContext& ctx, SchedulePlan& plan, int64_t budget) {
  if (s->blocks.table.blocks.empty() && s->computed == 0) {
    s->computed = ctx.kv.begin_sequence(s->blocks, s->prefix_key());
    if (s->preemptions == 0) s->cached_prompt_tokens = s->computed;
  }
  const int64_t n = std::min(s->pending(), std::max<int64_t>(0, budget));
  if (n > 0 && !ctx.kv.reserve(s->blocks, n)) {
    ctx.kv.release(s->blocks);
    s->computed = 0;
    return false;
  }
  s->running = true;
  s->started_ns = ctx.now_ns;
  const bool first = s->first_scheduled_ns == 0;
  if (first) s->first_scheduled_ns = ctx.now_ns;
  std::erase(ctx.waiting, s);
  ctx.running.push_back(s);
  plan.admitted.push_back({s, first});
  if (n > 0) add_chunk(s, n, plan);
  return true;
}

}  // namespace llms
