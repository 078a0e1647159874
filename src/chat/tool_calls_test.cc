#include "chat/tool_calls.h"

#include <gtest/gtest.h>

#include "chat/tool_call_stream.h"
#include "grammar/compiled_grammar.h"
#include "grammar/grammar_matcher.h"

namespace llms {
namespace {

using Json = nlohmann::ordered_json;

ToolRequest weather_tools(ToolChoice choice, bool parallel = true) {
  ToolRequest r;
  r.tools.push_back(ToolDefinition{"get_weather", "the weather",
                                   Json::parse(R"({"type":"object","properties":{"city":{"type":"string"},
                                     "days":{"type":"integer","minimum":1,"maximum":7}},"required":["city","days"],
                                     "additionalProperties":false})"),
                                   Json::object()});
  r.tools.push_back(ToolDefinition{"ping", "", Json::object(), Json::object()});
  r.choice = choice;
  r.parallel = parallel;
  return r;
}

// Whether `text` is a complete match, fed byte by byte through a one-byte vocabulary.
bool grammar_accepts(const ToolRequest& r, ToolCallFormat f, std::string_view text) {
  auto g = tool_call_grammar(r, f);
  EXPECT_TRUE(g.ok()) << g.status().to_string();
  std::vector<std::string> pieces;
  for (int b = 0; b < 256; ++b) pieces.emplace_back(1, static_cast<char>(b));
  auto cg = CompiledGrammar::compile(*g, std::make_shared<const TokenVocabulary>(std::move(pieces), std::vector<int32_t>{}));
  EXPECT_TRUE(cg.ok()) << cg.status().to_string();
  GrammarMatcher m(std::move(cg).value());
  return (text.empty() || m.accept_bytes(text)) && m.can_end();
}

TEST(ToolCallsTest, ParsesHermesBlocksAndTheTextBefore) {
  const ParsedOutput p = parse_tool_calls(ToolCallFormat::kHermes,
                                          "Let me look.<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                                          "{\"city\": \"Paris\", \"days\": 2}}\n</tool_call>\n<tool_call>{\"name\":\"ping\","
                                          "\"arguments\":{}}</tool_call>");
  EXPECT_EQ(p.content, "Let me look.");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].name, "get_weather");
  EXPECT_EQ(Json::parse(p.calls[0].arguments), Json::parse(R"({"city":"Paris","days":2})"));
  EXPECT_EQ(p.calls[1].name, "ping");
  EXPECT_EQ(Json::parse(p.calls[1].arguments), Json::object());
}

TEST(ToolCallsTest, ACutLastBlockIsDroppedAndBrokenCallsAreText) {
  const ParsedOutput cut = parse_tool_calls(ToolCallFormat::kHermes,
                                            "<tool_call>{\"name\":\"ping\",\"arguments\":{}}</tool_call><tool_call>{\"na");
  ASSERT_EQ(cut.calls.size(), 1u);
  EXPECT_EQ(cut.calls[0].name, "ping");
  for (const char* text : {"<tool_call>{\"na", "<tool_call>{\"name\": 3}</tool_call>", "just a story", "{\"x\": 1}"}) {
    const ParsedOutput p = parse_tool_calls(ToolCallFormat::kHermes, text);
    EXPECT_TRUE(p.calls.empty()) << text;
    EXPECT_EQ(p.content, text);
  }
}

TEST(ToolCallsTest, ParsesMistralAndLlama3Formats) {
  const ParsedOutput m = parse_tool_calls(ToolCallFormat::kMistral,
                                          "[TOOL_CALLS] [{\"name\":\"ping\",\"arguments\":{}},{\"name\":\"get_weather\","
                                          "\"arguments\":{\"city\":\"Oslo\",\"days\":1}}]");
  ASSERT_EQ(m.calls.size(), 2u);
  EXPECT_EQ(m.calls[1].name, "get_weather");
  EXPECT_EQ(Json::parse(m.calls[1].arguments)["city"], "Oslo");
  const ParsedOutput l = parse_tool_calls(ToolCallFormat::kLlama3, " {\"name\": \"ping\", \"parameters\": {\"a\": [1]}}");
  ASSERT_EQ(l.calls.size(), 1u);
  EXPECT_EQ(Json::parse(l.calls[0].arguments), Json::parse(R"({"a":[1]})"));
  EXPECT_TRUE(l.content.empty());
}

TEST(ToolCallsTest, FormatFollowsTheTemplate) {
  EXPECT_EQ(tool_call_format_for("{% for m in messages %}<tool_call>{% endfor %}"), ToolCallFormat::kHermes);
  EXPECT_EQ(tool_call_format_for("llama3"), ToolCallFormat::kLlama3);
  EXPECT_EQ(tool_call_format_for("x [TOOL_CALLS] y"), ToolCallFormat::kMistral);
  EXPECT_EQ(tool_call_format_for("plain"), ToolCallFormat::kHermes);
}

