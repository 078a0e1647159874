// The HTTP server end to end over loopback with a real HTTP client: every endpoint and
// parameter, whole and streamed, on stories260K (real weights) and on a synthetic
// model. Every response is checked against the strict OpenAI schema.
#include <gtest/gtest.h>

#include <set>

#include "server_openai_schema.h"
#include "server_test_util.h"

namespace llms::test {
namespace {

std::string join(const Violations& v) {
  std::string s;
  for (const auto& x : v) s += x + "\n";
  return s;
}
#define EXPECT_SCHEMA(check, j) EXPECT_TRUE(check(j).empty()) << join(check(j)) << (j).dump()

const char* kAnchor = "Once upon a time, there was a little girl named Lily.";

class StoriesServer : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (have_stories()) server_ = start_server(stories_path()).release();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    if (!have_stories()) GTEST_SKIP() << "needs " << shared_dir() << "/models/stories260K.gguf";
  }
  int port() const { return server_->port(); }
  Json completion(const Json& body) {
    const HttpResult r = http_post(port(), "/v1/completions", body);
    EXPECT_EQ(r.status, 200) << r.body;
    const Json j = r.json();
    EXPECT_SCHEMA(check_completion, j);
    return j;
  }
  Json chat(const Json& body) {
    const HttpResult r = http_post(port(), "/v1/chat/completions", body);
    EXPECT_EQ(r.status, 200) << r.body;
    const Json j = r.json();
    EXPECT_SCHEMA(check_chat_completion, j);
    return j;
  }
  // Streams and checks every chunk; the concatenated text of choice `index`.
  std::string stream_text(const std::string& path, Json body, SseResult* out = nullptr, int index = 0) {
    body["stream"] = true;
    SseResult s = http_stream(port(), path, body);
    EXPECT_EQ(s.status, 200);
    EXPECT_NE(s.content_type.find("text/event-stream"), std::string::npos);
    EXPECT_TRUE(s.done()) << s.raw;
    std::string text;
    const bool chat = path.find("chat") != std::string::npos;
    for (const Json& c : s.chunks()) {
      if (chat) {
        EXPECT_SCHEMA(check_chat_chunk, c);
      } else {
        EXPECT_SCHEMA(check_completion_chunk, c);
      }
      for (const Json& ch : c["choices"]) {
        if (ch["index"] != index) continue;
        if (chat && ch["delta"].contains("content")) text += ch["delta"]["content"].get<std::string>();
        if (!chat) text += ch["text"].get<std::string>();
      }
    }
    if (out) *out = std::move(s);
    return text;
  }
  static LlmServer* server_;
};
LlmServer* StoriesServer::server_ = nullptr;

TEST_F(StoriesServer, GreedyEchoedCompletionIsTheKnownStory) {
  const Json j = completion({{"model", "stories260K"}, {"prompt", "Once upon a time"}, {"max_tokens", 40},
                             {"temperature", 0}, {"echo", true}});
  const std::string text = j["choices"][0]["text"];
  EXPECT_EQ(text.substr(0, std::string(kAnchor).size()), kAnchor) << text;
  EXPECT_EQ(j["model"], "stories260K");
  EXPECT_EQ(j["usage"]["prompt_tokens"], 5);
  EXPECT_LE(j["usage"]["completion_tokens"].get<int>(), 40);
  EXPECT_EQ(j["id"].get<std::string>().rfind("cmpl-", 0), 0u);
}

