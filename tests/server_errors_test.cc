// Every error the server reports, end to end: status code, OpenAI error shape, type,
// param and code — and that nothing a client sends brings the server down or leaks KV
// blocks.
#include <gtest/gtest.h>

#include "server_openai_schema.h"
#include "server_test_util.h"

namespace llms::test {
namespace {

struct Expected {
  int status;
  const char* type;
  const char* param;  // nullptr: null
  const char* code;   // nullptr: null
};

void expect_error(const HttpResult& r, const Expected& e, const std::string& what) {
  EXPECT_EQ(r.status, e.status) << what << ": " << r.body;
  const Json j = r.json();
  const auto v = check_error(j);
  EXPECT_TRUE(v.empty()) << what << ": " << r.body;
  if (!v.empty()) return;
  EXPECT_EQ(j["error"]["type"], e.type) << what;
  EXPECT_EQ(j["error"]["param"], e.param ? Json(e.param) : Json(nullptr)) << what << ": " << r.body;
  EXPECT_EQ(j["error"]["code"], e.code ? Json(e.code) : Json(nullptr)) << what << ": " << r.body;
  EXPECT_FALSE(j["error"]["message"].get<std::string>().empty());
}

class ErrorsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = start_server(synthetic_path(), [](ServeConfig& c) {
                c.engine.context_length = 64;
                c.server.max_body_bytes = 4096;
              }).release();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  int port() const { return server_->port(); }
  static LlmServer* server_;
};
LlmServer* ErrorsTest::server_ = nullptr;

TEST_F(ErrorsTest, BadRequestsAre400WithTheParameter) {
  const Expected bad{400, "invalid_request_error", nullptr, nullptr};
  expect_error(http_post(port(), "/v1/completions", std::string("{\"prompt\": ")), bad, "truncated JSON");
  expect_error(http_post(port(), "/v1/completions", std::string("[1, 2]")), bad, "not an object");
  const struct {
    const char* path;
    Json body;
    const char* param;
  } cases[] = {
      {"/v1/completions", {{"prompt", "x"}, {"temperature", "warm"}}, "temperature"},
      {"/v1/completions", {{"prompt", "x"}, {"top_p", 1.5}}, "top_p"},
      {"/v1/completions", {{"prompt", "x"}, {"max_tokens", -1}}, "max_tokens"},
      {"/v1/completions", {{"prompt", "x"}, {"n", 1000}}, "n"},
      {"/v1/completions", {{"prompt", "x"}, {"stop", {1, 2}}}, "stop"},
      {"/v1/completions", {{"prompt", "x"}, {"stream", "yes"}}, "stream"},
      {"/v1/completions", {{"prompt", "x"}, {"logprobs", 50}}, "logprobs"},
      {"/v1/completions", {{"prompt", Json::array()}}, "prompt"},
      {"/v1/completions", {{"prompt", {1, 99999}}}, "prompt"},
      {"/v1/completions", {{"prompt", {{1, 2}, "x", 3}}}, "prompt"},
      {"/v1/completions", {{"max_tokens", 3}}, "prompt"},
      {"/v1/completions", {{"prompt", "x"}, {"timeout", -1}}, "timeout"},
      {"/v1/completions", {{"prompt", "x"}, {"priority", "high"}}, "priority"},
      {"/v1/completions", {{"prompt", "x"}, {"ignore_eos", 1}}, "ignore_eos"},
      {"/v1/chat/completions", {{"messages", "hi"}}, "messages"},
      {"/v1/chat/completions", {{"messages", {{{"role", "wizard"}, {"content", "x"}}}}}, "messages"},
      {"/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", {{{"type", "image_url"}}}}}}}}, "messages"},
      {"/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "x"}}}}, {"tools", {{{"type", "function"}}}}}, "tools"},
      {"/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "x"}}}}, {"top_logprobs", 3}}, "top_logprobs"},
      {"/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "x"}}}}, {"frequency_penalty", 9}}, "frequency_penalty"},
      {"/tokenize", {{"prompt", 5}}, "prompt"},
      {"/detokenize", {{"tokens", {"a"}}}, "tokens"},
  };
  for (const auto& c : cases) {
    expect_error(http_post(port(), c.path, c.body), Expected{400, "invalid_request_error", c.param, nullptr},
                 std::string(c.path) + " " + c.body.dump());
  }
}

TEST_F(ErrorsTest, PromptLongerThanTheContext) {
  std::string prompt;
  for (int i = 0; i < 80; ++i) prompt += "word ";
  expect_error(http_post(port(), "/v1/completions", Json{{"prompt", prompt}}),
               {400, "invalid_request_error", "prompt", "context_length_exceeded"}, "long prompt");
  expect_error(http_post(port(), "/v1/chat/completions", Json{{"messages", {{{"role", "user"}, {"content", prompt}}}}}),
               {400, "invalid_request_error", "messages", "context_length_exceeded"}, "long chat");
  // max_tokens beyond the context is capped, not refused.
  const HttpResult r = http_post(port(), "/v1/completions", Json{{"prompt", "hi"}, {"max_tokens", 1000}, {"ignore_eos", true}});
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.json()["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(r.json()["usage"]["total_tokens"], 64);
}

TEST_F(ErrorsTest, UnknownModelRouteAndMethod) {
  expect_error(http_post(port(), "/v1/completions", Json{{"prompt", "x"}, {"model", "gpt-4o"}}),
               {404, "invalid_request_error", "model", "model_not_found"}, "unknown model");
  expect_error(http_get(port(), "/v1/nothing"), {404, "invalid_request_error", nullptr, nullptr}, "route");
  const HttpResult r = http_get(port(), "/v1/chat/completions");
  expect_error(r, {405, "invalid_request_error", nullptr, nullptr}, "method");
  EXPECT_EQ(r.header("Allow"), "POST");
}

// HEAD is served on a GET route, and its answer has no body, so that a pipelined
// request's answer after it is read as an answer, not as the rest of a body.
TEST_F(ErrorsTest, HeadIsAnsweredWithoutABody) {
  const HttpResult models = http_get(port(), "/v1/models");
  ASSERT_EQ(models.status, 200);
  RawClient c(port());
  ASSERT_TRUE(c.send_raw("HEAD /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
                         "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
  const std::string got = c.read_until("{\"status\":\"ok\"}", 20);
  ASSERT_EQ(got.rfind("HTTP/1.1 200", 0), 0u) << got;
  const size_t end = got.find("\r\n\r\n");
  ASSERT_NE(end, std::string::npos);
  EXPECT_NE(got.find("Content-Length: " + std::to_string(models.body.size())), std::string::npos) << got;
  EXPECT_EQ(got.compare(end + 4, 15, "HTTP/1.1 200 OK"), 0) << got;  // nothing between the two answers
  EXPECT_EQ(got.find("\"object\""), std::string::npos) << got;   // no models list: no body
  // A GET route answers HEAD; a POST-only one still answers GET with 405 and its Allow.
  const HttpResult post_only = http_get(port(), "/v1/completions");
  EXPECT_EQ(post_only.status, 405);
  EXPECT_EQ(post_only.header("Allow"), "POST");
}

TEST_F(ErrorsTest, BodyTooLargeIs413) {
  const std::string big = Json{{"prompt", std::string(8000, 'a')}}.dump();
  expect_error(http_post(port(), "/v1/completions", big), {413, "invalid_request_error", nullptr, "request_too_large"},
               "big body");
  EXPECT_EQ(http_get(port(), "/health").status, 200);
}

TEST_F(ErrorsTest, GarbageNeverTakesTheServerDown) {
  const std::string junk[] = {"GARBAGE\r\n\r\n",
                              "POST /v1/completions HTTP/1.1\r\nContent-Length: 99\r\n\r\n{\"pro",
                              "GET / HTTP/9.9\r\n\r\n", std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11),
                              "POST /v1/completions HTTP/1.1\r\nContent-Length: -5\r\n\r\n"};
  int answered_400 = 0;
  for (const auto& j : junk) {
    RawClient c(port());
    ASSERT_TRUE(c.connected());
    c.send_raw(j);
    if (c.read_until("\r\n\r\n", 0.5).find(" 400 ") != std::string::npos) ++answered_400;
    c.close();
  }
  EXPECT_GE(answered_400, 3);
  RawClient header_bomb(port());
  header_bomb.send_raw("GET /health HTTP/1.1\r\nX-Big: " + std::string(100000, 'x') + "\r\n\r\n");
  EXPECT_NE(header_bomb.read_until("\r\n\r\n", 5).find(" 431 "), std::string::npos);
  const HttpResult u = http_post(port(), "/v1/completions", std::string("{\"prompt\": \"\xff\xfe\", \"max_tokens\": 2}"));
  EXPECT_EQ(u.status, 400) << u.body;
  EXPECT_EQ(http_get(port(), "/health").status, 200);
  EXPECT_TRUE(poll_until([&] { return metric(port(), "llmserve_kv_blocks{state=\"used\"}") == 0; }));
}

TEST(ErrorsAdmission, QueueFullIs429WithRetryAfter) {
  auto server = start_server(synthetic_path(), [](ServeConfig& c) { c.engine.admission.max_waiting_requests = 0; });
  const HttpResult r = http_post(server->port(), "/v1/completions", Json{{"prompt", "x"}});
  expect_error(r, {429, "rate_limit_error", nullptr, "queue_full"}, "queue full");
  EXPECT_GE(std::stoi(r.header("Retry-After")), 1);
  EXPECT_EQ(metric(server->port(), "llmserve_requests_rejected_total{reason=\"queue_full\"}"), 1);
}

TEST(ErrorsAdmission, AboveTheWatermarkIs503UntilBlocksAreFreed) {
  auto server = start_server(synthetic_path(), [](ServeConfig& c) {
    c.engine.kv.cache_bytes = 1 << 20;
    c.engine.admission.kv_high = 0.1;
    c.engine.admission.kv_low = 0.1;
  });
  const int port = server->port();
  RawClient hog(port);
  hog.send_request("POST", "/v1/completions",
                   Json{{"prompt", "a long story"}, {"max_tokens", 1000}, {"ignore_eos", true}, {"stream", true}}.dump());
  ASSERT_TRUE(poll_until([&] { return http_get(port, "/ready").status == 503; }));
  const HttpResult ready = http_get(port, "/ready");
  EXPECT_NE(ready.json()["reason"].get<std::string>().find("watermark"), std::string::npos) << ready.body;
  expect_error(http_post(port, "/v1/completions", Json{{"prompt", "x"}}), {503, "service_unavailable", nullptr, "overloaded"},
               "watermark");
  hog.close();
  EXPECT_TRUE(poll_until([&] { return http_get(port, "/ready").status == 200; }));
  EXPECT_EQ(http_post(port, "/v1/completions", Json{{"prompt", "x"}, {"max_tokens", 2}}).status, 200);
}

TEST(ErrorsAdmission, ARequestForecastToMissItsTtftIs503WithRetryAfter) {
  auto server = start_server(synthetic_path(), [](ServeConfig& c) {
    c.engine.batching.max_running = 1;
    c.engine.slo.shed = true;
  });
  const int port = server->port();
  // A hog holds the only running slot while four requests without a target and one
  // with a 1 ms TTFT target queue behind it; the latter at a lower priority, so it
  // waits for the others (its urgency raises it by one, not five).
  RawClient hog(port);
  hog.send_request("POST", "/v1/completions",
                   Json{{"prompt", "a long story"}, {"max_tokens", 1000}, {"ignore_eos", true}, {"stream", true}}.dump());
  ASSERT_NE(hog.read_until("data:", 10).find("data:"), std::string::npos);
  std::vector<std::unique_ptr<RawClient>> others;
  for (int i = 0; i < 4; ++i) {
    others.push_back(std::make_unique<RawClient>(port));
    others.back()->send_request("POST", "/v1/completions", Json{{"prompt", "x"}, {"max_tokens", 4}}.dump());
  }
  RawClient late(port);
  late.send_request("POST", "/v1/completions",
                    Json{{"prompt", "y"}, {"max_tokens", 4}, {"priority", -5}, {"slo", {{"ttft_ms", 1}}}}.dump());
  ASSERT_TRUE(poll_until([&] { return metric(port, "llmserve_requests_waiting") == 5; }));
  // Freed, the slot admits the four one by one with the queue backlogged: after the
  // fourth the queue's rate is known, and the late request's first token is forecast
  // past its deadline: it is refused without being run.
  hog.close();
  const std::string answer = late.read_until("slo_unattainable", 20);
  ASSERT_NE(answer.find("slo_unattainable"), std::string::npos) << late.received();
  EXPECT_EQ(answer.rfind("HTTP/1.1 503", 0), 0u) << answer;
  EXPECT_NE(answer.find("Retry-After: "), std::string::npos) << answer;
  EXPECT_NE(answer.find("\"service_unavailable\""), std::string::npos) << answer;
  for (auto& c : others) EXPECT_NE(c->read_until("\"finish_reason\"", 20).find("HTTP/1.1 200"), std::string::npos);
  EXPECT_EQ(metric(port, "llmserve_requests_rejected_total{reason=\"slo\"}"), 1);
  EXPECT_EQ(metric(port, "llmserve_requests_finished_total{reason=\"rejected\"}"), 1);
}

TEST(ErrorsAdmission, DrainingIs503) {
  auto server = start_server(synthetic_path());
  server->context().set_draining();
  expect_error(http_post(server->port(), "/v1/chat/completions", Json{{"messages", {{{"role", "user"}, {"content", "x"}}}}}),
               {503, "service_unavailable", nullptr, "draining"}, "draining");
  const HttpResult ready = http_get(server->port(), "/ready");
  EXPECT_EQ(ready.status, 503);
  EXPECT_NE(ready.json()["reason"].get<std::string>().find("draining"), std::string::npos);
  EXPECT_EQ(http_get(server->port(), "/health").status, 200);
}

}  // namespace
}  // namespace llms::test
