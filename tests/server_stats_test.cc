// GET /v1/stats (the dashboard's data) and the dashboard's files at / and /ui/...: the
// stats body's keys and types, its window bounded by stats_window, values that move
// with requests and ratings; the page's CSP, content types and caching; --no-ui; API keys.
#include <gtest/gtest.h>

#include <regex>

#include "command_util.h"
#include "server_test_util.h"

namespace llms::test {
namespace {

constexpr int kWindow = 4;

void expect_keys(const Json& j, const std::vector<std::string>& keys, const std::string& where) {
  ASSERT_TRUE(j.is_object()) << where << ": " << j.dump();
  for (const auto& k : keys) EXPECT_TRUE(j.contains(k)) << where << " lacks " << k;
}

// Every column an array of the same length, of numbers (strings for finish_reason).
size_t expect_columns(const Json& cols, const std::vector<std::string>& keys, const std::string& where) {
  expect_keys(cols, keys, where);
  const size_t n = cols[keys.front()].size();
  for (const auto& k : keys) {
    const Json& c = cols[k];
    EXPECT_TRUE(c.is_array()) << where << "." << k;
    EXPECT_EQ(c.size(), n) << where << "." << k;
    for (const Json& v : c) {
      if (k == "finish_reason") {
        EXPECT_TRUE(v.is_string()) << where << "." << k;
      } else {
        EXPECT_TRUE(v.is_number()) << where << "." << k;
      }
    }
  }
  return n;
}

const std::vector<std::string> kStepKeys = {"t_ms", "duration_s", "batch_tokens", "prefill_tokens", "token_budget",
                                            "batch_size", "running", "waiting", "kv_blocks_used", "kv_blocks_total",
                                            "rss_bytes"};
const std::vector<std::string> kRequestKeys = {"t_ms", "queue_s", "ttft_s", "itl_s", "e2e_s", "compute_s",
                                               "prompt_tokens", "cached_prompt_tokens", "completion_tokens",
                                               "priority", "finish_reason"};

Json stats(int port) {
  const HttpResult r = http_get(port, "/v1/stats");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.header("Content-Type").find("application/json"), std::string::npos);
  return r.json();
}

TEST(ServerStatsTest, SchemaWindowBoundAndValuesThatMoveWithRequests) {
  auto server = start_server(synthetic_path(), [](ServeConfig& c) { c.engine.stats_window = kWindow; });
  const Json before = stats(server->port());
  expect_keys(before, {"object", "model", "version", "now_ms", "uptime_s", "window", "engine", "totals", "summary",
                       "versions", "steps", "requests"},
              "stats");
  EXPECT_EQ(before["object"], "stats");
  EXPECT_EQ(before["window"], kWindow);
  expect_keys(before["engine"], {"running", "waiting", "kv_blocks_total", "kv_blocks_used", "kv_usage", "rss_bytes",
                                 "rss_usage", "overloaded", "steps", "preemptions"},
              "engine");
  EXPECT_GT(before["engine"]["kv_blocks_total"].get<int>(), 0);
  EXPECT_GT(before["engine"]["rss_bytes"].get<double>(), 0);
  EXPECT_EQ(before["totals"]["requests"], 0);
  EXPECT_EQ(expect_columns(before["requests"], kRequestKeys, "requests"), 0u);
  ASSERT_EQ(before["versions"].size(), 1u);
  expect_keys(before["versions"][0], {"name", "role", "share", "completed", "failed", "abnormal", "quality_kl",
                                      "quality_perplexity", "ratings", "rating_mean", "negative_share"},
              "versions[0]");
  EXPECT_EQ(before["versions"][0]["ratings"], 0);
  EXPECT_EQ(before["versions"][0]["role"], "current");
  EXPECT_EQ(before["versions"][0]["share"], 1.0);

  constexpr int kRequests = 6;
  constexpr int kTokens = 5;
  for (int i = 0; i < kRequests; ++i) {
    // Sampled, not greedy: the result cache would answer a repeat without the engine.
    const HttpResult r = http_post(server->port(), "/v1/completions",
                                   Json{{"prompt", "hello " + std::to_string(i)}, {"max_tokens", kTokens},
                                        {"temperature", 1.0}, {"ignore_eos", true}, {"priority", i}});
    ASSERT_EQ(r.status, 200) << r.body;
  }
  const Json after = stats(server->port());
  // The rings hold the last kWindow samples however many there were.
  EXPECT_EQ(expect_columns(after["steps"], kStepKeys, "steps"), static_cast<size_t>(kWindow));
  EXPECT_EQ(expect_columns(after["requests"], kRequestKeys, "requests"), static_cast<size_t>(kWindow));
  const Json& t = after["totals"];
  EXPECT_EQ(t["requests"], kRequests);
  EXPECT_GE(t["steps"].get<int>(), kTokens);  // one step per token at least
  EXPECT_EQ(t["completion_tokens"], kRequests * kTokens);
  EXPECT_GT(t["prompt_tokens"].get<int>(), 0);
  EXPECT_EQ(t["finish_reasons"]["length"], kRequests);
  EXPECT_EQ(t["finish_reasons"]["stop"], 0);
  const Json& req = after["requests"];
  for (size_t i = 0; i < req["t_ms"].size(); ++i) {
    EXPECT_EQ(req["completion_tokens"][i], kTokens);
    EXPECT_EQ(req["finish_reason"][i], "length");
    EXPECT_GT(req["ttft_s"][i].get<double>(), 0);
    EXPECT_GT(req["itl_s"][i].get<double>(), 0);
    EXPECT_GE(req["e2e_s"][i].get<double>(), req["ttft_s"][i].get<double>());
    if (i > 0) {
      EXPECT_GE(req["t_ms"][i].get<int64_t>(), req["t_ms"][i - 1].get<int64_t>());
    }
  }
  EXPECT_EQ(req["priority"].back(), kRequests - 1);  // the newest last
  const Json& steps = after["steps"];
  for (size_t i = 0; i < steps["t_ms"].size(); ++i) {
    EXPECT_GT(steps["batch_tokens"][i].get<int>(), 0);
    EXPECT_LE(steps["batch_tokens"][i].get<int>(), steps["token_budget"][i].get<int>());
    EXPECT_GT(steps["kv_blocks_total"][i].get<int>(), 0);
  }
  const Json& sum = after["summary"];
  for (const char* k : {"ttft_s", "itl_s", "e2e_s"}) {
    expect_keys(sum[k], {"p50", "p90", "p99", "count"}, k);
    EXPECT_GT(sum[k]["p50"].get<double>(), 0) << k;
    EXPECT_LE(sum[k]["p50"].get<double>(), sum[k]["p99"].get<double>()) << k;
    EXPECT_EQ(sum[k]["count"], kWindow) << k;
  }
  EXPECT_EQ(sum["finish_reasons"]["length"], kWindow);
  EXPECT_GE(sum["generation_tokens_per_s"].get<double>(), 0);
  // The engine's snapshot is published after the step that answered the last request.
  EXPECT_TRUE(poll_until([&] { return stats(server->port())["versions"][0]["completed"] == kRequests; }));
}

// The versions' feedback beside their other figures: count, mean rating and the share
// of negative ratings (thumbs: -1).
TEST(ServerStatsTest, VersionsCarryTheirFeedback) {
  auto server = start_server(synthetic_path());
  const int port = server->port();
  for (int rating : {-1, 1, 1, 0}) {
    const HttpResult r = http_post(port, "/v1/completions", Json{{"prompt", "rate me"}, {"max_tokens", 2},
                                                                  {"temperature", 1.0}});
    ASSERT_EQ(r.status, 200) << r.body;
    ASSERT_EQ(http_post(port, "/v1/feedback", Json{{"id", r.json()["id"]}, {"rating", rating}}).status, 200);
  }
  const Json v = stats(port)["versions"][0];
  EXPECT_EQ(v["ratings"], 4);
  EXPECT_DOUBLE_EQ(v["rating_mean"].get<double>(), 0.25);     // (-1 + 1 + 1 + 0) / 4
  EXPECT_DOUBLE_EQ(v["negative_share"].get<double>(), 0.25);  // one -1 in four
}

TEST(ServerStatsTest, ZeroWindowKeepsTotalsOnly) {
  auto server = start_server(synthetic_path(), [](ServeConfig& c) { c.engine.stats_window = 0; });
  ASSERT_EQ(http_post(server->port(), "/v1/completions", Json{{"prompt", "hi"}, {"max_tokens", 2}}).status, 200);
  const Json s = stats(server->port());
  EXPECT_EQ(s["window"], 0);
  EXPECT_EQ(s["steps"]["t_ms"].size(), 0u);
  EXPECT_EQ(s["requests"]["t_ms"].size(), 0u);
  EXPECT_EQ(s["totals"]["requests"], 1);
}

TEST(ServerUiTest, PageHasACspNoInlineScriptAndItsBundleIsServed) {
  auto server = start_server(synthetic_path());
  const HttpResult page = http_get(server->port(), "/");
  ASSERT_EQ(page.status, 200) << page.body;
  EXPECT_NE(page.header("Content-Type").find("text/html"), std::string::npos);
  const std::string csp = page.header("Content-Security-Policy");
  EXPECT_NE(csp.find("default-src 'self'"), std::string::npos) << csp;
  EXPECT_NE(csp.find("script-src 'self'"), std::string::npos) << csp;
  EXPECT_EQ(csp.find("unsafe-inline"), std::string::npos) << csp;
  EXPECT_EQ(csp.find("unsafe-eval"), std::string::npos) << csp;
  EXPECT_EQ(page.header("X-Content-Type-Options"), "nosniff");
  EXPECT_EQ(page.header("Cache-Control"), "no-cache");
  // Every script is a file of this server: none has a body the CSP would refuse.
  const std::regex script(R"(<script([^>]*)>([\s\S]*?)</script>)");
  std::smatch m;
  std::string rest = page.body;
  std::string bundle;
  int scripts = 0;
  while (std::regex_search(rest, m, script)) {
    ++scripts;
    EXPECT_TRUE(m[2].str().empty()) << "inline script: " << m[0];
    std::smatch src;
    const std::string attrs = m[1].str();
    ASSERT_TRUE(std::regex_search(attrs, src, std::regex(R"re(src="(/ui/[^"]+)")re"))) << m[0];
    bundle = src[1];
    rest = m.suffix();
  }
  ASSERT_GE(scripts, 1);
  EXPECT_EQ(page.body.find("style=\""), std::string::npos);
  const HttpResult js = http_get(server->port(), bundle);
  ASSERT_EQ(js.status, 200) << bundle;
  EXPECT_NE(js.header("Content-Type").find("text/javascript"), std::string::npos);
  EXPECT_NE(js.header("Cache-Control").find("immutable"), std::string::npos);
  EXPECT_FALSE(js.header("Content-Security-Policy").empty());
  EXPECT_GT(js.body.size(), 1000u);
  EXPECT_EQ(http_get(server->port(), "/ui/index.html").body, page.body);
  EXPECT_EQ(http_get(server->port(), "/ui/no-such-file.js").status, 404);
  // "/" is an exact route: other unknown paths stay 404 whatever the method.
  EXPECT_EQ(http_post(server->port(), "/no-such-path", std::string("{}")).status, 404);
}

TEST(ServerUiTest, NoUiAnswers404ButKeepsTheStats) {
  auto server = start_server(synthetic_path(), [](ServeConfig& c) { c.server.ui = false; });
  EXPECT_EQ(http_get(server->port(), "/").status, 404);
  EXPECT_EQ(http_get(server->port(), "/ui/index.html").status, 404);
  EXPECT_EQ(http_get(server->port(), "/v1/stats").status, 200);
}

TEST(ServerUiTest, NoUiFlagAndStatsWindowKeyReachTheConfig) {
  const std::string serve = std::string(LLMSERVE_BIN) + " serve -m " + synthetic_path();
  const CmdResult r = run_command(serve + " --no-ui --stats-window 16 --print-config 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("ui = false"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("stats_window = 16"), std::string::npos) << r.out;
  const CmdResult bad = run_command(serve + " --stats-window -1 --print-config 2>&1");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.out.find("stats_window"), std::string::npos) << bad.out;
}

TEST(ServerUiTest, WithAnApiKeyThePageIsOpenAndTheStatsAreNot) {
  const std::string key = "sk-test-dashboard-key";
  auto server = start_server(synthetic_path(), [&](ServeConfig& c) { c.server.api_key = key; });
  EXPECT_EQ(http_get(server->port(), "/").status, 200);
  EXPECT_EQ(http_get(server->port(), "/ui/favicon.svg").status, 200);
  EXPECT_EQ(http_get(server->port(), "/v1/stats").status, 401);
  EXPECT_EQ(http_get(server->port(), "/v1/stats", {{"Authorization", "Bearer " + key}}).status, 200);
}

}  // namespace
}  // namespace llms::test