TEST_F(StoriesServer, ChatStreamMatchesWholeChatAndEndsWithUsage) {
  const Json body = {{"messages", {{{"role", "user"}, {"content", "Once upon a time"}}}}, {"max_tokens", 24},
                     {"temperature", 0}, {"stream_options", {{"include_usage", true}}}};
  Json whole_body = body;
  whole_body.erase("stream_options");
  const Json whole = chat(whole_body);
  const std::string text = whole["choices"][0]["message"]["content"];
  EXPECT_EQ("Once upon a time" + text.substr(0, std::string(kAnchor).size() - 16), kAnchor);
  SseResult s;
  EXPECT_EQ(stream_text("/v1/chat/completions", body, &s), text);
  const auto chunks = s.chunks();
  ASSERT_GE(chunks.size(), 3u);
  EXPECT_EQ(chunks.front()["choices"][0]["delta"]["role"], "assistant");
  for (size_t i = 0; i + 1 < chunks.size(); ++i) EXPECT_TRUE(chunks[i]["usage"].is_null());
  const Json& last = chunks.back();
  EXPECT_TRUE(last["choices"].empty());
  EXPECT_EQ(last["usage"]["completion_tokens"], whole["usage"]["completion_tokens"]);
  EXPECT_EQ(chunks[chunks.size() - 2]["choices"][0]["finish_reason"], whole["choices"][0]["finish_reason"]);
  std::set<std::string> ids;
  for (const auto& c : chunks) ids.insert(c["id"].get<std::string>());
  EXPECT_EQ(ids.size(), 1u);
}

TEST_F(StoriesServer, CompletionStreamWithEchoStartsWithThePrompt) {
  SseResult s;
  const std::string text = stream_text(
      "/v1/completions", {{"prompt", "Once upon a time"}, {"max_tokens", 20}, {"temperature", 0}, {"echo", true}}, &s);
  EXPECT_EQ(text.substr(0, std::string(kAnchor).size()), kAnchor);
  EXPECT_EQ(s.chunks().front()["choices"][0]["text"], "Once upon a time");
  EXPECT_FALSE(s.chunks().front().contains("usage"));
}

TEST_F(StoriesServer, StopStringsSpanTokensAndAreExcluded) {
  const Json base = {{"prompt", "Once upon a time"}, {"max_tokens", 30}, {"temperature", 0}};
  Json body = base;
  body["stop"] = "little girl";
  const Json j = completion(body);
  EXPECT_EQ(j["choices"][0]["text"], ", there was a ");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  body["stop"] = Json::array({"zzz", "named"});
  EXPECT_EQ(completion(body)["choices"][0]["text"], ", there was a little girl ");
  body["stop"] = "little girl";
  EXPECT_EQ(stream_text("/v1/completions", body), ", there was a ");
}

TEST_F(StoriesServer, MaxTokensEndWithLength) {
  Json j = completion({{"prompt", "Once upon a time"}, {"max_tokens", 3}, {"temperature", 0.7}});
  EXPECT_EQ(j["usage"]["completion_tokens"], 3);
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  j = chat({{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"max_completion_tokens", 2}, {"temperature", 0.7}});
  EXPECT_EQ(j["usage"]["completion_tokens"], 2);
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
}

TEST_F(StoriesServer, SeedsReproduceAndNGivesDistinctChoices) {
  const Json body = {{"prompt", "Once upon a time"}, {"max_tokens", 24}, {"temperature", 1.0}, {"seed", 7}};
  const std::string a = completion(body)["choices"][0]["text"];
  const std::string b = completion(body)["choices"][0]["text"];
  EXPECT_EQ(a, b);
  Json other = body;
  other["seed"] = 8;
  EXPECT_NE(completion(other)["choices"][0]["text"], a);
  Json n = body;
  n["n"] = 3;
  const Json j = completion(n);
  ASSERT_EQ(j["choices"].size(), 3u);
  std::set<std::string> texts;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(j["choices"][i]["index"], i);
    texts.insert(j["choices"][i]["text"].get<std::string>());
  }
  EXPECT_GE(texts.size(), 2u);
  EXPECT_EQ(j["choices"][0]["text"], a);  // choice 0 uses the seed itself
  EXPECT_EQ(j["usage"]["prompt_tokens"], 5);  // the prompt counts once
}

