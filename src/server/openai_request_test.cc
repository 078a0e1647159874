#include "server/openai_request.h"

#include <gtest/gtest.h>

namespace llms {
namespace {

std::optional<ApiError> parse(const char* text, ApiKind kind, CompletionRequest* r) {
  return parse_completion_request(Json::parse(text), kind, r);
}

TEST(OpenAiRequestTest, ReadsEveryParameter) {
  CompletionRequest r;
  auto e = parse(R"({"model":"m","n":2,"stream":true,"stream_options":{"include_usage":true},"echo":true,
      "max_tokens":7,"temperature":0.5,"top_p":0.9,"top_k":40,"min_p":0.1,"stop":["a","b"],"seed":-3,
      "presence_penalty":1,"frequency_penalty":-1,"user":"u","priority":5,"timeout":2.5,"ignore_eos":true,
      "lane":"batch","slo":{"ttft_ms":250,"itl_ms":40.5},"prompt":["once",[1,2]]})",
                 ApiKind::kCompletion, &r);
  ASSERT_FALSE(e) << e->message;
  EXPECT_EQ(r.n, 2);
  EXPECT_TRUE(r.stream && r.include_usage && r.echo);
  EXPECT_EQ(*r.max_tokens, 7);
  EXPECT_FLOAT_EQ(r.params.sampling.temperature, 0.5f);
  EXPECT_EQ(r.params.sampling.top_k, 40);
  EXPECT_EQ(r.params.stop, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(*r.params.sampling.seed, static_cast<uint64_t>(-3));
  EXPECT_EQ(r.params.priority, 5);
  EXPECT_DOUBLE_EQ(r.params.timeout_s, 2.5);
  EXPECT_TRUE(r.params.ignore_eos);
  EXPECT_EQ(r.params.lane, Lane::kBatch);
  EXPECT_DOUBLE_EQ(r.params.slo.ttft_ms, 250);
  EXPECT_DOUBLE_EQ(r.params.slo.itl_ms, 40.5);
  EXPECT_EQ(r.params.top_logprobs, -1);
  ASSERT_EQ(r.prompts.size(), 2u);
  EXPECT_FALSE(r.prompts[0].is_tokens);
  EXPECT_EQ(r.prompts[0].text, "once");
  EXPECT_TRUE(r.prompts[1].is_tokens);
  EXPECT_EQ(r.prompts[1].tokens, (std::vector<int64_t>{1, 2}));
}

// The prompt and the messages are part of the one parse: their errors name them.
TEST(OpenAiRequestTest, PromptsAndMessagesAreParsedWithTheRest) {
  CompletionRequest r;
  auto e = parse(R"({"messages":[{"role":"developer","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},
      {"role":"user","content":"hi"}]})", ApiKind::kChat, &r);
  ASSERT_FALSE(e) << e->message;
  ASSERT_EQ(r.messages.size(), 2u);
  EXPECT_EQ(r.messages[0].role, "system");
  EXPECT_EQ(r.messages[0].content, "ab");
  EXPECT_EQ(r.messages[1].content, "hi");
  for (const char* body : {R"({})", R"({"prompt":[]})", R"({"prompt":[1.5]})", R"({"prompt":[true]})", R"({"prompt":[[]]})"}) {
    auto err = parse(body, ApiKind::kCompletion, &r);
    ASSERT_TRUE(err) << body;
    EXPECT_EQ(err->param, "prompt") << body;
  }
  for (const char* body : {R"({})", R"({"messages":[]})", R"({"messages":[{"content":"x"}]})",
                           R"({"messages":[{"role":"wizard","content":"x"}]})",
                           R"({"messages":[{"role":"user","content":[{"type":"image_url"}]}]})"}) {
    auto err = parse(body, ApiKind::kChat, &r);
    ASSERT_TRUE(err) << body;
    EXPECT_EQ(err->param, "messages") << body;
  }
}

