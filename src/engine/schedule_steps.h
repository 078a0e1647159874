// The pieces every scheduling policy is built from, each small enough to test alone.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/scheduler.h"

namespace llms {

// Priority used to order waiting sequences: the request's priority, plus the
// interactive lane's boost, plus one for every aging_s seconds waited, plus one once
// half of its TTFT target has passed (slo.h).
double effective_priority(const Sequence& s, const BatchingConfig& config, int64_t now_ns);

// Sorts `waiting` best first: effective priority, then the earliest TTFT deadline
// (none last), then (given the KV manager) the longest prefix in the prefix cache,
// then arrival. The cache only reorders requests
// of equal effective priority, and waiting raises it by one every aging_s: a request
// passed over for ones with longer cached prefixes is first among them within
// aging_s of their arrival.
void order_waiting(std::vector<Sequence*>& waiting, const BatchingConfig& config, int64_t now_ns,
                   const KvBlockManager* kv = nullptr);

// The running sequence to preempt for `needy`: lowest priority, then most recently
// started, among `candidates` (which excludes sequences already in the plan).
// nullptr when there is none.
Sequence* choose_victim(const std::vector<Sequence*>& candidates, const Sequence* needy);

// Frees the sequence's blocks and puts it back in `waiting` to be recomputed.
void preempt(Sequence* s, SchedulerContext& ctx, SchedulePlan& plan);

// Gives every running sequence its next chunk (decodes first, then prefill
// continuations, each by priority) within `budget`, preempting on "no room".
// Long-job prefill chunks together take at most `long_budget` tokens.
void schedule_running(SchedulerContext& ctx, SchedulePlan& plan, int64_t& budget, int64_t& long_budget);

// Moves `s` from waiting to running: looks up its prefix in the cache (once) and
// reserves blocks for its first chunk of at most `budget` tokens (budget 0: it joins
// without a chunk this step). False, with the sequence left waiting and holding no
// blocks, when the KV cache has no room.
bool start_sequence(Sequence* s, SchedulerContext& ctx, SchedulePlan& plan, int64_t budget);

// True when `s` (waiting, holding no blocks) shares at least one whole KV block of its
// prompt with the prompt of a running sequence that has not computed that shared part
// yet: admitted now, it would compute the same blocks beside it; a step or a few later,
// it finds them in the prefix cache.
bool waits_for_shared_prefix(const Sequence& s, const std::vector<Sequence*>& running, int block_size);

// Adds a chunk of n tokens of s, and n_draft of its proposed tokens after them, to the
// plan (blocks already reserved).
void add_chunk(Sequence* s, int64_t n, SchedulePlan& plan, int64_t n_draft = 0);

}  // namespace llms
