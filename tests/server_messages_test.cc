// POST /v1/messages and /v1/messages/count_tokens on stories260K, as an Anthropic
// client sees them: the answer equals the chat completion of the same messages
// (greedy) in the message shape; a streamed tool call in the documented events;
// tool_use / tool_result round trip; Anthropic's error shape.
#include <gtest/gtest.h>

#include "server_test_util.h"

namespace llms::test {
namespace {

const Json kWeather = city_schema();
const Json kTool = {{"name", "get_weather"}, {"description", "Weather"}, {"input_schema", kWeather}};

class Messages : public StoriesServerTest {
 protected:
  static Json tool_body() {
    return {{"max_tokens", 200},
            {"messages", {{{"role", "user"}, {"content", "Weather in Paris?"}}}},
            {"tools", {kTool}},
            {"tool_choice", {{"type", "any"}, {"disable_parallel_tool_use", true}}},
            {"temperature", 0}};
  }
};

TEST_F(Messages, TextEqualsTheChatAnswerAndCountTokens) {
  const Json body = {{"model", "stories260K"},
                     {"system", "Tell a story."},
                     {"max_tokens", 12},
                     {"temperature", 0},
                     {"messages", {{{"role", "user"}, {"content", {{{"type", "text"}, {"text", "Once upon a time"}}}}}}}};
  const Json m = post("/v1/messages", body);
  const Json chat = post("/v1/chat/completions", {{"messages", {{{"role", "system"}, {"content", "Tell a story."}},
                                                                {{"role", "user"}, {"content", "Once upon a time"}}}},
                                                  {"max_tokens", 12},
                                                  {"temperature", 0}});
  EXPECT_EQ(m["type"], "message");
  EXPECT_EQ(m["role"], "assistant");
  EXPECT_TRUE(m["id"].get<std::string>().starts_with("msg_"));
  ASSERT_EQ(m["content"].size(), 1u);
  EXPECT_EQ(m["content"][0]["type"], "text");
  EXPECT_EQ(m["content"][0]["text"], chat["choices"][0]["message"]["content"]);
  EXPECT_EQ(m["stop_reason"], chat["choices"][0]["finish_reason"] == "length" ? "max_tokens" : "end_turn");
  EXPECT_TRUE(m["stop_sequence"].is_null());
  EXPECT_EQ(m["usage"]["input_tokens"], chat["usage"]["prompt_tokens"]);
  EXPECT_EQ(m["usage"]["output_tokens"], chat["usage"]["completion_tokens"]);
  Json count = body;
  count.erase("max_tokens");
  EXPECT_EQ(post("/v1/messages/count_tokens", count)["input_tokens"], chat["usage"]["prompt_tokens"]);
}

// stop_sequences end the answer before the sequence, as the chat path's stop does.
TEST_F(Messages, StopSequences) {
  const Json base = {{"max_tokens", 24}, {"temperature", 0}, {"messages", {{{"role", "user"}, {"content", "Once"}}}}};
  const std::string text = post("/v1/messages", base)["content"][0]["text"];
  const size_t space = text.find(' ', 3);
  ASSERT_NE(space, std::string::npos) << text;
  Json stopped = base;
  stopped["stop_sequences"] = {text.substr(space, 3)};
  const Json m = post("/v1/messages", stopped);
  EXPECT_EQ(m["content"][0]["text"], text.substr(0, space));
  EXPECT_EQ(m["stop_reason"], "end_turn");
}

// tool_choice any: a tool_use block with an input object, stop_reason tool_use; the
// tool_result continues the conversation.
TEST_F(Messages, ToolUseRoundTrip) {
  const Json m = post("/v1/messages", tool_body());
  EXPECT_EQ(m["stop_reason"], "tool_use");
  Json use;
  for (const Json& b : m["content"]) {
    if (b["type"] == "tool_use") use = b;
  }
  ASSERT_TRUE(use.is_object()) << m.dump();
  EXPECT_EQ(use["name"], "get_weather");
  ASSERT_TRUE(use["input"].is_object());
  EXPECT_TRUE(use["input"]["city"].is_string());
  Json next = tool_body();
  next.erase("tool_choice");
  next["max_tokens"] = 8;
  next["messages"].push_back({{"role", "assistant"}, {"content", m["content"]}});
  next["messages"].push_back(
      {{"role", "user"},
       {"content", Json::array({{{"type", "tool_result"}, {"tool_use_id", use["id"]}, {"content", "Sunny, 21 C"}}})}});
  const Json answer = post("/v1/messages", next);
  EXPECT_EQ(answer["type"], "message");
}

// The documented events of a streamed tool call, in order; the partial JSON makes the
// same input as the whole answer's (greedy).
TEST_F(Messages, StreamedToolCallEvents) {
  const Json whole = post("/v1/messages", tool_body());
  Json body = tool_body();
  body["stream"] = true;
  const SseResult s = http_stream(port(), "/v1/messages", body);
  ASSERT_EQ(s.status, 200);
  const auto events = parse_named_sse(s.raw);
  ASSERT_GE(events.size(), 5u) << s.raw;
  std::vector<std::string> names;
  std::string partial;
  for (const auto& [name, data] : events) {
    EXPECT_EQ(data["type"], name);
    if (name == "content_block_delta") {
      ASSERT_EQ(data["delta"]["type"], "input_json_delta") << s.raw;
      partial += data["delta"]["partial_json"].get<std::string>();
    } else {
      names.push_back(name);
    }
  }
  const std::vector<std::string> want = {"message_start", "content_block_start", "content_block_stop", "message_delta",
                                         "message_stop"};
  EXPECT_EQ(names, want);
  EXPECT_EQ(events[0].second["message"]["role"], "assistant");
  EXPECT_EQ(events[1].second["content_block"]["type"], "tool_use");
  EXPECT_EQ(events[1].second["content_block"]["name"], "get_weather");
  EXPECT_EQ(events[1].second["index"], 0);
  const Json& delta = events[events.size() - 2].second;
  EXPECT_EQ(delta["delta"]["stop_reason"], "tool_use");
  EXPECT_EQ(delta["usage"]["output_tokens"], whole["usage"]["output_tokens"]);
  EXPECT_EQ(Json::parse(partial), whole["content"].back()["input"]);
}

TEST_F(Messages, ErrorsInAnthropicShape) {
  const Json no_max = post("/v1/messages", {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}}, 400);
  EXPECT_EQ(no_max["type"], "error");
  EXPECT_EQ(no_max["error"]["type"], "invalid_request_error");
  EXPECT_NE(no_max["error"]["message"].get<std::string>().find("max_tokens"), std::string::npos);
  const Json image = post("/v1/messages", {{"max_tokens", 4},
                                           {"messages", {{{"role", "user"}, {"content", {{{"type", "image"}}}}}}}},
                          400);
  EXPECT_EQ(image["error"]["type"], "invalid_request_error");
  const Json model = post("/v1/messages", {{"model", "claude-x"}, {"max_tokens", 4},
                                           {"messages", {{{"role", "user"}, {"content", "Hi"}}}}},
                          404);
  EXPECT_EQ(model["type"], "error");
  EXPECT_EQ(model["error"]["type"], "not_found_error");
}

}  // namespace
}  // namespace llms::test
