// POST /v1/responses on stories260K: the answer equals the chat completion of the
// same messages (greedy), in the Responses API's shapes — the response object, its
// streamed events in order with sequence numbers, structured output, and a function
// tool round trip (function_call, then function_call_output).
#include <gtest/gtest.h>

#include "server_test_util.h"

namespace llms::test {
namespace {

const Json kWeather = city_schema();

class Responses : public StoriesServerTest {
 protected:
  // The concatenated output_text of a response's message items.
  static std::string output_text(const Json& response) {
    std::string text;
    for (const Json& item : response["output"]) {
      if (item["type"] != "message") continue;
      for (const Json& part : item["content"]) text += part["text"].get<std::string>();
    }
    return text;
  }
};

TEST_F(Responses, PlainTextEqualsTheChatAnswer) {
  const Json r = post("/v1/responses", {{"model", "stories260K"},
                                        {"instructions", "Tell a story."},
                                        {"input", "Once upon a time"},
                                        {"max_output_tokens", 12},
                                        {"temperature", 0}});
  const Json chat = post("/v1/chat/completions", {{"messages", {{{"role", "system"}, {"content", "Tell a story."}},
                                                                {{"role", "user"}, {"content", "Once upon a time"}}}},
                                                  {"max_tokens", 12},
                                                  {"temperature", 0}});
  EXPECT_EQ(r["object"], "response");
  EXPECT_TRUE(r["id"].get<std::string>().starts_with("resp_"));
  EXPECT_EQ(r["model"], "stories260K");
  EXPECT_EQ(r["store"], false);
  ASSERT_EQ(r["output"][0]["type"], "message");
  EXPECT_EQ(r["output"][0]["role"], "assistant");
  EXPECT_EQ(r["output"][0]["content"][0]["type"], "output_text");
  EXPECT_EQ(output_text(r), chat["choices"][0]["message"]["content"]);
  const bool cut = chat["choices"][0]["finish_reason"] == "length";
  EXPECT_EQ(r["status"], cut ? "incomplete" : "completed");
  if (cut) {
    EXPECT_EQ(r["incomplete_details"]["reason"], "max_output_tokens");
  }
  EXPECT_EQ(r["usage"]["input_tokens"], chat["usage"]["prompt_tokens"]);
  EXPECT_EQ(r["usage"]["output_tokens"], chat["usage"]["completion_tokens"]);
  EXPECT_EQ(r["usage"]["total_tokens"], chat["usage"]["total_tokens"]);
  // Input items (message objects with text parts) are the same prompt.
  const Json items = post("/v1/responses",
                          {{"instructions", "Tell a story."},
                           {"input", {{{"type", "message"}, {"role", "user"},
                                       {"content", {{{"type", "input_text"}, {"text", "Once upon a time"}}}}}}},
                           {"max_output_tokens", 12},
                           {"temperature", 0}});
  EXPECT_EQ(output_text(items), output_text(r));
}

// The documented events in order, numbered from 0; the deltas make the final text,
// which equals the whole answer's; no [DONE].
TEST_F(Responses, StreamEventsInOrder) {
  const Json body = {{"input", "Once upon a time"}, {"max_output_tokens", 12}, {"temperature", 0}};
  const Json whole = post("/v1/responses", body);
  Json streamed = body;
  streamed["stream"] = true;
  const SseResult s = http_stream(port(), "/v1/responses", streamed);
  ASSERT_EQ(s.status, 200);
  EXPECT_EQ(s.raw.find("[DONE]"), std::string::npos);
  const auto events = parse_named_sse(s.raw);
  ASSERT_GE(events.size(), 8u) << s.raw;
  std::vector<std::string> names;
  std::string deltas;
  for (size_t i = 0; i < events.size(); ++i) {
    const auto& [name, data] = events[i];
    EXPECT_EQ(data["type"], name);
    EXPECT_EQ(data["sequence_number"], i);
    if (name == "response.output_text.delta") {
      deltas += data["delta"].get<std::string>();
    } else {
      names.push_back(name);
    }
  }
  const std::vector<std::string> want = {"response.created",           "response.in_progress",
                                         "response.output_item.added", "response.content_part.added",
                                         "response.output_text.done",  "response.content_part.done",
                                         "response.output_item.done",  whole["status"] == "completed"
                                                                           ? "response.completed"
                                                                           : "response.incomplete"};
  EXPECT_EQ(names, want);
  EXPECT_EQ(events[0].second["response"]["status"], "in_progress");
  const Json& final_response = events.back().second["response"];
  EXPECT_EQ(deltas, output_text(whole));
  EXPECT_EQ(output_text(final_response), deltas);
  EXPECT_EQ(final_response["usage"], whole["usage"]);
  for (const auto& [name, data] : events) {
    if (name == "response.output_text.done") {
      EXPECT_EQ(data["text"], deltas);
    }
  }
}

TEST_F(Responses, JsonSchemaFormat) {
  const Json r = post("/v1/responses", {{"input", "A city?"},
                                        {"max_output_tokens", 64},
                                        {"text", {{"format", {{"type", "json_schema"}, {"name", "city"},
                                                              {"schema", kWeather}, {"strict", true}}}}}});
  const Json v = Json::parse(output_text(r));
  ASSERT_TRUE(v.is_object()) << output_text(r);
  EXPECT_EQ(v.size(), 1u);
  ASSERT_TRUE(v["city"].is_string());
  EXPECT_GE(v["city"].get<std::string>().size(), 1u);
}

// A forced call comes back as a function_call item; sending it with its output
// continues the conversation; streamed, its arguments arrive as deltas.
TEST_F(Responses, FunctionToolRoundTripAndStream) {
  const Json tool = {{"type", "function"}, {"name", "get_weather"}, {"description", "Weather"}, {"parameters", kWeather}};
  const Json first = post("/v1/responses", {{"input", "Weather in Paris?"}, {"tools", {tool}},
                                            {"tool_choice", "required"}, {"parallel_tool_calls", false}, {"max_output_tokens", 200}, {"temperature", 0}});
  Json call;
  for (const Json& item : first["output"]) {
    if (item["type"] == "function_call") call = item;
  }
  ASSERT_TRUE(call.is_object()) << first.dump();
  EXPECT_EQ(call["name"], "get_weather");
  EXPECT_EQ(call["status"], "completed");
  EXPECT_TRUE(Json::parse(call["arguments"].get<std::string>())["city"].is_string());
  const Json second = post("/v1/responses",
                           {{"input", {{{"role", "user"}, {"content", "Weather in Paris?"}},
                                       {{"type", "function_call"}, {"call_id", call["call_id"]}, {"name", "get_weather"},
                                        {"arguments", call["arguments"]}},
                                       {{"type", "function_call_output"}, {"call_id", call["call_id"]},
                                        {"output", "Sunny, 21 C"}}}},
                            {"tools", {tool}}, {"max_output_tokens", 8}});
  EXPECT_EQ(second["object"], "response");
  EXPECT_FALSE(second["output"].empty());

  const SseResult s = http_stream(port(), "/v1/responses",
                                  {{"input", "Weather in Paris?"}, {"tools", {tool}}, {"tool_choice", "required"}, {"parallel_tool_calls", false},
                                   {"max_output_tokens", 200}, {"temperature", 0}, {"stream", true}});
  std::string args, done_args;
  bool added = false;
  for (const auto& [name, data] : parse_named_sse(s.raw)) {
    if (name == "response.output_item.added" && data["item"]["type"] == "function_call") {
      added = true;
      EXPECT_EQ(data["item"]["name"], "get_weather");
    }
    if (name == "response.function_call_arguments.delta") args += data["delta"].get<std::string>();
    if (name == "response.function_call_arguments.done") done_args = data["arguments"].get<std::string>();
  }
  EXPECT_TRUE(added) << s.raw;
  EXPECT_EQ(args, done_args);
  // Greedy: the same call as the whole answer's (which writes the arguments compactly).
  EXPECT_EQ(Json::parse(args), Json::parse(call["arguments"].get<std::string>()));
}

TEST_F(Responses, Refusals) {
  auto param = [](const Json& j) { return j["error"]["param"]; };
  EXPECT_EQ(param(post("/v1/responses", {{"input", "x"}, {"previous_response_id", "resp_1"}}, 400)),
            "previous_response_id");
  EXPECT_EQ(param(post("/v1/responses", Json{{"model", "stories260K"}}, 400)), "input");
  EXPECT_EQ(param(post("/v1/responses", {{"input", "x"}, {"tools", {{{"type", "web_search"}}}}}, 400)), "tools");
  EXPECT_EQ(param(post("/v1/responses", {{"input", {{{"type", "input_image"}}}}}, 400)), "input");
  EXPECT_EQ(post("/v1/responses", {{"input", "x"}, {"model", "gpt-4o"}}, 404)["error"]["code"], "model_not_found");
}

}  // namespace
}  // namespace llms::test
