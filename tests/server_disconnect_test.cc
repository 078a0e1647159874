// Clients that go away: killed while their request waits in the queue, and while it
// streams. Their requests must be cancelled, and /metrics must show running requests,
// waiting requests and used KV blocks back at zero.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "server_test_util.h"

namespace llms::test {
namespace {

double value_or_zero(double v) { return std::isnan(v) ? 0.0 : v; }

TEST(ServerDisconnect, KilledClientsMidQueueAndMidStreamFreeEverything) {
  auto server = start_server(slow_synthetic_path(), [](ServeConfig& c) {
    c.engine.batching.max_running = 1;
    c.engine.kv.cache_bytes = 64 << 20;
    c.engine.result_cache_bytes = 0;
  });
  const int port = server->port();
  const std::string cancelled = "llmserve_requests_finished_total{reason=\"cancelled\"}";
  const double cancelled_before = value_or_zero(metric(port, cancelled));

  // The only running slot goes to a long stream.
  RawClient streamer(port);
  ASSERT_TRUE(streamer.send_request(
      "POST", "/v1/completions",
      Json{{"prompt", "tell a long story"}, {"max_tokens", 8000}, {"ignore_eos", true}, {"stream", true}}.dump()));
  ASSERT_NE(streamer.read_until("\"text\"", 30).find("data: {"), std::string::npos);
  ASSERT_TRUE(poll_until([&] { return metric(port, "llmserve_requests_running") == 1; }));

  // Five more wait behind it: three streaming, two whole.
  std::vector<std::unique_ptr<RawClient>> queued;
  for (int i = 0; i < 5; ++i) {
    auto c = std::make_unique<RawClient>(port);
    Json body = {{"prompt", "queued " + std::to_string(i)}, {"max_tokens", 50}, {"stream", i < 3}};
    ASSERT_TRUE(c->send_request("POST", i % 2 ? "/v1/completions" : "/v1/chat/completions",
                                i % 2 ? body.dump()
                                      : Json{{"messages", {{{"role", "user"}, {"content", "q"}}}}, {"max_tokens", 50},
                                             {"stream", i < 3}}
                                            .dump()));
    queued.push_back(std::move(c));
  }
  ASSERT_TRUE(poll_until([&] { return metric(port, "llmserve_requests_waiting") == 5; }));
  for (auto& c : queued) c->close();
  EXPECT_TRUE(poll_until([&] { return metric(port, "llmserve_requests_waiting") == 0; }));
  EXPECT_TRUE(poll_until([&] { return metric(port, cancelled) == cancelled_before + 5; }));
  EXPECT_EQ(metric(port, "llmserve_requests_running"), 1);  // the stream goes on

  // Now the streaming client dies mid-stream.
  streamer.close();
  EXPECT_TRUE(poll_until([&] { return metric(port, "llmserve_requests_running") == 0; }));
  EXPECT_TRUE(poll_until([&] { return metric(port, "llmserve_kv_blocks{state=\"used\"}") == 0; }));
  EXPECT_TRUE(poll_until([&] { return metric(port, "llmserve_http_active_requests") == 0; }));
  const std::string text = http_get(port, "/metrics").body;
  EXPECT_EQ(metric(text, cancelled), cancelled_before + 6);
  EXPECT_EQ(metric(text, "llmserve_http_client_disconnects_total"), 6);
  EXPECT_EQ(metric(text, "llmserve_kv_cache_usage_ratio"), 0);
  // And the server still serves.
  EXPECT_EQ(http_post(port, "/v1/completions", Json{{"prompt", "x"}, {"max_tokens", 2}}).status, 200);
}

}  // namespace
}  // namespace llms::test
