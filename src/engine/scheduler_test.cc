// Scheduling units through the engine with a fake model runner: budget, decode-first,
// chunked prefill, lanes and aging, preemption, deadlines, cancellation, admission.
#include <gtest/gtest.h>

#include "engine/engine.h"
#include "engine/testing/engine_test_util.h"
#include "engine/schedule_steps.h"

namespace llms {
namespace {

using testing::collect;
using testing::FakeRunner;
using testing::greedy_request;
using testing::ManualClock;

struct Harness {
  explicit Harness(EngineConfig config, int32_t blocks = 64, int ctx = 512) {
    auto r = std::make_unique<FakeRunner>();
    runner = r.get();
    engine = std::make_unique<Engine>(std::move(r), testing::synthetic_tokenizer(), config, Hash128{1, 1}, blocks, ctx);
    engine->set_clock(clock.fn());
  }
  std::shared_ptr<RequestHandle> submit(RequestParams p) {
    auto h = engine->submit(std::move(p));
    EXPECT_TRUE(h.ok()) << h.status().to_string();
    return h.ok() ? *h : nullptr;
  }
  FakeRunner* runner;
  ManualClock clock;
  std::unique_ptr<Engine> engine;
};

std::vector<int32_t> prompt_of(int n, int32_t start = 10) {
  std::vector<int32_t> p;
  for (int i = 0; i < n; ++i) p.push_back(start + i % 200);
  return p;
}

// The output a request must have: the fake model's chain from the prompt.
std::vector<int32_t> expected_tokens(const std::vector<int32_t>& prompt, int n) {
  std::vector<int32_t> out;
  int32_t last = prompt.back();
  for (int i = 0; i < n; ++i) {
    last = FakeRunner::next(last, static_cast<int64_t>(prompt.size()) + i - 1);
    out.push_back(last);
  }
  return out;
}

TEST(SchedulerTest, BudgetRespectedAndPrefillChunked) {
  EngineConfig c;
  c.batching.max_batch_tokens = 64;
  Harness h(c);
  auto r = h.submit(greedy_request(prompt_of(200), 3));
  h.engine->run_until_idle();
  // 200 prompt tokens in chunks of 64, 64, 64, 8 (logits only at the end), then 2 decodes.
  ASSERT_EQ(h.runner->calls.size(), 6u);
  const int64_t sizes[] = {64, 64, 64, 8, 1, 1};
  for (size_t i = 0; i < 6; ++i) {
    ASSERT_EQ(h.runner->calls[i].size(), 1u);
    EXPECT_EQ(h.runner->calls[i][0].n, sizes[i]);
    EXPECT_EQ(h.runner->calls[i][0].logits, i >= 3);
  }
  const auto got = collect(*r);
  EXPECT_EQ(got.tokens, expected_tokens(prompt_of(200), 3));
  EXPECT_EQ(got.finish.reason, FinishReason::kLength);
}

TEST(SchedulerTest, DecodesGoFirstThenPrefillTakesTheRest) {
  EngineConfig c;
  c.batching.max_batch_tokens = 16;
  Harness h(c);
  auto a = h.submit(greedy_request(prompt_of(4), 10));
  auto b = h.submit(greedy_request(prompt_of(4, 50), 10));
  h.engine->step();  // both prefill (8 tokens)
  auto big = h.submit(greedy_request(prompt_of(40, 90), 2));
  h.engine->step();
  const auto& call = h.runner->calls.back();
  ASSERT_EQ(call.size(), 3u);
  EXPECT_EQ(call[0].n, 1);   // decode
  EXPECT_EQ(call[1].n, 1);   // decode
  EXPECT_EQ(call[2].n, 14);  // prefill chunk gets what is left of 16
  h.engine->run_until_idle();
  for (const auto& call_i : h.runner->calls) {
    int64_t sum = 0;
    for (const auto& ch : call_i) sum += ch.n;
    EXPECT_LE(sum, 16);
  }
  EXPECT_EQ(collect(*a).tokens, expected_tokens(prompt_of(4), 10));
  EXPECT_EQ(collect(*big).tokens, expected_tokens(prompt_of(40, 90), 2));
}

TEST(SchedulerTest, RunningCapLimitsTheBatch) {
  EngineConfig c;
  c.batching.max_running = 2;
  Harness h(c);
  std::vector<std::shared_ptr<RequestHandle>> hs;
  for (int i = 0; i < 5; ++i) hs.push_back(h.submit(greedy_request(prompt_of(3, 10 + i), 4)));
  h.engine->run_until_idle();
  for (const auto& call : h.runner->calls) EXPECT_LE(call.size(), 2u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(collect(*hs[i]).tokens, expected_tokens(prompt_of(3, 10 + i), 4));
}

TEST(SchedulerTest, InteractiveLaneFirstAndAgingPreventsStarvation) {
  EngineConfig c;
  c.batching.max_running = 1;
  c.batching.aging_s = 1.0;
  c.batching.interactive_boost = 10;
  // Ordering alone: a batch request that waited 11 s passes a fresh interactive one.
  Sequence batch, inter;
  batch.id = 1, inter.id = 2;
  batch.params.lane = Lane::kBatch;
  inter.params.lane = Lane::kInteractive;
  batch.arrival_ns = 0;
  inter.arrival_ns = 0;
  std::vector<Sequence*> w = {&batch, &inter};
  order_waiting(w, c.batching, 1'000'000'000);
  EXPECT_EQ(w[0], &inter);
  inter.arrival_ns = 11'000'000'000;
  order_waiting(w, c.batching, 11'000'000'000);
  EXPECT_EQ(w[0], &batch);

  // Through the engine: the interactive request queued after a batch one runs first.
  Harness h(c);
  auto first = h.submit(greedy_request(prompt_of(2), 3));  // occupies the single slot
  h.engine->step();
  RequestParams bp = greedy_request(prompt_of(2, 30), 1);
  bp.lane = Lane::kBatch;
  auto b = h.submit(bp);
  auto i = h.submit(greedy_request(prompt_of(2, 60), 1));
  h.engine->run_until_idle();
  ASSERT_EQ(h.runner->calls.size(), 5u);  // first: prefill + 2 decodes, then i, then b
  EXPECT_EQ(h.runner->calls[3][0].first_token, 60);
  EXPECT_EQ(h.runner->calls[4][0].first_token, 30);
  EXPECT_EQ(collect(*first).finish.reason, FinishReason::kLength);
  EXPECT_EQ(collect(*b).finish.reason, FinishReason::kLength);
  EXPECT_EQ(collect(*i).finish.reason, FinishReason::kLength);
}

// Among equal priorities the longest cached prefix goes first; aging bounds how long
// a request without one is passed over.
TEST(SchedulerTest, LongestCachedPrefixFirstWithinAnAgingStep) {
  EngineConfig c;
  c.batching.aging_s = 1.0;
  KvBlockManager kv(64, 16, Hash128{1, 2}, true);
  std::vector<int32_t> shared;
  for (int i = 0; i < 40; ++i) shared.push_back(3 + i);
  {  // A finished request leaves the first two blocks of `shared` cached.
    SequenceBlocks donor;
    kv.begin_sequence(donor, shared);
    ASSERT_TRUE(kv.reserve(donor, 40));
    kv.commit(donor, shared);
    kv.release(donor);
  }
  EXPECT_EQ(kv.cached_prefix_tokens(shared), 32);
  Sequence plain, sharing;
  plain.id = 1, sharing.id = 2;
  plain.tokens.assign(40, 7);
  sharing.tokens = shared;
  plain.prompt_len = sharing.prompt_len = 40;
  plain.arrival_ns = 0;                 // first to arrive
  sharing.arrival_ns = 500'000'000;     // half a second later
  std::vector<Sequence*> w = {&plain, &sharing};
  order_waiting(w, c.batching, 900'000'000, &kv);
  EXPECT_EQ(w[0], &sharing);  // same effective priority: its 32 cached tokens go first
  EXPECT_EQ(sharing.cached_hint, 32);
  order_waiting(w, c.batching, 900'000'000);  // without the cache: arrival order
  EXPECT_EQ(w[0], &plain);
  // One aging step after its arrival the first request outranks the later one.
  order_waiting(w, c.batching, 1'200'000'000, &kv);
  EXPECT_EQ(w[0], &plain);
  // Looking is not a query: the hit-rate counters count admissions only.
  EXPECT_EQ(kv.stats().queries, 1);  // the donor's begin_sequence
}

// The order by cached prefix is part of prefix clustering: with it off, waiting
// requests of equal priority go in arrival order even when a later one's prefix is
// cached (first come, first served).
TEST(SchedulerTest, CachedPrefixOrderOnlyWithPrefixClustering) {
  for (const bool clustering : {true, false}) {
    EngineConfig c;
    c.batching.max_running = 1;
    c.kv.prefix_clustering = clustering;
    Harness h(c);
    const std::vector<int32_t> shared = prompt_of(40, 100);  // 100..139
    h.submit(greedy_request(shared, 1));
    h.engine->run_until_idle();  // its two whole blocks stay cached
    auto blocker = h.submit(greedy_request(prompt_of(2), 2));
    h.engine->step();
    auto plain = h.submit(greedy_request(prompt_of(40, 50), 1));  // arrives first; starts at token 50
    h.clock.advance_ms(1);
    std::vector<int32_t> longer = shared;
    longer.insert(longer.end(), 8, 7);
    auto sharing = h.submit(greedy_request(longer, 1));  // 32 tokens cached: starts at token 132
    h.engine->run_until_idle();
    std::vector<int32_t> starts;
    for (const auto& call : h.runner->calls) {
      if (call[0].first_token == 50 || call[0].first_token == 132) starts.push_back(call[0].first_token);
    }
    const std::vector<int32_t> want = clustering ? std::vector<int32_t>{132, 50} : std::vector<int32_t>{50, 132};
    EXPECT_EQ(starts, want) << "prefix_clustering " << clustering;
    for (auto* r : {&blocker, &plain, &sharing}) EXPECT_EQ(collect(**r).finish.reason, FinishReason::kLength);
  }
}

TEST(SchedulerTest, HigherPriorityRunsFirst) {
  EngineConfig c;
  c.batching.max_running = 1;
  Harness h(c);
  auto blocker = h.submit(greedy_request(prompt_of(2), 2));
  h.engine->step();
  auto low = h.submit(greedy_request(prompt_of(3, 40), 1));
  RequestParams hp = greedy_request(prompt_of(5, 80), 1);
  hp.priority = 5;
  auto high = h.submit(hp);
  h.engine->run_until_idle();
  // blocker prefill, blocker decode, then the later but higher-priority request, then low.
  ASSERT_EQ(h.runner->calls.size(), 4u);
  EXPECT_EQ(h.runner->calls[2][0].first_token, 80);
  EXPECT_EQ(h.runner->calls[3][0].first_token, 40);
  for (auto* r : {&blocker, &low, &high}) EXPECT_EQ(collect(**r).finish.reason, FinishReason::kLength);
}

TEST(SchedulerTest, PreemptsLowestPriorityMostRecentAndRecomputes) {
  EngineConfig c;
  c.kv.block_size = 8;
  c.kv.prefix_cache = false;
  Harness h(c, /*blocks=*/4, /*ctx=*/32);
  RequestParams a = greedy_request(prompt_of(7), 20);
  a.priority = 1;
  auto ha = h.submit(a);
  h.engine->step();  // a holds 1 block
  auto hb = h.submit(greedy_request(prompt_of(7, 100), 20));
  h.engine->run_until_idle();
  const auto ga = collect(*ha), gb = collect(*hb);
  // Both need 27 positions = 4 blocks of 8 at the end; only 4 exist: b (lower priority,
  // started later) is preempted, recomputed, and still produces the right tokens.
  EXPECT_GE(h.engine->snapshot().preemptions, 1);
  EXPECT_EQ(ga.finish.preemptions, 0);
  EXPECT_GE(gb.finish.preemptions, 1);
  EXPECT_EQ(ga.tokens, expected_tokens(prompt_of(7), 20));
  EXPECT_EQ(gb.tokens, expected_tokens(prompt_of(7, 100), 20));
  EXPECT_EQ(h.engine->snapshot().kv_blocks_used, 0);
}

TEST(SchedulerTest, DeadlineEndsRequestWithTokensSoFar) {
  EngineConfig c;
  Harness h(c);
  RequestParams p = greedy_request(prompt_of(4), 100);
  p.timeout_s = 1.0;
  auto r = h.submit(p);
  for (int i = 0; i < 5; ++i) h.engine->step();  // prefill + 4 decodes: 5 tokens
  h.clock.advance_ms(1001);
  h.engine->step();
  const auto got = collect(*r);
  ASSERT_TRUE(got.finished);
  EXPECT_EQ(got.finish.reason, FinishReason::kTimeout);
  EXPECT_EQ(got.tokens, expected_tokens(prompt_of(4), 5));
  EXPECT_EQ(h.engine->snapshot().kv_blocks_used, 0);
  // Expiry while still queued.
  RequestParams q = greedy_request(prompt_of(4), 5);
  q.timeout_s = 0.5;
  auto queued = h.submit(q);
  h.clock.advance_ms(600);
  h.engine->step();
  EXPECT_EQ(collect(*queued).finish.reason, FinishReason::kTimeout);
}

TEST(SchedulerTest, CancellationInEveryStateFreesBlocksWithinOneStep) {
  EngineConfig c;
  c.batching.max_batch_tokens = 16;
  c.batching.max_running = 1;
  Harness h(c);
  auto running = h.submit(greedy_request(prompt_of(40), 50));
  auto queued = h.submit(greedy_request(prompt_of(4, 70), 5));
  h.engine->step();  // running: first prefill chunk of 16
  EXPECT_GT(h.engine->snapshot().kv_blocks_used, 0);
  queued->cancel();
  h.engine->step();
  EXPECT_EQ(collect(*queued).finish.reason, FinishReason::kCancelled);
  running->cancel();  // mid-prefill
  h.engine->step();
  EXPECT_EQ(collect(*running).finish.reason, FinishReason::kCancelled);
  EXPECT_EQ(h.engine->snapshot().kv_blocks_used, 0);
  auto decoding = h.submit(greedy_request(prompt_of(4), 50));
  for (int i = 0; i < 4; ++i) h.engine->step();
  decoding->cancel();
  h.engine->step();
  const auto got = collect(*decoding);
  EXPECT_EQ(got.finish.reason, FinishReason::kCancelled);
  EXPECT_EQ(got.finish_count, 1);
  EXPECT_EQ(h.engine->snapshot().kv_blocks_used, 0);
  EXPECT_EQ(h.engine->snapshot().running, 0);
}

TEST(SchedulerTest, AdmissionBoundsRejectWithRetryHint) {
  EngineConfig c;
  c.admission.max_waiting_requests = 2;
  c.admission.max_waiting_tokens = 100;
  Harness h(c);
  h.submit(greedy_request(prompt_of(10), 1));
  h.submit(greedy_request(prompt_of(10), 1));
  double retry = 0;
  auto third = h.engine->submit(greedy_request(prompt_of(10), 1), &retry);
  ASSERT_FALSE(third.ok());
  EXPECT_EQ(third.status().code(), StatusCode::kResourceExhausted);
  EXPECT_GE(retry, 1.0);
  h.engine->run_until_idle();
  // Token bound: one request alone may exceed it, a second may not.
  auto big = h.engine->submit(greedy_request(prompt_of(90), 1));
  ASSERT_TRUE(big.ok());
  auto more = h.engine->submit(greedy_request(prompt_of(20), 1), &retry);
  EXPECT_EQ(more.status().code(), StatusCode::kResourceExhausted);
  // Requests that can never run are invalid, not queued.
  auto too_long = h.engine->submit(greedy_request(prompt_of(600), 1));
  EXPECT_EQ(too_long.status().code(), StatusCode::kInvalidArgument);
  auto bad_id = h.engine->submit(greedy_request({1, 5000}, 1));
  EXPECT_EQ(bad_id.status().code(), StatusCode::kInvalidArgument);
  h.engine->begin_drain();
  EXPECT_EQ(h.engine->submit(greedy_request(prompt_of(2), 1)).status().code(), StatusCode::kUnavailable);
}

TEST(SchedulerTest, WatermarkHysteresis) {
  AdmissionController a({100, 1000, 0.8, 0.7, 0.9, 0.8});
  double retry;
  EXPECT_TRUE(a.admit(1, &retry).ok());
  a.update_usage(0.85, 0.1);
  EXPECT_EQ(a.admit(1, &retry).code(), StatusCode::kUnavailable);
  a.update_usage(0.75, 0.1);  // between the marks: still refusing
  EXPECT_TRUE(a.state().overloaded);
  a.update_usage(0.65, 0.1);
  EXPECT_FALSE(a.state().overloaded);
  EXPECT_TRUE(a.admit(1, &retry).ok());
  a.update_usage(0.1, 0.95);  // process memory
  EXPECT_NE(a.state().reason.find("process memory"), std::string::npos);
  a.update_usage(0.1, 0.85);
  EXPECT_TRUE(a.state().overloaded);
  a.update_usage(0.1, 0.5);
  EXPECT_FALSE(a.state().overloaded);
  // The reason gives the figures of now, not those of when the breaker opened.
  a.update_usage(0.1, 0.95);
  a.update_usage(0.1, 0.93);
  EXPECT_NE(a.state().reason.find("process memory 93%"), std::string::npos) << a.state().reason;
  // Closed with nothing running: it reopens only past the use then plus the marks' gap
  // (0.93 + 0.1), until use falls under the low mark.
  a.close_idle();
  EXPECT_FALSE(a.state().overloaded);
  EXPECT_TRUE(a.admit(1, &retry).ok());
  a.update_usage(0.1, 0.98);
  EXPECT_FALSE(a.state().overloaded);
  a.update_usage(0.1, 1.04);
  EXPECT_TRUE(a.state().overloaded);
  EXPECT_EQ(a.admit(1, &retry).code(), StatusCode::kUnavailable);
  EXPECT_GE(retry, 1);  // a 503 says when to come back
  a.update_usage(0.1, 0.5);  // under the low mark: the ordinary marks again
  a.update_usage(0.1, 0.95);
  EXPECT_TRUE(a.state().overloaded);
}

// A busy KV pool is absorbed by the queue: with the default (off) KV marks, a full
// pool neither refuses nor says overloaded; a full queue is reported for /ready.
TEST(SchedulerTest, KvUseAloneNeverOpensTheBreaker) {
  AdmissionConfig c;
  c.max_waiting_requests = 2;
  AdmissionController a(c);
  double retry;
  a.update_usage(1.0, 0.1);
  EXPECT_FALSE(a.state().overloaded);
  EXPECT_TRUE(a.admit(1, &retry).ok());
  EXPECT_FALSE(a.state().queue_full);
  EXPECT_TRUE(a.admit(1, &retry).ok());
  EXPECT_TRUE(a.state().queue_full);
  a.release_waiting(1);
  EXPECT_FALSE(a.state().queue_full);
}

TEST(SchedulerTest, DynamicWaitsForBatchOrDelayThenRunsToCompletion) {
  EngineConfig c;
  c.batching.policy = BatchingPolicy::kDynamic;
  c.batching.max_batch_size = 3;
  c.batching.max_delay_ms = 50;
  Harness h(c);
  auto a = h.submit(greedy_request(prompt_of(3), 4));
  EXPECT_FALSE(h.engine->step());  // 1 of 3, no delay yet: nothing runs
  h.clock.advance_ms(51);
  EXPECT_TRUE(h.engine->step());  // the delay passed: a batch of one
  auto b = h.submit(greedy_request(prompt_of(3, 40), 4));
  auto c2 = h.submit(greedy_request(prompt_of(3, 80), 4));
  auto d = h.submit(greedy_request(prompt_of(3, 120), 4));
  // The running batch finishes before anyone joins.
  for (int i = 0; i < 3; ++i) {
    h.engine->step();
    EXPECT_EQ(h.runner->calls.back().size(), 1u);
  }
  h.engine->step();  // b, c2, d: a full batch, at once
  EXPECT_EQ(h.runner->calls.back().size(), 3u);
  h.engine->run_until_idle();
  EXPECT_EQ(collect(*a).tokens, expected_tokens(prompt_of(3), 4));
  EXPECT_EQ(collect(*d).tokens, expected_tokens(prompt_of(3, 120), 4));
  (void)b, (void)c2;
}

TEST(SchedulerTest, NoneRunsOneAtATime) {
  EngineConfig c;
  c.batching.policy = BatchingPolicy::kNone;
  Harness h(c);
  for (int i = 0; i < 3; ++i) h.submit(greedy_request(prompt_of(3, 10 * i + 10), 3));
  h.engine->run_until_idle();
  for (const auto& call : h.runner->calls) EXPECT_EQ(call.size(), 1u);
  EXPECT_EQ(h.runner->calls.size(), 9u);
}

TEST(SchedulerTest, LongJobLaneTakesABoundedShare) {
  EngineConfig c;
  c.batching.max_batch_tokens = 100;
  c.batching.long_job_share = 0.25;
  Harness h(c);
  for (int i = 0; i < 8; ++i) h.submit(greedy_request(prompt_of(4, 10 + i), 2));  // establish the median
  h.engine->run_until_idle();
  auto huge = h.submit(greedy_request(prompt_of(400), 2));
  auto small = h.submit(greedy_request(prompt_of(30, 50), 2));
  h.engine->step();
  const auto& call = h.runner->calls.back();
  ASSERT_EQ(call.size(), 2u);
  EXPECT_EQ(call[0].n, 25);  // long job capped at 25% of the budget
  EXPECT_EQ(call[1].n, 30);  // the small job is not stalled behind it
  h.engine->run_until_idle();
  EXPECT_EQ(collect(*huge).tokens, expected_tokens(prompt_of(400), 2));
  // The lane's own metrics count the one long job, its queue time and its latency.
  const std::string m = h.engine->registry().render();
  for (const char* line : {"llmserve_long_jobs_total 1\n", "llmserve_long_job_queue_time_seconds_count 1\n",
                           "llmserve_long_job_e2e_latency_seconds_count 1\n", "llmserve_long_jobs_waiting 0\n"}) {
    EXPECT_NE(m.find(line), std::string::npos) << line;
  }
}

}  // namespace
}  // namespace llms
