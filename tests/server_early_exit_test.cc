// Early exit over HTTP (--exit-layers / --exit-threshold) on stories260K: greedy
// requests exit and /metrics counts each token by layer; "early_exit": false gives the
// full-depth story; a bad value of the field is a 400 naming it.
#include <gtest/gtest.h>

#include <regex>

#include "server_test_util.h"

namespace llms::test {
namespace {

const char* kAnchor = "Once upon a time, there was a little girl named Lily.";

// The sum of the llmserve_early_exit_tokens_total series whose layer label matches
// `layer` (a regex); the engine's series may carry more labels (the serving version).
double exit_tokens(const std::string& metrics, const std::string& layer) {
  const std::regex series("llmserve_early_exit_tokens_total\\{[^}]*layer=\"" + layer + "\"[^}]*\\} ([0-9.e+]+)");
  double total = 0;
  for (auto it = std::sregex_iterator(metrics.begin(), metrics.end(), series); it != std::sregex_iterator(); ++it) {
    total += std::stod((*it)[1]);
  }
  return total;
}

TEST(ServerEarlyExitTest, GreedyRequestsExitOptOutRunsFullDepthMetricsCountTokens) {
  if (!have_stories()) GTEST_SKIP() << "needs " << shared_dir() << "/models/stories260K.gguf";
  auto server = start_server(stories_path(), [](ServeConfig& c) {
    c.engine.early_exit.layers = {2, 3, 4};
    c.engine.early_exit.threshold = 0.4;
    c.engine.result_cache_bytes = 0;
  });
  const int port = server->port();
  const Json body = {{"prompt", "Once upon a time"}, {"max_tokens", 60}, {"temperature", 0}, {"echo", true},
                     {"ignore_eos", true}};
  HttpResult r = http_post(port, "/v1/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  const std::string text = r.json()["choices"][0]["text"];
  const std::string metrics = http_get(port, "/metrics").body;
  EXPECT_GT(exit_tokens(metrics, "[234]"), 0) << metrics;
  EXPECT_GT(exit_tokens(metrics, "full"), 0) << metrics;
  EXPECT_EQ(exit_tokens(metrics, "[^\"]*"), 60) << metrics;  // each generated token once

  Json opted_out = body;
  opted_out["early_exit"] = false;
  r = http_post(port, "/v1/completions", opted_out);
  ASSERT_EQ(r.status, 200) << r.body;
  const std::string full = r.json()["choices"][0]["text"];
  EXPECT_EQ(full.substr(0, std::string(kAnchor).size()), kAnchor) << full;
  // The opted-out request added no token to the exit counts.
  EXPECT_EQ(exit_tokens(http_get(port, "/metrics").body, "[^\"]*"), 60);
  EXPECT_FALSE(text.empty());

  Json bad = body;
  bad["early_exit"] = "yes";
  r = http_post(port, "/v1/completions", bad);
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(r.json()["error"]["param"], "early_exit") << r.body;
}

}  // namespace
}  // namespace llms::test