TEST(OpenAiRequestTest, ChatLogprobsAndMaxCompletionTokens) {
  CompletionRequest r;
  ASSERT_FALSE(parse(R"({"logprobs":true,"top_logprobs":3,"max_completion_tokens":9,"messages":[{"role":"user"}]})",
                     ApiKind::kChat, &r));
  EXPECT_EQ(r.params.top_logprobs, 3);
  EXPECT_EQ(*r.max_tokens, 9);
  ASSERT_FALSE(parse(R"({"logprobs":2,"prompt":"x"})", ApiKind::kCompletion, &r));
  EXPECT_EQ(r.params.top_logprobs, 2);
  EXPECT_FALSE(r.params.prompt_logprobs);
}

// echo with logprobs scores the prompt; max_tokens 0 needs echo and scores it too.
TEST(OpenAiRequestTest, EchoWithLogprobsScoresThePrompt) {
  CompletionRequest r;
  ASSERT_FALSE(parse(R"({"echo":true,"logprobs":1,"max_tokens":0,"prompt":"x"})", ApiKind::kCompletion, &r));
  EXPECT_TRUE(r.params.prompt_logprobs);
  EXPECT_EQ(r.params.top_logprobs, 1);
  EXPECT_EQ(*r.max_tokens, 0);
  ASSERT_FALSE(parse(R"({"echo":true,"max_tokens":0,"prompt":"x"})", ApiKind::kCompletion, &r));
  EXPECT_TRUE(r.params.prompt_logprobs);
  EXPECT_EQ(r.params.top_logprobs, 0);
  EXPECT_FALSE(r.logprobs);
  ASSERT_FALSE(parse(R"({"echo":true,"prompt":"x"})", ApiKind::kCompletion, &r));
  EXPECT_FALSE(r.params.prompt_logprobs);
  const auto e = parse(R"({"echo":true,"logprobs":1,"stream":true,"prompt":"x"})", ApiKind::kCompletion, &r);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "echo");
}

TEST(OpenAiRequestTest, BadValuesNameTheParameter) {
  struct Case {
    const char* body;
    ApiKind kind;
    const char* param;
  } cases[] = {
      {R"({"temperature":"hot"})", ApiKind::kCompletion, "temperature"},
      {R"({"temperature":3})", ApiKind::kCompletion, "temperature"},
      {R"({"top_p":0})", ApiKind::kCompletion, "top_p"},
      {R"({"n":0})", ApiKind::kCompletion, "n"},
      {R"({"max_tokens":0})", ApiKind::kCompletion, "max_tokens"},
      {R"({"max_tokens":1.5})", ApiKind::kCompletion, "max_tokens"},
      {R"({"stop":[1]})", ApiKind::kCompletion, "stop"},
      {R"({"stop":""})", ApiKind::kCompletion, "stop"},
      {R"({"logprobs":21})", ApiKind::kCompletion, "logprobs"},
      {R"({"top_logprobs":2})", ApiKind::kChat, "top_logprobs"},
      {R"({"stream_options":{"include_usage":true}})", ApiKind::kChat, "stream_options"},
      {R"({"echo":true})", ApiKind::kChat, "echo"},
      {R"({"tools":[{"type":"function"}]})", ApiKind::kChat, "tools"},
      {R"({"logit_bias":{"1":500}})", ApiKind::kChat, "logit_bias"},
      {R"({"timeout":0})", ApiKind::kChat, "timeout"},
      {R"({"lane":"fast"})", ApiKind::kChat, "lane"},
      {R"({"slo":250})", ApiKind::kChat, "slo"},
      {R"({"slo":{"ttft":250}})", ApiKind::kChat, "slo"},
      {R"({"slo":{"ttft_ms":0}})", ApiKind::kChat, "slo"},
      {R"({"slo":{"itl_ms":"5"}})", ApiKind::kChat, "slo"},
      {R"({"presence_penalty":-2.5})", ApiKind::kChat, "presence_penalty"},
      {R"({"seed":"1"})", ApiKind::kChat, "seed"},
      {R"({"model":7})", ApiKind::kChat, "model"},
      // Found by request_fuzz: a "type" that is not a string made Json::value() throw
      // (the client got a 500 instead of a 400).
      {R"({"prompt":"x","response_format":{"type":[]}})", ApiKind::kCompletion, "response_format"},
      {R"({"messages":[{"role":"user","content":[{"type":5,"text":"x"}]}]})", ApiKind::kChat, "messages"},
      {R"({"messages":[{"role":"user","content":"hi"}],"tools":[{"function":{"name":"f"},"type":[{}]}]})", ApiKind::kChat,
       "tools"},
      {R"({"messages":[{"role":"user","content":"hi"}],"tool_choice":{"type":7,"function":{"name":"f"}}})", ApiKind::kChat,
       "tool_choice"},
  };
  for (const auto& c : cases) {
    CompletionRequest r;
    auto e = parse(c.body, c.kind, &r);
    ASSERT_TRUE(e.has_value()) << c.body;
    EXPECT_EQ(e->status, 400) << c.body;
    EXPECT_EQ(e->type, "invalid_request_error");
    EXPECT_EQ(e->param, c.param) << c.body << ": " << e->message;
  }
}

}  // namespace
}  // namespace llms

