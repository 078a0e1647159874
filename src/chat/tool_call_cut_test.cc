// A tool-calling answer read whole and read as a stream agree, in every call format
// and wherever max_tokens cuts it: the stream's deltas (ToolCallStreamer fed growing
// prefixes in random pieces, as the server feeds it) put together are the calls the
// whole answer reports (parse_tool_calls when it ended, parse_cut_tool_calls when cut).
#include <gtest/gtest.h>

#include <random>

#include "chat/tool_call_stream.h"
#include "chat/tool_calls.h"

namespace llms {
namespace {

using Json = nlohmann::ordered_json;

// What a stream reports for `text`: content until the first call's marker (all of it
// when no call's name completes), then the calls with their arguments as sent.
ParsedOutput as_streamed(ToolCallFormat f, std::string_view text, std::mt19937& rng) {
  ParsedOutput out;
  ToolCallStreamer streamer;
  size_t start = std::string_view::npos, at = 0;
  while (at < text.size()) {
    at = std::min(text.size(), at + std::uniform_int_distribution<size_t>(1, 7)(rng));
    const std::string_view so_far = text.substr(0, at);
    if (start == std::string_view::npos) start = tool_call_start(f, so_far);
    if (start == std::string_view::npos) continue;
    for (ToolCallDelta& d : streamer.feed(so_far.substr(start))) {
      if (d.head) {
        EXPECT_EQ(d.index, static_cast<int>(out.calls.size()));
        out.calls.push_back(ParsedToolCall{d.name, ""});
      } else {
        EXPECT_EQ(d.index + 1, static_cast<int>(out.calls.size()));
        out.calls.back().arguments += d.arguments;
      }
    }
  }
  out.content = std::string(out.calls.empty() ? text : text.substr(0, start));
  return out;
}

// Arguments compare as JSON when both sides are whole objects, else as text.
void expect_same(const ParsedOutput& whole, const ParsedOutput& streamed, const std::string& what) {
  EXPECT_EQ(whole.content, streamed.content) << what;
  ASSERT_EQ(whole.calls.size(), streamed.calls.size()) << what;
  for (size_t i = 0; i < whole.calls.size(); ++i) {
    EXPECT_EQ(whole.calls[i].name, streamed.calls[i].name) << what;
    const Json a = Json::parse(whole.calls[i].arguments, nullptr, false);
    const Json b = Json::parse(streamed.calls[i].arguments, nullptr, false);
    if (!a.is_discarded() && !b.is_discarded()) {
      EXPECT_EQ(a, b) << what;
    } else {
      EXPECT_EQ(whole.calls[i].arguments, streamed.calls[i].arguments) << what;
    }
  }
}

// Answers with calls in format f, written by the format itself (tools_as_text replays
// an assistant's calls as the text the model would write).
std::vector<std::string> answers(ToolCallFormat f) {
  ToolRequest r;
  r.tools.push_back(ToolDefinition{"get_weather", "", Json::object(), Json::object()});
  r.tools.push_back(ToolDefinition{"ping", "", Json::object(), Json::object()});
  std::vector<std::string> out;
  const std::vector<std::vector<ChatToolCall>> call_sets = {
      {{"c1", "get_weather", R"({"city": "Pa\"r}is", "days": [1, {"x": 2}]})"}},
      {{"c1", "get_weather", R"({"city":"Rome","days":3})"}, {"c2", "ping", "{}"}},
  };
  for (const auto& calls : call_sets) {
    if (f == ToolCallFormat::kLlama3 && calls.size() > 1) continue;  // llama3 writes one call
    std::vector<ChatMessage> msgs(2);
    msgs[0].role = "user";
    msgs[0].content = "Weather?";
    msgs[1].role = "assistant";
    msgs[1].content_null = true;
    msgs[1].tool_calls = calls;
    out.push_back(tools_as_text(msgs, r, f).back().content);
  }
  return out;
}

TEST(ToolCallCutTest, WholeAndStreamedAgreeAtEveryCut) {
  std::mt19937 rng(56);
  for (ToolCallFormat f : {ToolCallFormat::kHermes, ToolCallFormat::kLlama3, ToolCallFormat::kMistral}) {
    for (const std::string& text : answers(f)) {
      ASSERT_FALSE(parse_tool_calls(f, text).calls.empty()) << text;
      expect_same(parse_tool_calls(f, text), as_streamed(f, text, rng), "whole: " + text);
      for (size_t cut = 0; cut < text.size(); ++cut) {
        const std::string_view part = std::string_view(text).substr(0, cut);
        expect_same(parse_cut_tool_calls(f, part), as_streamed(f, part, rng), "cut at " + std::to_string(cut) + ": " + text);
      }
    }
  }
}

// A cut inside the only call: that call, named, with the arguments written so far.
TEST(ToolCallCutTest, ACutCallIsACall) {
  const ParsedOutput p = parse_cut_tool_calls(ToolCallFormat::kHermes,
                                              "Sure.<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"ci");
  EXPECT_EQ(p.content, "Sure.");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].name, "get_weather");
  EXPECT_EQ(p.calls[0].arguments, "{\"ci");
  const ParsedOutput early = parse_cut_tool_calls(ToolCallFormat::kHermes, "Sure.<tool_call>\n{\"na");
  EXPECT_TRUE(early.calls.empty());
  EXPECT_EQ(early.content, "Sure.<tool_call>\n{\"na");
}

}  // namespace
}  // namespace llms
