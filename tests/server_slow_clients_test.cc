// Slow and stuck clients: requests that arrive too slowly (slowloris headers, a body
// that stops), streams whose clients never read, slow readers that must not be cut
// off, and the connection caps. None of them may starve the accept loop or the
// engine: a normal request is answered meanwhile, and every stalled stream is
// cancelled with its KV blocks freed. Timeouts are set short so that this runs in
// seconds.
#include <sys/resource.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <memory>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "server_openai_schema.h"
#include "server_test_util.h"

namespace llms::test {
namespace {

double value_or_zero(double v) { return std::isnan(v) ? 0.0 : v; }

double seconds_since(int64_t start_ns) { return static_cast<double>(now_ns() - start_ns) * 1e-9; }

// The error JSON of a raw response (after its headers), or null.
Json raw_body_json(const std::string& raw) {
  const size_t end = raw.find("\r\n\r\n");
  return end == std::string::npos ? Json(nullptr) : Json::parse(raw.substr(end + 4), nullptr, false);
}

std::string stream_request(int max_tokens) {
  return Json{{"prompt", "tell a long story"}, {"max_tokens", max_tokens}, {"ignore_eos", true}, {"stream", true},
              {"logprobs", 5}}  // big chunks: the buffers fill within a few tokens
      .dump();
}

const char* const kSlowHeaders = "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n";

// 500 clients sending their headers one byte per second and 50 streams whose
// clients never read, at once.
TEST(ServerSlowClients, SlowlorisAndStalledReadersDoNotStarveOthers) {
  constexpr int kSlow = 500;
  constexpr int kStalled = 50;
  auto server = start_server(slow_synthetic_path(), [](ServeConfig& c) {
    c.server.header_timeout_s = 2;
    c.server.stream_stall_timeout_s = 4;
    c.server.stream_buffer_bytes = 4096;
    c.engine.batching.max_running = 64;
    c.engine.kv.cache_bytes = 128 << 20;
    c.engine.result_cache_bytes = 0;
  });
  rlimit rl{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &rl), 0);  // the server raised the soft limit to the hard one
  if (rl.rlim_cur < 2 * (kSlow + kStalled) + 200) GTEST_SKIP() << "needs ~1300 file descriptors, has " << rl.rlim_cur;
  LlmServer& s = *server;
  const int port = s.port();
  const std::string cancelled = "llmserve_requests_finished_total{reason=\"cancelled\"}";

  std::vector<std::unique_ptr<RawClient>> stalled;
  for (int i = 0; i < kStalled; ++i) {
    stalled.push_back(std::make_unique<RawClient>(port, /*receive_buffer=*/4096));
    ASSERT_TRUE(stalled.back()->send_request("POST", "/v1/completions", stream_request(4000)));
  }
  ASSERT_TRUE(poll_until([&] { return metric(s, "llmserve_requests_running") == kStalled; }));

  std::vector<std::unique_ptr<RawClient>> slow;
  for (int i = 0; i < kSlow; ++i) {
    slow.push_back(std::make_unique<RawClient>(port));
    ASSERT_TRUE(slow.back()->connected());
  }
  std::atomic<bool> stop{false};
  std::thread drip([&] {
    for (size_t pos = 0; !stop.load() && kSlowHeaders[pos] != '\0'; ++pos) {
      for (auto& c : slow) c->send_raw(std::string(1, kSlowHeaders[pos]));
      for (int i = 0; i < 100 && !stop.load(); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));  // pacing: one byte per second
      }
    }
  });
  ASSERT_TRUE(poll_until([&] { return metric(s, "llmserve_http_open_connections") >= kSlow + kStalled; }));

  // Meanwhile a normal client is served at once, on a fresh connection.
  EXPECT_EQ(metric(s, "llmserve_requests_running"), kStalled);
  int64_t t0 = now_ns();
  EXPECT_EQ(http_get(port, "/v1/models").status, 200);
  EXPECT_LT(seconds_since(t0), 1.0);
  t0 = now_ns();
  const HttpResult r = http_post(port, "/v1/completions", Json{{"prompt", "hello"}, {"max_tokens", 2}});
  EXPECT_LT(seconds_since(t0), 1.0);
  EXPECT_EQ(r.status, 200) << r.body;

  // The slow senders get 408 and are closed; the stalled streams are cancelled.
  for (auto& c : slow) {
    EXPECT_TRUE(c->wait_closed(20));
    EXPECT_EQ(c->received().rfind("HTTP/1.1 408", 0), 0u) << c->received();
  }
  stop.store(true);
  drip.join();
  EXPECT_EQ(raw_body_json(slow.front()->received())["error"]["type"], "invalid_request_error");
  EXPECT_TRUE(poll_until([&] { return metric(s, "llmserve_requests_running") == 0; }, 60));
  EXPECT_TRUE(poll_until([&] { return metric(s, "llmserve_kv_blocks{state=\"used\"}") == 0; }));
  EXPECT_TRUE(poll_until([&] { return metric(s, "llmserve_http_active_requests") == 0; }));
  EXPECT_EQ(metric(s, cancelled), kStalled);
  EXPECT_EQ(metric(s, "llmserve_http_client_timeouts_total{kind=\"header\"}"), kSlow);
  EXPECT_EQ(metric(s, "llmserve_http_client_timeouts_total{kind=\"stream_stall\"}"), kStalled);
  for (auto& c : stalled) EXPECT_TRUE(c->wait_closed(10));  // what they never read, then the close
  EXPECT_TRUE(poll_until([&] { return metric(s, "llmserve_http_open_connections") == 0; }));
}