namespace llms {
namespace {

std::string error_message(const char* text, ApiKind kind = ApiKind::kChat) {
  CompletionRequest r;
  auto e = parse_completion_request(Json::parse(text), kind, &r);
  return e ? e->param + ": " + e->message : "";
}

TEST(OpenAiRequestTest, ResponseFormatAndGrammarExtensions) {
  CompletionRequest r;
  auto e = parse_completion_request(Json::parse(R"({"messages":[{"role":"user","content":"x"}],
      "response_format":{"type":"json_schema","json_schema":{"name":"p","strict":true,
      "schema":{"type":"object","properties":{"b":{},"a":{}}}}}})"),
                                    ApiKind::kChat, &r);
  ASSERT_FALSE(e) << e->message;
  EXPECT_EQ(r.constraint.kind, ConstraintKind::kJsonSchema);
  EXPECT_EQ(r.constraint.param, "response_format");
  EXPECT_EQ(r.constraint.schema.dump(), R"({"type":"object","properties":{"b":{},"a":{}}})");  // order kept
  ASSERT_FALSE(parse_completion_request(Json::parse(R"({"prompt":"x","grammar":"root ::= \"a\""})"), ApiKind::kCompletion, &r));
  EXPECT_EQ(r.constraint.kind, ConstraintKind::kGbnf);
  EXPECT_EQ(r.constraint.text, "root ::= \"a\"");
  ASSERT_FALSE(parse_completion_request(Json::parse(R"({"prompt":"x","regex":"[0-9]+","response_format":{"type":"text"}})"),
                                        ApiKind::kCompletion, &r));
  EXPECT_EQ(r.constraint.kind, ConstraintKind::kRegex);
  ASSERT_FALSE(parse_completion_request(Json::parse(R"({"prompt":"x","response_format":{"type":"json_object"}})"),
                                        ApiKind::kCompletion, &r));
  EXPECT_EQ(r.constraint.kind, ConstraintKind::kJsonObject);
}

TEST(OpenAiRequestTest, LogitBias) {
  CompletionRequest r;
  ASSERT_FALSE(parse_completion_request(Json::parse(R"({"prompt":"x","logit_bias":{"5":-100,"17":2.5}})"),
                                        ApiKind::kCompletion, &r));
  EXPECT_EQ(r.params.sampling.logit_bias, (std::vector<std::pair<int32_t, float>>{{5, -100.0f}, {17, 2.5f}}));
}

TEST(OpenAiRequestTest, ConstraintErrorsNameTheParameter) {
  EXPECT_EQ(error_message(R"({"messages":[{"role":"user","content":"x"}],"response_format":{"type":"xml"}})"),
            "response_format: 'response_format.type' must be text, json_object or json_schema, got 'xml'");
  EXPECT_EQ(error_message(R"({"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema",
      "json_schema":{"schema":{}}}})"),
            "response_format: 'response_format.json_schema.name' is required (a non-empty string)");
  EXPECT_EQ(error_message(R"({"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_object",
      "schema":{}}})"),
            "response_format: 'response_format.schema' is not supported (fields: type)");
  EXPECT_EQ(error_message(R"({"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_object"},
      "grammar":"root ::= \"a\""})"),
            "grammar: 'grammar' cannot be combined with 'response_format'");
  EXPECT_EQ(error_message(R"({"messages":[{"role":"user","content":"x"}],"regex":""})"),
            "regex: 'regex' must be a non-empty string");
  EXPECT_EQ(error_message(R"({"messages":[{"role":"user","content":"x"}],"logit_bias":{"a":1}})"),
            "logit_bias: 'logit_bias' keys must be token ids, got 'a'");
  EXPECT_EQ(error_message(R"({"messages":[{"role":"user","content":"x"}],"logit_bias":{"3":101}})"),
            "logit_bias: 'logit_bias' values must be numbers in [-100, 100] (token 3)");
}