TEST(ToolCallsTest, StreamingHoldsBackAPartialMarker) {
  EXPECT_EQ(tool_call_hold_back(ToolCallFormat::kHermes, "Hello <tool"), 5u);
  EXPECT_EQ(tool_call_hold_back(ToolCallFormat::kHermes, "Hello <b"), 0u);
  EXPECT_EQ(tool_call_start(ToolCallFormat::kHermes, "Hi <tool_call>{"), 3u);
  EXPECT_EQ(tool_call_start(ToolCallFormat::kHermes, "Hi <tool_cal"), std::string::npos);
  EXPECT_EQ(tool_call_hold_back(ToolCallFormat::kMistral, "ok [TOOL"), 5u);
  EXPECT_EQ(tool_call_start(ToolCallFormat::kLlama3, "  {\"name\""), 2u);
}

TEST(ToolCallsTest, GrammarUnderRequiredAllowsOnlyValidCalls) {
  const ToolRequest r = weather_tools(ToolChoice::kRequired);
  const auto f = ToolCallFormat::kHermes;
  EXPECT_TRUE(grammar_accepts(r, f, "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\", \"days\": 3}}</tool_call>"));
  EXPECT_TRUE(grammar_accepts(r, f, "<tool_call>{\"name\": \"ping\", \"arguments\": {}}</tool_call><tool_call>{\"name\": "
                                    "\"ping\", \"arguments\": {}}</tool_call>"));
  EXPECT_FALSE(grammar_accepts(r, f, ""));
  EXPECT_FALSE(grammar_accepts(r, f, "hello"));
  EXPECT_FALSE(grammar_accepts(r, f, "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\", \"days\": 9}}</tool_call>"));
  EXPECT_FALSE(grammar_accepts(r, f, "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}</tool_call>"));
  EXPECT_FALSE(grammar_accepts(r, f, "<tool_call>{\"name\": \"other\", \"arguments\": {}}</tool_call>"));
  ToolRequest one = weather_tools(ToolChoice::kRequired, /*parallel=*/false);
  EXPECT_FALSE(grammar_accepts(one, f, "<tool_call>{\"name\": \"ping\", \"arguments\": {}}</tool_call><tool_call>{\"name\": "
                                       "\"ping\", \"arguments\": {}}</tool_call>"));
  ToolRequest named = weather_tools(ToolChoice::kNamed);
  named.named = "ping";
  EXPECT_TRUE(grammar_accepts(named, f, "<tool_call>{\"name\": \"ping\", \"arguments\": {}}</tool_call>"));
  EXPECT_FALSE(grammar_accepts(named, f, "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"R\", \"days\": 1}}</tool_call>"));
}

TEST(ToolCallsTest, GrammarUnderAutoAllowsTextOrACall) {
  const ToolRequest r = weather_tools(ToolChoice::kAuto);
  EXPECT_TRUE(grammar_accepts(r, ToolCallFormat::kHermes, "Once upon a time <tool_ there was"));
  EXPECT_TRUE(grammar_accepts(r, ToolCallFormat::kHermes, ""));
  EXPECT_TRUE(grammar_accepts(r, ToolCallFormat::kHermes, "Sure. <tool_call>{\"name\": \"ping\", \"arguments\": {}}</tool_call>"));
  EXPECT_FALSE(grammar_accepts(r, ToolCallFormat::kHermes, "Sure. <tool_call>{\"name\": \"pong\"}"));
  EXPECT_TRUE(grammar_accepts(r, ToolCallFormat::kLlama3, "No call here."));
  EXPECT_TRUE(grammar_accepts(r, ToolCallFormat::kLlama3, "{\"name\": \"ping\", \"parameters\": {}}"));
  EXPECT_FALSE(grammar_accepts(r, ToolCallFormat::kLlama3, "{\"name\": \"ping\", \"arguments\": {}}"));
  EXPECT_TRUE(grammar_accepts(r, ToolCallFormat::kMistral, "[TOOL_CALLS] [{\"name\": \"ping\", \"arguments\": {}}]"));
}

TEST(ToolCallsTest, AParameterSchemaTheCompilerRefusesNamesTheFunction) {
  ToolRequest r = weather_tools(ToolChoice::kRequired);
  r.tools[1].parameters = Json::parse(R"({"type":"object","not":{}})");
  auto g = tool_call_grammar(r, ToolCallFormat::kHermes);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("function 'ping'"), std::string::npos) << g.status().message();
  EXPECT_NE(g.status().message().find("not"), std::string::npos) << g.status().message();
}

