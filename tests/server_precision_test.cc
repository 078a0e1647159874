// Automatic precision over HTTP (--precision-variants) on stories260K: the estimator
// sends a short request to the cheap variant and a long one to the precise one, a
// request may pin a variant, an unknown one is a 400 naming the field, and a fallback
// moves a request up mid-stream with /metrics counting it.
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>

#include "server_test_util.h"

namespace llms::test {
namespace {

// The value of the series `name{labels}` (labels: the exact text between the braces
// after the version label), 0 when absent.
double series(const std::string& metrics, const std::string& name, const std::string& labels) {
  const std::regex re(name + "\\{version=\"[^\"]*\"," + labels + "\\} ([0-9.e+]+)");
  std::smatch m;
  return std::regex_search(metrics, m, re) ? std::stod(m[1]) : 0.0;
}

std::string text_of(const HttpResult& r) { return r.json()["choices"][0]["text"]; }

TEST(ServerPrecisionTest, RoutesPinsRefusesAndFallsBack) {
  if (!have_stories()) GTEST_SKIP() << "needs " << shared_dir() << "/models/stories260K.gguf";
  auto server = start_server(stories_path(), [](ServeConfig& c) {
    c.precision.variants = {DType::kQ4_K, DType::kF16};
    c.precision.policy.prompt_max = {8};       // the cheap variant takes prompts of up to 8 tokens...
    c.precision.policy.max_tokens_max = {32};  // ...asking for up to 32
    c.precision.policy.entropy_bound = 0;      // no fallback on this server
    c.engine.result_cache_bytes = 0;
  });
  const int port = server->port();
  const Json short_body = {{"prompt", "Once upon a time"}, {"max_tokens", 20}, {"temperature", 0}};
  const Json long_body = {{"prompt", "Once upon a time, there was a little girl named Lily. She liked to"},
                          {"max_tokens", 20},
                          {"temperature", 0}};
  HttpResult r = http_post(port, "/v1/completions", short_body);
  ASSERT_EQ(r.status, 200) << r.body;
  r = http_post(port, "/v1/completions", long_body);
  ASSERT_EQ(r.status, 200) << r.body;
  std::string m = http_get(port, "/metrics").body;
  EXPECT_EQ(series(m, "llmserve_precision_requests_total", "variant=\"q4_k\""), 1) << m;
  EXPECT_EQ(series(m, "llmserve_precision_requests_total", "variant=\"f16\""), 1) << m;
  EXPECT_EQ(series(m, "llmserve_precision_tokens_total", "variant=\"q4_k\""), 20) << m;
  EXPECT_EQ(series(m, "llmserve_precision_tokens_total", "variant=\"f16\""), 20) << m;
  // The cheap variant's engine shows its own metrics under its variant label.
  EXPECT_NE(m.find("variant=\"q4_k\""), std::string::npos);

  Json pinned = long_body;
  pinned["precision"] = "q4_k";  // long, but pinned to the cheap variant
  r = http_post(port, "/v1/completions", pinned);
  ASSERT_EQ(r.status, 200) << r.body;
  m = http_get(port, "/metrics").body;
  EXPECT_EQ(series(m, "llmserve_precision_requests_total", "variant=\"q4_k\""), 2) << m;

  for (const Json& value : {Json("q2_k"), Json(""), Json(3)}) {
    Json bad = short_body;
    bad["precision"] = value;
    r = http_post(port, "/v1/completions", bad);
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_EQ(r.json()["error"]["param"], "precision") << r.body;
  }
}

TEST(ServerPrecisionTest, AFallbackContinuesOnTheHigherVariant) {
  if (!have_stories()) GTEST_SKIP() << "needs " << shared_dir() << "/models/stories260K.gguf";
  // A bound no real distribution is under: the first token already moves the request
  // up, before the cheap variant emitted anything, so the answer is the precise one's.
  auto server = start_server(stories_path(), [](ServeConfig& c) {
    c.precision.variants = {DType::kQ4_K, DType::kF16};
    c.precision.policy.prompt_max = {64};
    c.precision.policy.max_tokens_max = {64};
    c.precision.policy.entropy_bound = 1e-9;
    c.precision.policy.window = 1;
    c.engine.result_cache_bytes = 0;
  });
  const int port = server->port();
  const Json body = {{"prompt", "Once upon a time"}, {"max_tokens", 24}, {"temperature", 0}};
  HttpResult automatic = http_post(port, "/v1/completions", body);
  ASSERT_EQ(automatic.status, 200) << automatic.body;
  Json pinned = body;
  pinned["precision"] = "f16";
  HttpResult precise = http_post(port, "/v1/completions", pinned);
  ASSERT_EQ(precise.status, 200) << precise.body;
  EXPECT_EQ(text_of(automatic), text_of(precise));
  EXPECT_EQ(automatic.json()["usage"]["completion_tokens"], 24) << automatic.body;
  EXPECT_EQ(automatic.json()["usage"]["prompt_tokens"], precise.json()["usage"]["prompt_tokens"]);
  const std::string m = http_get(port, "/metrics").body;
  EXPECT_EQ(series(m, "llmserve_precision_fallbacks_total", "from=\"q4_k\",to=\"f16\""), 1) << m;
  EXPECT_EQ(series(m, "llmserve_precision_requests_total", "variant=\"q4_k\""), 1) << m;
  EXPECT_EQ(series(m, "llmserve_precision_tokens_total", "variant=\"f16\""), 48) << m;

  // Streaming: the same text, one stream, one [DONE].
  Json streamed = body;
  streamed["stream"] = true;
  const SseResult s = http_stream(port, "/v1/completions", streamed);
  ASSERT_EQ(s.status, 200) << s.raw;
  std::string joined;
  for (const Json& c : s.chunks()) joined += c["choices"][0]["text"].get<std::string>();
  EXPECT_EQ(joined, text_of(precise));
  EXPECT_TRUE(s.done());
  EXPECT_EQ(std::count(s.events.begin(), s.events.end(), "[DONE]"), 1);
}

TEST(ServerPrecisionTest, AConstrainedRequestRunsOnTheCheapVariant) {
  if (!have_stories()) GTEST_SKIP() << "needs " << shared_dir() << "/models/stories260K.gguf";
  auto server = start_server(stories_path(), [](ServeConfig& c) {
    c.precision.variants = {DType::kQ4_K, DType::kF16};
    c.precision.policy.prompt_max = {8};
    c.precision.policy.max_tokens_max = {64};
    c.engine.result_cache_bytes = 0;
  });
  const Json body = {{"prompt", "Once upon a time"},
                     {"max_tokens", 24},
                     {"temperature", 0},
                     {"response_format", {{"type", "json_object"}}}};
  const HttpResult r = http_post(server->port(), "/v1/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  const std::string text = text_of(r);
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.find_first_not_of(" \n\t"), text.find('{')) << text;  // the grammar's object starts the text
  const std::string m = http_get(server->port(), "/metrics").body;
  EXPECT_EQ(series(m, "llmserve_precision_requests_total", "variant=\"q4_k\""), 1) << m;
  EXPECT_EQ(series(m, "llmserve_precision_tokens_total", "variant=\"q4_k\""),
            r.json()["usage"]["completion_tokens"].get<double>())
      << m;
}

TEST(ServerPrecisionTest, APrecisionFieldWithoutVariantsIsRefused) {
  if (!have_stories()) GTEST_SKIP() << "needs " << shared_dir() << "/models/stories260K.gguf";
  auto server = start_server(stories_path(), [](ServeConfig& c) { c.engine.result_cache_bytes = 0; });
  Json body = {{"prompt", "Once"}, {"max_tokens", 2}, {"precision", "auto"}};
  EXPECT_EQ(http_post(server->port(), "/v1/completions", body).status, 200);
  body["precision"] = "f16";
  const HttpResult r = http_post(server->port(), "/v1/completions", body);
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("precision-variants"), std::string::npos) << r.body;
}

}  // namespace
}  // namespace llms::test