// A client that reads, only slower than the model writes, is held back by the
// bounded buffer and gets its whole stream.
TEST(ServerSlowClients, SlowReaderGetsTheWholeStream) {
  auto server = start_server(slow_synthetic_path(), [](ServeConfig& c) {
    c.server.stream_stall_timeout_s = 2;
    c.server.stream_buffer_bytes = 4096;
    c.engine.result_cache_bytes = 0;
  });
  const int port = server->port();
  RawClient client(port, /*receive_buffer=*/4096);
  ASSERT_TRUE(client.send_request("POST", "/v1/completions", stream_request(150)));
  // 512 bytes every 10 ms: slower than the model writes its chunks.
  const int64_t deadline = now_ns() + static_cast<int64_t>(120e9);
  while (client.received().find("data: [DONE]") == std::string::npos && now_ns() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // pacing: the slow reader under test
    client.read_some(512);
  }
  const std::string& raw = client.received();
  ASSERT_NE(raw.find("data: [DONE]"), std::string::npos);
  int tokens = 0;  // one token per chunk, each with its own logprobs
  for (size_t pos = 0; (pos = raw.find("\"token_logprobs\":[", pos)) != std::string::npos; ++pos) ++tokens;
  EXPECT_EQ(tokens, 150);
  EXPECT_NE(raw.find("\"finish_reason\":\"length\""), std::string::npos);
  EXPECT_EQ(value_or_zero(metric(*server, "llmserve_http_client_timeouts_total{kind=\"stream_stall\"}")), 0);
  EXPECT_EQ(value_or_zero(metric(*server, "llmserve_requests_finished_total{reason=\"cancelled\"}")), 0);
}

TEST(ServerSlowClients, SlowHeadersAndBodiesGet408AndIdleConnectionsClose) {
  auto server = start_server(synthetic_path(), [](ServeConfig& c) {
    c.server.idle_timeout_s = 1;
    c.server.header_timeout_s = 1;
    c.server.body_timeout_s = 1;
  });
  const int port = server->port();
  RawClient headers(port);
  ASSERT_TRUE(headers.send_raw(kSlowHeaders));  // and never the blank line
  RawClient body(port);
  ASSERT_TRUE(body.send_raw(std::string(kSlowHeaders) + "Content-Length: 100\r\n\r\n{\"prompt\":"));
  RawClient idle(port);
  for (RawClient* c : {&headers, &body}) {
    ASSERT_TRUE(c->wait_closed(20));
    EXPECT_EQ(c->received().rfind("HTTP/1.1 408", 0), 0u) << c->received();
    const Json j = raw_body_json(c->received());
    EXPECT_TRUE(check_error(j).empty()) << c->received();
    EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  }
  EXPECT_NE(headers.received().find("header_timeout"), std::string::npos);
  EXPECT_NE(body.received().find("body_timeout"), std::string::npos);
  ASSERT_TRUE(idle.wait_closed(20));
  EXPECT_EQ(idle.received(), "");  // an idle connection is closed without an answer
  EXPECT_EQ(metric(*server, "llmserve_http_client_timeouts_total{kind=\"header\"}"), 1);
  EXPECT_EQ(metric(*server, "llmserve_http_client_timeouts_total{kind=\"body\"}"), 1);
  // A request that arrives in time on a kept-alive connection is answered as usual.
  EXPECT_EQ(http_get(port, "/health").status, 200);
}

// With `tweak` capping connections at `limit`, one more is answered 503 and closed.
void expect_refused(int limit, const char* reason, const std::function<void(ServeConfig&)>& tweak) {
  auto s = start_server(synthetic_path(), tweak);
  const int port = s->port();
  std::vector<std::unique_ptr<RawClient>> open;
  for (int i = 0; i < limit; ++i) open.push_back(std::make_unique<RawClient>(port));
  ASSERT_TRUE(poll_until([&] { return metric(*s, "llmserve_http_open_connections") == limit; }));
  RawClient extra(port);
  ASSERT_TRUE(extra.wait_closed(20));
  EXPECT_EQ(extra.received().rfind("HTTP/1.1 503", 0), 0u) << extra.received();
  const Json j = raw_body_json(extra.received());
  EXPECT_TRUE(check_error(j).empty()) << extra.received();
  EXPECT_EQ(j["error"]["code"], "too_many_connections");
  EXPECT_NE(j["error"]["message"].get<std::string>().find(reason), std::string::npos);
  EXPECT_EQ(metric(*s, std::string("llmserve_http_refused_connections_total{reason=\"") + reason + "\"}"), 1);
  // A closed connection makes room again.
  open.back()->close();
  ASSERT_TRUE(poll_until([&] { return metric(*s, "llmserve_http_open_connections") == limit - 1; }));
  EXPECT_EQ(http_get(port, "/health").status, 200);
}

TEST(ServerSlowClients, ConnectionCapsRefuseWith503) {
  expect_refused(3, "max_connections_per_client",
                 [](ServeConfig& c) { c.server.max_connections_per_client = 3; });
  expect_refused(3, "max_connections", [](ServeConfig& c) {
    c.server.max_connections = 3;
    c.server.max_connections_per_client = 0;
  });
}

}  // namespace
}  // namespace llms::test
