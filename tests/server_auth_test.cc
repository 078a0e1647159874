// API keys end to end: without a key or with a wrong one every protected path is 401
// in the OpenAI error shape; either configured key (flag or file) opens them; the
// probes stay open, /metrics too unless protect_metrics. The key never shows in
// --print-config or in the server's output.
#include <unistd.h>

#include <gtest/gtest.h>

#include <fstream>

#include "command_util.h"
#include "server_openai_schema.h"
#include "server_test_util.h"

namespace llms::test {
namespace {

const char* const kKey = "sk-test-3f9a1c0d77e2";
const char* const kFileKey = "sk-file-77b2e0c4a9d1";

std::string key_file() {
  const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_api_keys.txt";
  std::ofstream(path) << "# keys of the test\n\n  " << kFileKey << "  \r\nsk-other-1-5e8c2b7a\n";
  return path;
}

Headers bearer(const std::string& key) { return {{"Authorization", "Bearer " + key}}; }

void expect_401(const HttpResult& r, const char* code, const std::string& what) {
  EXPECT_EQ(r.status, 401) << what << ": " << r.body;
  const Json j = r.json();
  EXPECT_TRUE(check_error(j).empty()) << what << ": " << r.body;
  EXPECT_EQ(j["error"]["type"], "invalid_request_error") << what;
  EXPECT_EQ(j["error"]["code"], code ? Json(code) : Json(nullptr)) << what << ": " << r.body;
  EXPECT_EQ(r.header("WWW-Authenticate"), "Bearer") << what;
  EXPECT_EQ(r.body.find(kKey), std::string::npos) << what;
}

TEST(ServerAuth, KeysGuardEveryPathButTheProbes) {
  ::testing::internal::CaptureStderr();  // the server's log: it must never hold a key
  auto server = start_server(synthetic_path(), [](ServeConfig& c) {
    c.server.api_key = kKey;
    c.server.api_key_file = key_file();
  });
  const int port = server->port();
  const Json completion = {{"prompt", "x"}, {"max_tokens", 2}};
  expect_401(http_get(port, "/v1/models"), nullptr, "no key");
  expect_401(http_post(port, "/v1/completions", completion), nullptr, "no key");
  expect_401(http_post(port, "/v1/completions", completion, {{"Authorization", kKey}}), nullptr, "no Bearer scheme");
  expect_401(http_post(port, "/v1/completions", completion, bearer(std::string(kKey).substr(0, 19))), "invalid_api_key", "prefix");
  expect_401(http_post(port, "/v1/completions", completion, bearer(std::string(kKey) + "0")), "invalid_api_key", "longer");
  expect_401(http_post(port, "/v1/chat/completions", Json::object(), bearer("wrong")), "invalid_api_key", "wrong key");
  expect_401(http_post(port, "/tokenize", Json{{"prompt", "x"}}), nullptr, "tokenize");
  expect_401(http_get(port, "/nowhere"), nullptr, "unknown path");

  EXPECT_EQ(http_post(port, "/v1/completions", completion, bearer(kKey)).status, 200);
  EXPECT_EQ(http_post(port, "/v1/completions", completion, bearer(kFileKey)).status, 200);
  EXPECT_EQ(http_get(port, "/v1/models", {{"Authorization", std::string("bearer ") + "sk-other-1-5e8c2b7a"}}).status, 200);
  EXPECT_EQ(http_get(port, "/nowhere", bearer(kKey)).status, 404);
  for (const char* open : {"/health", "/ready", "/metrics"}) EXPECT_EQ(http_get(port, open).status, 200) << open;
  EXPECT_EQ(metric(*server, "llmserve_http_requests_total{endpoint=\"/v1/completions\",method=\"POST\",status=\"401\"}"), 4);
  server.reset();
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("API keys: 3 configured"), std::string::npos) << log;
  for (const char* key : {kKey, kFileKey, "sk-other-1-5e8c2b7a"}) EXPECT_EQ(log.find(key), std::string::npos) << log;
}

TEST(ServerAuth, ProtectMetrics) {
  auto server = start_server(synthetic_path(), [](ServeConfig& c) {
    c.server.api_key = kKey;
    c.server.protect_metrics = true;
  });
  const int port = server->port();
  expect_401(http_get(port, "/metrics"), nullptr, "metrics without a key");
  expect_401(http_get(port, "/metrics", bearer("nope")), "invalid_api_key", "metrics with a wrong key");
  const HttpResult m = http_get(port, "/metrics", bearer(kKey));
  EXPECT_EQ(m.status, 200);
  EXPECT_NE(m.body.find("llmserve_http_requests_total"), std::string::npos);
  EXPECT_EQ(http_get(port, "/health").status, 200);
  EXPECT_EQ(http_get(port, "/ready").status, 200);
}

TEST(ServerAuth, BadKeyConfigurationStopsTheStart) {
  ServeConfig c;
  c.server.model_path = synthetic_path();
  c.server.port = 0;
  c.server.api_key_file = "/nonexistent/keys.txt";
  auto r = LlmServer::start(c);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("api_key_file: cannot open '/nonexistent/keys.txt'"), std::string::npos);
  const std::string empty = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_no_keys.txt";
  std::ofstream(empty) << "# nothing here\n\n";
  c.server.api_key_file = empty;
  r = LlmServer::start(c);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("holds no key"), std::string::npos) << r.status().message();
  c.server.api_key_file = "";
  c.server.api_key = "two words-0123456789";
  r = LlmServer::start(c);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("printable ASCII without spaces"), std::string::npos);
  EXPECT_EQ(r.status().message().find("two words"), std::string::npos);
  c.server.api_key = "sk-short";
  r = LlmServer::start(c);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("api_key: a key must have at least 16 characters"), std::string::npos)
      << r.status().message();
  EXPECT_EQ(r.status().message().find("sk-short"), std::string::npos);  // never echoes a key
}

TEST(ServerAuth, TheKeyNeverShowsInPrintConfigOrOutput) {
  const std::string bin = LLMSERVE_BIN;
  CmdResult r = run_command(bin + " serve -m " + synthetic_path() + " --api-key " + kKey + " --print-config 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.find(kKey), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("# api_key is set; redacted"), std::string::npos) << r.out;
  // What --print-config wrote reads back (without the key, which must be given again).
  const std::string printed = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_auth_printed.toml";
  std::ofstream(printed) << r.out;
  const CmdResult again = run_command(bin + " serve --config " + printed + " --print-config 2>&1");
  EXPECT_EQ(again.exit_code, 0) << again.out;
  EXPECT_NE(again.out.find("api_key = \"\""), std::string::npos) << again.out;
}

}  // namespace
}  // namespace llms::test
