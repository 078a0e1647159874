// Time a request waited before it reached the engine (RequestParams::setup_ns: its
// LoRA adapter loaded again under --lora-memory) counts in its queue time and TTFT.
#include <gtest/gtest.h>

#include "engine/engine.h"
#include "engine/testing/engine_test_util.h"

namespace llms {
namespace {

using testing::FakeRunner;
using testing::greedy_request;
using testing::ManualClock;

TEST(SetupTimeTest, SetupTimeCountsInQueueTimeAndTtft) {
  ManualClock clock;
  Engine engine(std::make_unique<FakeRunner>(), testing::synthetic_tokenizer(), EngineConfig{}, Hash128{1, 1}, 64,
                512);
  engine.set_clock(clock.fn());
  RequestParams loaded = greedy_request({10, 11, 12}, 2);
  loaded.setup_ns = 250'000'000;  // a quarter of a second spent loading its adapter
  auto with_setup = engine.submit(loaded);
  auto without = engine.submit(greedy_request({10, 11, 12}, 2));
  ASSERT_TRUE(with_setup.ok() && without.ok());
  engine.run_until_idle();  // the clock stands still: the engine's own time is 0
  const testing::Collected a = testing::collect(**with_setup), b = testing::collect(**without);
  ASSERT_TRUE(a.finished && b.finished);
  EXPECT_DOUBLE_EQ(a.finish.timings.queue_s, 0.25);
  EXPECT_DOUBLE_EQ(a.finish.timings.ttft_s, 0.25);
  EXPECT_DOUBLE_EQ(a.finish.timings.e2e_s, 0.25);
  EXPECT_DOUBLE_EQ(b.finish.timings.ttft_s, 0.0);
}

}  // namespace
}  // namespace llms
