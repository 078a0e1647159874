// Prompt log-probabilities (echo with logprobs, and max_tokens 0 with echo: what
// lm-evaluation-harness's local-completions log-likelihood requests send) against
// llama-server's scores of the same tokens on stories260K, made by
// scripts/llama-cpp-prompt-logprobs.sh into tests/data (F32 KV cache on both sides).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "server_test_util.h"

namespace llms::test {
namespace {

constexpr double kTolerance = 1e-3;

Json reference() {
  std::ifstream f(std::string(LLMSERVE_SOURCE_DIR) + "/tests/data/prompt_logprobs_stories260K.json");
  return Json::parse(f);
}

class PromptLogprobs : public ::testing::Test {
 protected:
  // Prefill chunks of 8 tokens: the longer texts are scored across several passes.
  static void SetUpTestSuite() {
    if (!have_stories()) return;
    server_ = start_server(stories_path(), [](ServeConfig& c) {
                c.engine.kv.k_type = DType::kF32;
                c.engine.kv.v_type = DType::kF32;
                c.engine.batching.max_batch_tokens = 8;
                c.engine.threads = 1;
              }).release();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    if (!have_stories()) GTEST_SKIP() << "needs " << shared_dir() << "/models/stories260K.gguf";
  }
  Json completion(const Json& body) {
    const HttpResult r = http_post(server_->port(), "/v1/completions", body);
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json();
  }
  static LlmServer* server_;
};
LlmServer* PromptLogprobs::server_ = nullptr;

// Each prompt token's logprob (the first null) and its top 3, within 1e-3 of
// llama-server's; nothing generated.
TEST_F(PromptLogprobs, ScoresMatchLlamaServer) {
  const Json ref = reference();
  ASSERT_GE(ref["cases"].size(), 3u);
  for (const Json& c : ref["cases"]) {
    const Json j = completion({{"prompt", c["tokens"]}, {"echo", true}, {"logprobs", 3}, {"max_tokens", 0}});
    const Json& choice = j["choices"][0];
    EXPECT_EQ(choice["finish_reason"], "length");
    EXPECT_EQ(j["usage"]["completion_tokens"], 0);
    EXPECT_EQ(j["usage"]["prompt_tokens"], c["tokens"].size());
    const Json& lp = choice["logprobs"];
    ASSERT_EQ(lp["token_logprobs"].size(), c["tokens"].size());
    EXPECT_TRUE(lp["token_logprobs"][0].is_null());
    EXPECT_TRUE(lp["top_logprobs"][0].is_null());
    for (size_t i = 1; i < c["tokens"].size(); ++i) {
      EXPECT_NEAR(lp["token_logprobs"][i].get<double>(), c["logprobs"][i].get<double>(), kTolerance)
          << c["text"] << " token " << i;
      const Json& top = lp["top_logprobs"][i];
      ASSERT_EQ(top.size(), 3u) << i;
      // The reference's top 3 by id; ours by piece: compare the values as sorted lists.
      std::vector<double> ours, theirs;
      for (const auto& [piece, v] : top.items()) ours.push_back(v.get<double>());
      for (const Json& t : c["top3"][i]) theirs.push_back(t[1].get<double>());
      std::sort(ours.rbegin(), ours.rend());
      for (size_t k = 0; k < 3; ++k) EXPECT_NEAR(ours[k], theirs[k], kTolerance) << i << " top " << k;
    }
  }
}

// The echoed text is the prompt's, and a text prompt scores the same as its tokens.
TEST_F(PromptLogprobs, TextPromptEchoesAndScores) {
  const Json ref = reference();
  const Json& c = ref["cases"][0];
  const Json j = completion({{"prompt", c["text"]}, {"echo", true}, {"logprobs", 0}, {"max_tokens", 0}});
  const Json& choice = j["choices"][0];
  EXPECT_EQ(choice["text"], c["text"]);
  const Json& lp = choice["logprobs"];
  ASSERT_EQ(lp["token_logprobs"].size(), c["tokens"].size());
  for (size_t i = 1; i < c["tokens"].size(); ++i) {
    EXPECT_NEAR(lp["token_logprobs"][i].get<double>(), c["logprobs"][i].get<double>(), kTolerance) << i;
    EXPECT_TRUE(lp["top_logprobs"][i].empty());
  }
  // Offsets grow with the pieces (BOS has none).
  for (size_t i = 1; i < lp["text_offset"].size(); ++i) EXPECT_GE(lp["text_offset"][i], lp["text_offset"][i - 1]);
}

// Echo with generation: the prompt's entries, then the generated tokens' (greedy, so
// each generated logprob is its top alternative's); the prompt scored twice over
// the prefix cache gives the same numbers (a prompt-scoring request never reads it).
TEST_F(PromptLogprobs, EchoThenGeneratedTokens) {
  const Json ref = reference();
  const Json& c = ref["cases"][2];
  const Json body = {{"prompt", c["tokens"]}, {"echo", true}, {"logprobs", 1}, {"max_tokens", 4}, {"temperature", 0},
                     {"ignore_eos", true}};
  const Json first = completion(body);
  const Json again = completion(body);
  const Json& lp = again["choices"][0]["logprobs"];
  ASSERT_EQ(lp["token_logprobs"].size(), c["tokens"].size() + 4);
  EXPECT_EQ(first["choices"][0]["logprobs"], lp);
  for (size_t i = 1; i < c["tokens"].size(); ++i) {
    EXPECT_NEAR(lp["token_logprobs"][i].get<double>(), c["logprobs"][i].get<double>(), kTolerance) << i;
  }
  for (size_t i = c["tokens"].size(); i < lp["token_logprobs"].size(); ++i) {
    EXPECT_NEAR(lp["token_logprobs"][i].get<double>(), lp["top_logprobs"][i].begin()->get<double>(), 1e-6);
  }
  EXPECT_EQ(again["usage"]["completion_tokens"], 4);
}

// What stays refused: max_tokens 0 without echo, and prompt logprobs in a stream.
TEST_F(PromptLogprobs, Refusals) {
  EXPECT_EQ(http_post(server_->port(), "/v1/completions", Json{{"prompt", "x"}, {"max_tokens", 0}}).status, 400);
  const HttpResult r = http_post(server_->port(), "/v1/completions",
                                 Json{{"prompt", "x"}, {"echo", true}, {"logprobs", 1}, {"stream", true}});
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.json()["error"]["param"], "echo");
  // max_tokens 0 with echo and no logprobs: the prompt back, nothing generated.
  const Json j = completion({{"prompt", "Once upon"}, {"echo", true}, {"max_tokens", 0}});
  EXPECT_EQ(j["choices"][0]["text"], "Once upon");
  EXPECT_TRUE(j["choices"][0]["logprobs"].is_null());
}

}  // namespace
}  // namespace llms::test
