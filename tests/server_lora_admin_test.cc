// LoRA adapters loaded and unloaded at run time (vLLM's /v1/load_lora_adapter and
// /v1/unload_lora_adapter): the admin token's rules, the bad bodies, and an unload
// while a request of the adapter runs (it completes; later ones get the unknown-model
// 404).
#include <gtest/gtest.h>

#include <filesystem>

#include "deploy_test_util.h"
#include "io/gguf_file.h"
#include "io/lora_file.h"
#include "server_test_util.h"
#include "tools/synthetic_lora.h"

namespace llms::test {
namespace {

// An adapter for the slow synthetic model (whose long generations take seconds).
std::string write_adapter(const std::string& name) {
  const std::string path = temp_path(name);
  GgufFile base = GgufFile::open(slow_synthetic_path()).value();
  SyntheticLoraSpec spec;
  spec.rank = 4, spec.std_dev = 0.1f;
  EXPECT_TRUE(write_lora_gguf(make_synthetic_lora(base, spec).value(), DType::kF32, path).ok());
  return path;
}

std::unique_ptr<LlmServer> serve(bool admin, const std::string& api_key = "", int max_running = 0) {
  const std::string token = write_text(temp_path("lora_token"), std::string(kToken) + "\n");
  return start_server(slow_synthetic_path(), [&](ServeConfig& c) {
    c.server.model_name = "base";
    if (max_running > 0) c.engine.batching.max_running = max_running;
    if (admin) c.server.admin_token_file = token;
    c.server.api_key = api_key;
  });
}

HttpResult load(int port, const Json& body, const Headers& auth = kAuth) {
  return http_post(port, "/v1/load_lora_adapter", body, auth);
}
HttpResult unload(int port, const Json& body, const Headers& auth = kAuth) {
  return http_post(port, "/v1/unload_lora_adapter", body, auth);
}
Json ask(const std::string& model, int max_tokens) {
  return Json{{"model", model}, {"prompt", "Once"}, {"max_tokens", max_tokens}, {"temperature", 0}, {"ignore_eos", true}};
}

TEST(ServerLoraAdminTest, LoadAndUnloadNeedTheAdminToken) {
  const std::string path = write_adapter("lora_auth.gguf");
  {
    auto off = serve(false);
    EXPECT_EQ(load(off->port(), {{"lora_name", "a"}, {"lora_path", path}}).status, 404);  // the admin API is off
  }
  // API keys guard the rest of /v1, but an API key never opens these, and the admin
  // token needs no API key.
  auto server = serve(true, "an-api-key-of-twenty-chars");
  const int port = server->port();
  const Json body = {{"lora_name", "a"}, {"lora_path", path}};
  EXPECT_EQ(load(port, body, {}).status, 401);
  EXPECT_EQ(load(port, body, {{"Authorization", "Bearer an-api-key-of-twenty-chars"}}).status, 401);
  EXPECT_EQ(unload(port, {{"lora_name", "a"}}, {}).status, 401);
  const HttpResult ok = load(port, body);
  EXPECT_EQ(ok.status, 200) << ok.body;
  EXPECT_NE(ok.body.find("Success"), std::string::npos) << ok.body;
}

TEST(ServerLoraAdminTest, BadBodiesAreClearErrors) {
  const std::string path = write_adapter("lora_bad.gguf");
  auto server = serve(true);
  const int port = server->port();
  auto message = [](const HttpResult& r) { return r.json()["error"]["message"].get<std::string>(); };
  HttpResult r = load(port, {{"lora_path", path}});
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(message(r).find("lora_name"), std::string::npos) << r.body;
  r = load(port, {{"lora_name", "a"}});
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(message(r).find("lora_path"), std::string::npos) << r.body;
  r = load(port, {{"lora_name", "base"}, {"lora_path", path}});
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(message(r).find("the base model's name"), std::string::npos) << r.body;
  r = load(port, {{"lora_name", "a"}, {"lora_path", temp_path("no_such_adapter.gguf")}});
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(message(r).find("adapter 'a'"), std::string::npos) << r.body;
  EXPECT_EQ(http_post(port, "/v1/completions", ask("a", 2)).status, 404);  // a failed load serves nothing
  ASSERT_EQ(load(port, {{"lora_name", "a"}, {"lora_path", path}}).status, 200);
  r = load(port, {{"lora_name", "a"}, {"lora_path", path}});
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(message(r).find("already been loaded"), std::string::npos) << r.body;
  r = unload(port, {{"lora_name", "b"}});
  EXPECT_EQ(r.status, 404);
  EXPECT_NE(message(r).find("cannot be found"), std::string::npos) << r.body;
}

// One request runs at a time, so that a second one waits: vLLM's lora_requests_info
// names the adapter of each, and the per-adapter counters count what each ran.
TEST(ServerLoraAdminTest, UnloadWhileARequestRunsLetsItFinish) {
  const std::string path = write_adapter("lora_unload.gguf");
  auto server = serve(true, "", 1);
  const int port = server->port();
  ASSERT_EQ(load(port, {{"lora_name", "tune"}, {"lora_path", path}}).status, 200);
  ASSERT_EQ(load(port, {{"lora_name", "tune2"}, {"lora_path", path}}).status, 200);
  const Json models = http_get(port, "/v1/models").json();
  ASSERT_EQ(models["data"].size(), 3u);
  EXPECT_EQ(models["data"][1]["id"], "tune");
  EXPECT_EQ(models["data"][1]["parent"], "base");

  const int kLong = 6000;
  auto stream = [&](RawClient& c, const std::string& model, int tokens) {
    Json body = ask(model, tokens);
    body["stream"] = true;
    body["stream_options"] = {{"include_usage", true}};
    return c.send_request("POST", "/v1/completions", body.dump());
  };
  RawClient streamer(port), queued(port);
  ASSERT_TRUE(stream(streamer, "tune", kLong));
  ASSERT_NE(streamer.read_until("\"text\"", 30).find("data: {"), std::string::npos);
  ASSERT_TRUE(stream(queued, "tune2", 3));
  ASSERT_TRUE(poll_until([&] {
    return http_get(port, "/metrics").body.find(
               "vllm:lora_requests_info{max_lora=\"2\",running_lora_adapters=\"tune\",waiting_lora_adapters=\"tune2\"}") !=
           std::string::npos;
  })) << http_get(port, "/metrics").body;

  const HttpResult gone = unload(port, {{"lora_name", "tune"}});
  EXPECT_EQ(gone.status, 200) << gone.body;
  // Still running when the adapter went (its 6000 tokens take seconds).
  EXPECT_EQ(metric(port, "llmserve_requests_running"), 1);
  const HttpResult later = http_post(port, "/v1/completions", ask("tune", 2));
  EXPECT_EQ(later.status, 404);
  EXPECT_EQ(later.json()["error"]["code"], "model_not_found") << later.body;
  EXPECT_EQ(http_get(port, "/v1/models").json()["data"].size(), 2u);

  const std::string text = streamer.read_until("data: [DONE]", 120);
  ASSERT_NE(text.find("data: [DONE]"), std::string::npos) << text.substr(0, 400);
  EXPECT_NE(text.find("\"finish_reason\":\"length\""), std::string::npos);
  const size_t at = text.rfind("\"completion_tokens\":");
  ASSERT_NE(at, std::string::npos);
  EXPECT_EQ(std::stoi(text.substr(at + 20)), kLong);
  ASSERT_NE(queued.read_until("data: [DONE]", 120).find("data: [DONE]"), std::string::npos);
  // The base serves on.
  EXPECT_EQ(http_post(port, "/v1/completions", ask("base", 2)).status, 200);
  EXPECT_EQ(metric(port, "llmserve_lora_requests_total{adapter=\"tune\"}"), 1);
  EXPECT_EQ(metric(port, "llmserve_lora_generation_tokens_total{adapter=\"tune\"}"), kLong);
  EXPECT_EQ(metric(port, "llmserve_lora_generation_tokens_total{adapter=\"tune2\"}"), 3);
  EXPECT_TRUE(poll_until([&] {
    return http_get(port, "/metrics").body.find("running_lora_adapters=\"\",waiting_lora_adapters=\"\"") !=
           std::string::npos;
  }));
}

}  // namespace
}  // namespace llms::test
