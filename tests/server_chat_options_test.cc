// Chat options on stories260K with Jinja templates of the tests' own: assistant
// prefill (continue_final_message), chat_template_kwargs, and reasoning_content split
// from <think> blocks (--reasoning-format deepseek against none on the same answer).
// Each expected prompt is written out by hand and run through /v1/completions.
#include <gtest/gtest.h>

#include "server_test_util.h"

namespace llms::test {
namespace {

// ChatML, with an optional no-think marker and a generation prompt that opens a
// thinking block when `think` is set (as Qwen3's template does).
constexpr const char* kTemplate =
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if enable_thinking is defined and not enable_thinking %}/no_think\n{% endif %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% if think is defined and think %}<think>\n{% endif %}"
    "{% endif %}";

class ChatOptions : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!have_stories()) return;
    for (const char* format : {"deepseek", "none"}) {
      servers_.push_back(start_server(stories_path(), [&](ServeConfig& c) {
                           c.server.chat_template = kTemplate;
                           c.server.reasoning_format = format;
                         }).release());
    }
  }
  static void TearDownTestSuite() {
    for (LlmServer* s : servers_) delete s;
    servers_.clear();
  }
  void SetUp() override {
    if (!have_stories()) GTEST_SKIP() << "needs " << shared_dir() << "/models/stories260K.gguf";
  }
  // server 0: --reasoning-format deepseek; 1: none.
  static Json post(const std::string& path, const Json& body, int status = 200, int server = 0) {
    const HttpResult r = http_post(servers_[static_cast<size_t>(server)]->port(), path, body);
    EXPECT_EQ(r.status, status) << r.body;
    return r.json();
  }
  // The greedy completion of `prompt` text.
  static Json complete(const std::string& prompt, int max_tokens) {
    return post("/v1/completions", {{"prompt", prompt}, {"max_tokens", max_tokens}, {"temperature", 0}});
  }
  static std::vector<LlmServer*> servers_;
};
std::vector<LlmServer*> ChatOptions::servers_;

// The prompt ends where the assistant's text ends: the answer continues it.
TEST_F(ChatOptions, ContinueFinalMessage) {
  const Json messages = {{{"role", "user"}, {"content", "Tell me a story."}},
                         {{"role", "assistant"}, {"content", "Once upon a time, there was a"}}};
  const Json chat = post("/v1/chat/completions",
                         {{"messages", messages}, {"continue_final_message", true}, {"max_tokens", 10}, {"temperature", 0}});
  const Json want = complete("<|im_start|>user\nTell me a story.<|im_end|>\n<|im_start|>assistant\nOnce upon a time, "
                             "there was a",
                             10);
  EXPECT_EQ(chat["choices"][0]["message"]["content"], want["choices"][0]["text"]);
  EXPECT_EQ(chat["usage"]["prompt_tokens"], want["usage"]["prompt_tokens"]);
  // Both set: vLLM's 400; the last message must be the assistant's.
  Json both = {{"messages", messages}, {"continue_final_message", true}, {"add_generation_prompt", true}};
  EXPECT_EQ(post("/v1/chat/completions", both, 400)["error"]["param"], "continue_final_message");
  const Json user_last = {{"messages", {messages[0]}}, {"continue_final_message", true}};
  EXPECT_EQ(post("/v1/chat/completions", user_last, 400)["error"]["param"], "continue_final_message");
}

// chat_template_kwargs reach the template (enable_thinking: false writes /no_think).
TEST_F(ChatOptions, TemplateKwargs) {
  const Json messages = {{{"role", "user"}, {"content", "Hi"}}};
  const Json chat = post("/v1/chat/completions", {{"messages", messages},
                                                  {"chat_template_kwargs", {{"enable_thinking", false}}},
                                                  {"max_tokens", 6},
                                                  {"temperature", 0}});
  const Json want = complete("<|im_start|>user\nHi<|im_end|>\n/no_think\n<|im_start|>assistant\n", 6);
  EXPECT_EQ(chat["usage"]["prompt_tokens"], want["usage"]["prompt_tokens"]);
  EXPECT_EQ(chat["choices"][0]["message"]["content"], want["choices"][0]["text"]);
  EXPECT_EQ(post("/v1/chat/completions", {{"messages", messages}, {"chat_template_kwargs", "x"}}, 400)["error"]["param"],
            "chat_template_kwargs");
}

// The template opens <think>; a regex makes the answer close it. deepseek splits what
// none returns whole, streamed and not alike.
TEST_F(ChatOptions, ReasoningContent) {
  const Json body = {{"messages", {{{"role", "user"}, {"content", "Hi"}}}},
                     {"chat_template_kwargs", {{"think", true}}},
                     {"structured_outputs", {{"regex", "[a-z]{2,6}</think> [a-z]{2,6}"}}},
                     {"max_tokens", 40},
                     {"temperature", 0}};
  const std::string whole = post("/v1/chat/completions", body, 200, 1)["choices"][0]["message"]["content"];
  const size_t close = whole.find("</think>");
  ASSERT_NE(close, std::string::npos) << whole;
  const Json split = post("/v1/chat/completions", body)["choices"][0]["message"];
  EXPECT_EQ(split["reasoning_content"], whole.substr(0, close));
  EXPECT_EQ(split["content"], whole.substr(close + 9));  // "</think> " dropped
  Json streamed = body;
  streamed["stream"] = true;
  const SseResult s = http_stream(servers_[0]->port(), "/v1/chat/completions", streamed);
  std::string reasoning, content;
  for (const Json& c : s.chunks()) {
    if (c["choices"].empty()) continue;
    const Json& d = c["choices"][0]["delta"];
    if (d.contains("reasoning_content")) reasoning += d["reasoning_content"].get<std::string>();
    if (d.contains("content")) content += d["content"].get<std::string>();
  }
  EXPECT_EQ(reasoning, split["reasoning_content"]);
  EXPECT_EQ(content, split["content"]);
  // Cut before </think>: all of it is reasoning.
  Json cut = body;
  cut.erase("structured_outputs");
  cut["max_tokens"] = 5;
  const std::string text = post("/v1/chat/completions", cut, 200, 1)["choices"][0]["message"]["content"];
  const Json m = post("/v1/chat/completions", cut)["choices"][0]["message"];
  EXPECT_EQ(m["reasoning_content"], text);
  EXPECT_EQ(m["content"], "");
}

}  // namespace
}  // namespace llms::test