TEST_F(StoriesServer, DeterministicRequestsReplayFromTheResultCache) {
  const Json body = {{"prompt", "The dog ran to the"}, {"max_tokens", 12}, {"temperature", 0}};
  const Json first = completion(body);
  // The engine counts a step after it delivers the step's tokens: wait for the gauge
  // it publishes after counting.
  ASSERT_TRUE(poll_until([&] { return metric(port(), "llmserve_requests_running") == 0; }));
  const double hits = metric(port(), "llmserve_result_cache_hits_total");
  const double steps = metric(port(), "llmserve_engine_steps_total");
  const Json second = completion(body);
  EXPECT_EQ(second["choices"][0]["text"], first["choices"][0]["text"]);
  EXPECT_EQ(stream_text("/v1/completions", body), first["choices"][0]["text"]);
  EXPECT_EQ(metric(port(), "llmserve_result_cache_hits_total"), hits + 2);
  EXPECT_EQ(metric(port(), "llmserve_engine_steps_total"), steps);
  EXPECT_NE(second["id"], first["id"]);
}

TEST_F(StoriesServer, BatchAndTokenPrompts) {
  Json j = completion({{"prompt", {"Once upon a time", "The cat"}}, {"max_tokens", 4}, {"temperature", 0}});
  ASSERT_EQ(j["choices"].size(), 2u);
  EXPECT_EQ(j["choices"][1]["index"], 1);
  const Json tok = http_post(port(), "/tokenize", Json{{"prompt", "Once upon a time"}}).json();
  const Json ids = tok["tokens"];
  const Json single = completion({{"prompt", ids}, {"max_tokens", 4}, {"temperature", 0}});
  EXPECT_EQ(single["choices"][0]["text"], j["choices"][0]["text"]);
  const Json lists = completion({{"prompt", {ids, ids}}, {"max_tokens", 4}, {"temperature", 0}, {"echo", true}});
  EXPECT_EQ(lists["choices"].size(), 2u);
  EXPECT_EQ(lists["usage"]["prompt_tokens"], 2 * ids.size());
  EXPECT_EQ(lists["choices"][0]["text"].get<std::string>().rfind("Once upon a time", 0), 0u);
}

TEST_F(StoriesServer, CompletionLogprobsHaveTheLegacyShape) {
  const Json j = completion({{"prompt", "Once upon a time"}, {"max_tokens", 6}, {"temperature", 0}, {"logprobs", 3}});
  const Json& lp = j["choices"][0]["logprobs"];
  ASSERT_TRUE(lp.is_object());
  EXPECT_EQ(lp["tokens"].size(), 6u);
  std::string joined;
  for (size_t i = 0; i < lp["tokens"].size(); ++i) {
    EXPECT_LE(lp["token_logprobs"][i].get<double>(), 0.0);
    EXPECT_GE(lp["top_logprobs"][i].size(), 1u);
    EXPECT_LE(lp["top_logprobs"][i].size(), 3u);
    EXPECT_EQ(lp["text_offset"][i].get<size_t>(), joined.size());
    joined += lp["tokens"][i].get<std::string>();
  }
  EXPECT_EQ(joined, j["choices"][0]["text"]);  // greedy: the top token is the chosen one
}

TEST_F(StoriesServer, ChatLogprobsStreamOneEntryPerToken) {
  SseResult s;
  stream_text("/v1/chat/completions",
              {{"messages", {{{"role", "user"}, {"content", "Once upon a time"}}}}, {"max_tokens", 5},
               {"temperature", 0}, {"logprobs", true}, {"top_logprobs", 2}},
              &s);
  int entries = 0;
  for (const Json& c : s.chunks()) {
    const Json& lp = c["choices"][0]["logprobs"];
    if (lp.is_null()) continue;
    for (const Json& e : lp["content"]) {
      ++entries;
      EXPECT_EQ(e["top_logprobs"].size(), 2u);
      EXPECT_EQ(e["top_logprobs"][0]["token"], e["token"]);  // greedy
    }
  }
  EXPECT_EQ(entries, 5);
  const Json whole = chat({{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"max_tokens", 3}, {"logprobs", true}});
  EXPECT_EQ(whole["choices"][0]["logprobs"]["content"].size(), 3u);
}