// Fed one byte at a time, the deltas put together give each call's name and its
// arguments text exactly as written.
TEST(ToolCallStreamerTest, DeltasAssembleIntoTheCalls) {
  const std::string args0 = "{ \"city\" : \"Pa\\\"r}is\", \"days\": [1, {\"x\": 2}] }";
  const std::string text = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": " + args0 +
                           "}\n</tool_call>\n<tool_call>{\"name\":\"ping\",\"arguments\":{}}</tool_call>";
  ToolCallStreamer s;
  std::vector<std::string> names, args;
  for (size_t n = 1; n <= text.size(); ++n) {
    for (const ToolCallDelta& d : s.feed(std::string_view(text).substr(0, n))) {
      ASSERT_LE(d.index, static_cast<int>(names.size()));
      if (d.head) {
        ASSERT_EQ(d.index, static_cast<int>(names.size()));
        names.push_back(d.name);
        args.emplace_back();
      } else {
        ASSERT_EQ(d.index, static_cast<int>(names.size()) - 1);
        args.back() += d.arguments;
      }
    }
  }
  EXPECT_EQ(names, (std::vector<std::string>{"get_weather", "ping"}));
  ASSERT_EQ(args.size(), 2u);
  EXPECT_EQ(args[0], args0);
  EXPECT_EQ(args[1], "{}");
  EXPECT_EQ(s.num_calls(), 2);
}

ChatMessage message(std::string role, std::string content) {
  ChatMessage m;
  m.role = std::move(role);
  m.content = std::move(content);
  return m;
}

TEST(ToolCallsTest, ToolsAsTextTellsTheModelAndReplaysCalls) {
  const ToolRequest r = weather_tools(ToolChoice::kAuto);
  std::vector<ChatMessage> msgs(4);
  msgs[0] = message("user", "Weather in Paris and Rome?");
  msgs[1].role = "assistant";
  msgs[1].content_null = true;
  msgs[1].tool_calls = {{"call_1", "get_weather", R"({"city":"Paris","days":1})"},
                        {"call_2", "get_weather", R"({"city":"Rome","days":1})"}};
  msgs[2] = message("tool", "sunny");
  msgs[3] = message("tool", "rain");
  const std::vector<ChatMessage> out = tools_as_text(msgs, r, ToolCallFormat::kHermes);
  ASSERT_EQ(out.size(), 4u);  // system + user + assistant + one user turn of results
  EXPECT_EQ(out[0].role, "system");
  EXPECT_NE(out[0].content.find("<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"get_weather\""),
            std::string::npos)
      << out[0].content;
  EXPECT_NE(out[0].content.find("<tool_call>"), std::string::npos);
  EXPECT_EQ(out[2].role, "assistant");
  EXPECT_TRUE(out[2].tool_calls.empty());
  // The replayed calls parse back into the calls that were sent.
  const ParsedOutput back = parse_tool_calls(ToolCallFormat::kHermes, out[2].content);
  ASSERT_EQ(back.calls.size(), 2u);
  EXPECT_EQ(Json::parse(back.calls[1].arguments), Json::parse(msgs[1].tool_calls[1].arguments));
  EXPECT_EQ(out[3].role, "user");
  EXPECT_EQ(out[3].content, "<tool_response>\nsunny\n</tool_response>\n<tool_response>\nrain\n</tool_response>");
}

TEST(ToolCallsTest, Llama3AndMistralPromptsFollowTheirTemplates) {
  const ToolRequest r = weather_tools(ToolChoice::kAuto);
  std::vector<ChatMessage> msgs(3);
  msgs[0] = message("user", "Weather?");
  msgs[1].role = "assistant";
  msgs[1].tool_calls = {{"call_1", "get_weather", R"({"city":"Oslo","days":1})"}, {"call_2", "ping", "{}"}};
  msgs[2] = message("tool", "sunny");
  msgs[2].tool_call_id = "call_1";
  const std::vector<ChatMessage> l = tools_as_text(msgs, r, ToolCallFormat::kLlama3);
  ASSERT_EQ(l.size(), 3u);
  EXPECT_EQ(l[0].content.find("Given the following functions"), 0u) << l[0].content;
  EXPECT_NE(l[0].content.find("Weather?"), std::string::npos);
  EXPECT_EQ(l[1].content, R"({"name": "get_weather", "parameters": {"city": "Oslo", "days": 1}})");
  EXPECT_EQ(l[2].role, "ipython");
  EXPECT_EQ(l[2].content, "sunny");
  const std::vector<ChatMessage> m = tools_as_text(msgs, r, ToolCallFormat::kMistral);
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[0].role, "system");
  EXPECT_EQ(m[0].content.find("[AVAILABLE_TOOLS] [{\"type\": \"function\""), 0u) << m[0].content;
  const ParsedOutput back = parse_tool_calls(ToolCallFormat::kMistral, m[2].content);
  ASSERT_EQ(back.calls.size(), 2u) << m[2].content;  // one [TOOL_CALLS] list for the turn
  EXPECT_EQ(back.calls[1].name, "ping");
  EXPECT_EQ(m[3].role, "tool");
  EXPECT_EQ(m[3].tool_call_id, "call_1");
}

}  // namespace
}  // namespace llms
