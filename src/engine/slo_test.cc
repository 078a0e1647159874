// Latency targets: which target a request is held to, deadline-first order and
// urgency with a manual clock, when a target counts as met, and the engine's SLO
// counters over a run with a fake model.
#include "engine/slo.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "engine/engine.h"
#include "engine/engine_test_util.h"
#include "engine/schedule_steps.h"

namespace llms {
namespace {

using testing::collect;
using testing::FakeRunner;
using testing::greedy_request;
using testing::ManualClock;

constexpr int64_t kMs = 1'000'000;

Sequence waiting_seq(uint64_t id, int64_t arrival_ns, double ttft_ms, int priority = 0) {
  Sequence s;
  s.id = id;
  s.arrival_ns = arrival_ns;
  s.slo.ttft_ms = ttft_ms;
  s.params.priority = priority;
  s.params.lane = Lane::kBatch;  // no lane boost: the tests compare priorities directly
  return s;
}

TEST(SloTest, ARequestsOwnTargetsWinOverItsLanes) {
  EngineConfig c;
  c.slo_interactive = {200, 50};
  c.slo_batch = {5000, 0};
  RequestParams p;
  EXPECT_EQ(resolve_slo(p, c).ttft_ms, 200);
  EXPECT_EQ(resolve_slo(p, c).itl_ms, 50);
  p.lane = Lane::kBatch;
  EXPECT_EQ(resolve_slo(p, c).ttft_ms, 5000);
  EXPECT_EQ(resolve_slo(p, c).itl_ms, 0);
  p.slo = {100, 20};
  EXPECT_EQ(resolve_slo(p, c).ttft_ms, 100);
  EXPECT_EQ(resolve_slo(p, c).itl_ms, 20);
}

TEST(SloTest, EqualPrioritiesGoEarliestDeadlineFirstAndNoneLast) {
  EngineConfig c;
  c.aging_s = 10;
  Sequence none = waiting_seq(1, 0, 0);          // first to arrive, no target
  Sequence late = waiting_seq(2, 1 * kMs, 900);  // deadline at 901 ms
  Sequence soon = waiting_seq(3, 2 * kMs, 300);  // deadline at 302 ms
  std::vector<Sequence*> w = {&none, &late, &soon};
  order_waiting(w, c, 10 * kMs);
  EXPECT_EQ(w[0], &soon);
  EXPECT_EQ(w[1], &late);
  EXPECT_EQ(w[2], &none);
  // Aging still bounds it: after one aging step the request without a target is ahead
  // of requests that arrived an aging step after it.
  Sequence fresh = waiting_seq(4, 10'500 * kMs, 300'000);
  std::vector<Sequence*> w2 = {&fresh, &none};
  order_waiting(w2, c, 10'600 * kMs);
  EXPECT_EQ(w2[0], &none);
}

TEST(SloTest, UrgencyRisesByOneOnceHalfTheBudgetHasPassed) {
  EngineConfig c;
  c.aging_s = 100;
  Sequence other = waiting_seq(1, 0, 0, /*priority=*/1);
  Sequence slo = waiting_seq(2, 0, 1000, /*priority=*/0);
  EXPECT_EQ(slo_urgency(slo, 499 * kMs), 0);
  EXPECT_EQ(slo_urgency(slo, 500 * kMs), 1);
  std::vector<Sequence*> w = {&other, &slo};
  order_waiting(w, c, 400 * kMs);
  EXPECT_EQ(w[0], &other);  // priority 1 against 0
  order_waiting(w, c, 600 * kMs);
  EXPECT_EQ(w[0], &slo);  // 0 + 1 ties, and its deadline comes first
  Sequence higher = waiting_seq(3, 0, 0, /*priority=*/2);
  std::vector<Sequence*> w2 = {&higher, &slo};
  order_waiting(w2, c, 2000 * kMs);  // past its deadline: still one level only
  EXPECT_EQ(w2[0], &higher);
  slo.first_token_ns = 700 * kMs;  // answered: no more urgency
  EXPECT_EQ(slo_urgency(slo, 800 * kMs), 0);
}

TEST(SloTest, MetWhenTheFirstTokenIsInTimeAndFewIntervalsAreOver) {
  Sequence s = waiting_seq(1, 0, 100);
  s.slo.itl_ms = 10;
  s.first_token_ns = 100 * kMs;  // exactly at the deadline
  for (int i = 0; i < 200; ++i) note_itl(s, (i < 2 ? 11 : 9) * kMs);
  SloOutcome o = slo_outcome(s, 0.99);
  EXPECT_TRUE(o.has_ttft && o.ttft_met);
  EXPECT_TRUE(o.has_itl && o.itl_met);  // 2 of 200 over: within the 1% a p99 target allows
  note_itl(s, 11 * kMs);
  EXPECT_FALSE(slo_outcome(s, 0.99).itl_met);  // 3 of 201 over
  s.first_token_ns = 100 * kMs + 1;
  EXPECT_FALSE(slo_outcome(s, 0.99).ttft_met);
  Sequence none = waiting_seq(2, 0, 0);
  EXPECT_FALSE(slo_outcome(none, 0.99).any());
  EXPECT_TRUE(slo_outcome(none, 0.99).all_met());
}

// The value of `name{...label...}` in Prometheus text (every label given must match).
double series(const std::string& text, const std::string& name, const std::vector<std::string>& labels) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name + "{", 0) != 0) continue;
    bool all = true;
    for (const auto& l : labels) all = all && line.find(l) != std::string::npos;
    if (all) return std::stod(line.substr(line.rfind(' ') + 1));
  }
  return 0;
}

TEST(SloTest, TheEngineCountsMetAndMissedTargetsAndGoodput) {
  EngineConfig c;
  c.max_running = 1;  // one at a time: the second waits for the first
  auto r = std::make_unique<FakeRunner>();
  Engine engine(std::move(r), testing::synthetic_tokenizer(), c, Hash128{1, 1}, 64, 512);
  ManualClock clock;
  engine.set_clock(clock.fn());
  RequestParams fast = greedy_request({10, 11, 12}, 4);
  fast.slo = {100, 50};
  RequestParams slow = greedy_request({20, 21, 22}, 4);
  slow.slo = {100, 0};
  auto a = engine.submit(fast).value();
  auto b = engine.submit(slow).value();
  // A step every 30 ms: the first request answers at once and every 30 ms after (ITL
  // 30 < 50); the second waits for it to finish (4 steps) and misses its 100 ms TTFT.
  for (int i = 0; i < 50 && !(a->finished() && b->finished()); ++i) {
    engine.step();
    clock.advance_ms(30);
  }
  ASSERT_TRUE(collect(*a).finished);
  ASSERT_TRUE(collect(*b).finished);
  const std::string text = engine.registry().render();
  const std::string name = "llmserve_slo_requests_total";
  EXPECT_EQ(series(text, name, {"slo=\"ttft\"", "result=\"met\""}), 1);
  EXPECT_EQ(series(text, name, {"slo=\"ttft\"", "result=\"missed\""}), 1);
  EXPECT_EQ(series(text, name, {"slo=\"itl\"", "result=\"met\""}), 1);
  EXPECT_EQ(series(text, name, {"slo=\"itl\"", "result=\"missed\""}), 0);
  double goodput = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("llmserve_slo_goodput_tokens_total", 0) == 0) goodput = std::stod(line.substr(line.rfind(' ') + 1));
  }
  EXPECT_EQ(goodput, 4);  // the first request's tokens only
}

}  // namespace
}  // namespace llms