TEST_F(StoriesServer, ExtensionsAndSamplingParametersAreHonoured) {
  Json j = completion({{"prompt", "Once upon a time"}, {"max_tokens", 40}, {"ignore_eos", true}, {"top_k", 5},
                       {"top_p", 0.9}, {"min_p", 0.05}, {"presence_penalty", 0.5}, {"frequency_penalty", 0.5},
                       {"user", "u-1"}, {"priority", 3}, {"lane", "batch"}, {"timeout", 60}});
  EXPECT_EQ(j["usage"]["completion_tokens"], 40);
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  j = completion({{"prompt", "Once upon a time"}, {"max_tokens", 400}, {"ignore_eos", true}, {"timeout", 1e-6}});
  EXPECT_EQ(j["choices"][0]["finish_reason"], "timeout");
  EXPECT_LT(j["usage"]["completion_tokens"].get<int>(), 400);
}

TEST_F(StoriesServer, RepeatedPromptReportsCachedTokens) {
  std::string prompt;
  for (int i = 0; i < 12; ++i) prompt += "Once upon a time there was a dog. ";
  const Json body = {{"prompt", prompt}, {"max_tokens", 2}, {"temperature", 1.0}};
  completion(body);
  const Json j = completion(body);
  EXPECT_GT(j["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), 16);
  EXPECT_LT(j["usage"]["prompt_tokens_details"]["cached_tokens"], j["usage"]["prompt_tokens"]);
}

TEST_F(StoriesServer, ModelsTokenizeHealthReadyMetrics) {
  HttpResult r = http_get(port(), "/v1/models");
  EXPECT_EQ(r.status, 200);
  EXPECT_SCHEMA(check_model_list, r.json());
  EXPECT_EQ(r.json()["data"][0]["id"], "stories260K");
  r = http_get(port(), "/v1/models/stories260K");
  EXPECT_SCHEMA(check_model, r.json());
  EXPECT_EQ(http_get(port(), "/v1/models/other").status, 404);

  const Json tok = http_post(port(), "/tokenize", Json{{"prompt", "Once upon a time"}, {"return_token_strs", true}}).json();
  EXPECT_EQ(tok["count"], 5);
  EXPECT_EQ(tok["tokens"][0], 1);  // BOS
  EXPECT_EQ(tok["token_strs"].size(), 5u);
  EXPECT_GT(tok["max_model_len"].get<int>(), 5);
  EXPECT_EQ(r.json()["max_model_len"], tok["max_model_len"]);  // the card of /v1/models/stories260K
  const Json no_bos = http_post(port(), "/tokenize", Json{{"prompt", "Once upon a time"}, {"add_special_tokens", false}}).json();
  EXPECT_EQ(no_bos["count"], 4);
  const Json chat_tok = http_post(port(), "/tokenize", Json{{"messages", {{{"role", "user"}, {"content", "Hi"}}}}}).json();
  EXPECT_GT(chat_tok["count"].get<int>(), 0);
  const Json detok = http_post(port(), "/detokenize", Json{{"tokens", tok["tokens"]}}).json();
  EXPECT_EQ(detok["prompt"], "Once upon a time");
  // Control tokens written in a prompt are recognised, as llama-server and vLLM do
  // (stories260K: <s> is 1, </s> is 2); split_special_tokens keeps them plain text.
  const Json special = http_post(port(), "/tokenize", Json{{"prompt", "<s>Once</s>"}}).json();
  ASSERT_EQ(special["count"], 4);
  EXPECT_EQ(special["tokens"][1], 1);
  EXPECT_EQ(special["tokens"][3], 2);
  const Json split = http_post(port(), "/tokenize", Json{{"prompt", "<s>Once</s>"}, {"split_special_tokens", true}}).json();
  EXPECT_GT(split["count"].get<int>(), 4);
  for (size_t i = 1; i < split["tokens"].size(); ++i) EXPECT_GT(split["tokens"][i].get<int>(), 2) << i;
  // Completions tokenize their prompt the same way: </s> typed into it counts as one token.
  r = http_post(port(), "/v1/completions", Json{{"prompt", "<s>Once</s>"}, {"max_tokens", 1}, {"temperature", 0}});
  EXPECT_EQ(r.json()["usage"]["prompt_tokens"], 4) << r.body;
  r = http_post(port(), "/v1/completions",
                Json{{"prompt", "<s>Once</s>"}, {"max_tokens", 1}, {"temperature", 0}, {"split_special_tokens", true}});
  EXPECT_EQ(r.json()["usage"]["prompt_tokens"], split["count"]) << r.body;
  r = http_post(port(), "/v1/chat/completions",
                Json{{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"split_special_tokens", true}});
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("split_special_tokens"), std::string::npos) << r.body;

  EXPECT_EQ(http_get(port(), "/health").status, 200);
  r = http_get(port(), "/ready");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.json()["status"], "ready");
  r = http_get(port(), "/metrics");
  EXPECT_EQ(r.status, 200);
  EXPECT_NE(r.header("Content-Type").find("text/plain"), std::string::npos);
  for (const char* name : {"llmserve_requests_running", "llmserve_requests_waiting", "llmserve_time_to_first_token_seconds_bucket",
                           "llmserve_inter_token_latency_seconds_bucket", "llmserve_kv_blocks{state=\"used\"}",
                           "llmserve_http_requests_total{endpoint=\"/v1/models\",method=\"GET\",status=\"200\"}",
                           "llmserve_http_open_connections", "llmserve_result_cache_hits_total"}) {
    EXPECT_NE(without_version_labels(r.body).find(name), std::string::npos) << name;
  }
  // Engine metrics carry the version that produced them; the server's own do not.
  EXPECT_NE(r.body.find("llmserve_kv_blocks{version=\"stories260K\",state=\"used\"}"), std::string::npos);
  // HTTP answers carry the version that answered, "-" where none did.
  EXPECT_NE(r.body.find("llmserve_http_requests_total{endpoint=\"/v1/models\",method=\"GET\",status=\"200\",version=\"-\"}"),
            std::string::npos);
  ASSERT_EQ(http_post(port(), "/v1/completions", Json{{"prompt", "Once"}, {"max_tokens", 2}}).status, 200);
  r = http_get(port(), "/metrics");
  EXPECT_NE(r.body.find("llmserve_http_requests_total{endpoint=\"/v1/completions\",method=\"POST\",status=\"200\","
                        "version=\"stories260K\"}"),
            std::string::npos);
  EXPECT_NE(r.body.find("llmserve_http_request_duration_seconds_count{endpoint=\"/v1/completions\",version=\"stories260K\"}"),
            std::string::npos);
  EXPECT_NE(r.body.find("llmserve_http_open_connections "), std::string::npos);
}