// docs/api.md, "Unknown fields": unsupported fields that change the answer are a 400
// naming them, unless null or neutral; other unknown fields are ignored. The chat
// templating fields are honoured on chat (tests/server_chat_options_test.cc) and
// refused on completions.
TEST(OpenAiRequestTest, UnknownFieldsPolicy) {
  for (const char* f : {R"("chat_template_kwargs":{"x":1})", R"("continue_final_message":true)", R"("min_tokens":3)",
                        R"("stop_token_ids":[2])", R"("skip_special_tokens":false)", R"("length_penalty":2)"}) {
    CompletionRequest r;
    const std::string body = std::string(R"({"prompt":"x",)") + f + "}";
    auto e = parse(body.c_str(), ApiKind::kCompletion, &r);
    ASSERT_TRUE(e) << body;
    EXPECT_EQ(e->status, 400);
    const std::string key = std::string(f).substr(1, std::string(f).find('"', 1) - 1);
    EXPECT_EQ(e->param, key) << body;
  }
  CompletionRequest chat;
  ASSERT_FALSE(parse(R"({"messages":[{"role":"user","content":"x"},{"role":"assistant","content":"y"}],
      "chat_template_kwargs":{"x":1},"continue_final_message":true})",
                     ApiKind::kChat, &chat));
  EXPECT_TRUE(chat.continue_final_message);
  EXPECT_FALSE(chat.add_generation_prompt);
  EXPECT_EQ(chat.chat_template_kwargs, Json::parse(R"({"x":1})"));
  CompletionRequest r;
  auto e = parse(R"({"prompt":"x","guided_json":null,"chat_template_kwargs":{},"continue_final_message":false,
      "min_tokens":0,"stop_token_ids":[],"skip_special_tokens":true,"length_penalty":1.0,"store":true,
      "metadata":{"a":"b"},"some_vendor_field":[1,2]})",
                 ApiKind::kCompletion, &r);
  EXPECT_FALSE(e) << e->message;
}

TEST(OpenAiRequestTest, CacheSalt) {
  CompletionRequest r;
  ASSERT_FALSE(parse(R"({"prompt":"x","cache_salt":"tenant-1"})", ApiKind::kCompletion, &r));
  EXPECT_EQ(r.cache_salt, "tenant-1");
  for (const char* bad : {R"({"prompt":"x","cache_salt":""})", R"({"prompt":"x","cache_salt":3})"}) {
    auto e = parse(bad, ApiKind::kCompletion, &r);
    ASSERT_TRUE(e) << bad;
    EXPECT_EQ(e->param, "cache_salt");
  }
}

}  // namespace
}  // namespace llms