class SyntheticServer : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = start_server(synthetic_path()).release(); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  static LlmServer* server_;
};
LlmServer* SyntheticServer::server_ = nullptr;

TEST_F(SyntheticServer, CompletionAndChatWholeAndStreamed) {
  const int port = server_->port();
  HttpResult r = http_post(port, "/v1/completions", Json{{"prompt", "hello world"}, {"max_tokens", 8}, {"ignore_eos", true}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_SCHEMA(check_completion, r.json());
  EXPECT_EQ(r.json()["usage"]["completion_tokens"], 8);
  const std::string name = r.json()["model"];
  EXPECT_EQ(name.find('/'), std::string::npos);
  r = http_post(port, "/v1/chat/completions",
                Json{{"messages", {{{"role", "system"}, {"content", "be brief"}}, {{"role", "user"}, {"content", "hi"}}}},
                     {"max_tokens", 6}, {"ignore_eos", true}, {"model", name}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_SCHEMA(check_chat_completion, r.json());
  const SseResult s = http_stream(port, "/v1/chat/completions",
                                  Json{{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_tokens", 6},
                                       {"ignore_eos", true}, {"stream", true}, {"n", 2}});
  ASSERT_TRUE(s.done()) << s.raw;
  std::set<int> finished;
  for (const Json& c : s.chunks()) {
    EXPECT_SCHEMA(check_chat_chunk, c);
    for (const Json& ch : c["choices"]) {
      if (!ch["finish_reason"].is_null()) finished.insert(ch["index"].get<int>());
    }
  }
  EXPECT_EQ(finished, (std::set<int>{0, 1}));
}

}  // namespace
}  // namespace llms::test
