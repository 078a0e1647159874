// Tool calls cut by max_tokens, end to end on stories260K: for every call format (the
// chat template picks it) and random cuts, the streamed answer put together from its
// deltas reports what the whole answer reports — the same finish_reason, content and
// calls, the cut call included with the arguments written so far. Greedy, so both
// paths run the same tokens.
#include <gtest/gtest.h>

#include <random>

#include "server_test_util.h"

namespace llms::test {
namespace {

const Json kTools = Json::array(
    {{{"type", "function"},
      {"function", {{"name", "get_weather"},
                    {"parameters", {{"type", "object"},
                                    {"properties", {{"city", {{"type", "string"}, {"maxLength", 12}}},
                                                    {"days", {{"type", "integer"}, {"minimum", 1}, {"maximum", 7}}}}},
                                    {"required", {"city", "days"}},
                                    {"additionalProperties", false}}}}}},
     {{"type", "function"}, {"function", {{"name", "ping"}, {"parameters", {{"type", "object"}}}}}}});

struct Answer {
  std::string finish, content;
  std::vector<std::pair<std::string, std::string>> calls;  // name, arguments
};

Answer whole_answer(const Json& j) {
  const Json& c = j["choices"][0];
  Answer a{c["finish_reason"], c["message"]["content"].is_string() ? c["message"]["content"].get<std::string>() : ""};
  if (c["message"].contains("tool_calls")) {
    for (const Json& t : c["message"]["tool_calls"]) a.calls.emplace_back(t["function"]["name"], t["function"]["arguments"]);
  }
  return a;
}

Answer streamed_answer(const SseResult& s) {
  Answer a;
  for (const Json& chunk : s.chunks()) {
    if (chunk["choices"].empty()) continue;
    const Json& c = chunk["choices"][0];
    if (c["finish_reason"].is_string()) a.finish = c["finish_reason"];
    const Json& d = c["delta"];
    if (d.contains("content") && d["content"].is_string()) a.content += d["content"].get<std::string>();
    if (!d.contains("tool_calls")) continue;
    for (const Json& t : d["tool_calls"]) {
      const size_t i = t["index"].get<size_t>();
      if (i == a.calls.size()) a.calls.emplace_back(t["function"].value("name", ""), "");
      a.calls.at(i).second += t["function"].value("arguments", "");
    }
  }
  return a;
}

// Whole arguments compare as JSON (the whole answer reformats them); cut ones as text.
void expect_same(const Answer& w, const Answer& s, const std::string& what) {
  EXPECT_EQ(w.finish, s.finish) << what;
  EXPECT_EQ(w.content, s.content) << what;
  ASSERT_EQ(w.calls.size(), s.calls.size()) << what;
  for (size_t i = 0; i < w.calls.size(); ++i) {
    EXPECT_EQ(w.calls[i].first, s.calls[i].first) << what;
    const Json a = Json::parse(w.calls[i].second, nullptr, false), b = Json::parse(s.calls[i].second, nullptr, false);
    if (!a.is_discarded() && !b.is_discarded()) {
      EXPECT_EQ(a, b) << what;
    } else {
      EXPECT_EQ(w.calls[i].second, s.calls[i].second) << what;
    }
  }
}

TEST(ToolCallCut, StreamedAndWholeAgreeForEveryFormat) {
  if (!have_stories()) GTEST_SKIP() << "needs " << shared_dir() << "/models/stories260K.gguf";
  std::mt19937 rng(8);
  for (const char* tmpl : {"chatml", "llama3", "mistral"}) {
    auto server = start_server(stories_path(), [&](ServeConfig& c) { c.server.chat_template = tmpl; });
    bool saw_cut_call = false;
    for (int trial = 0; trial < 12; ++trial) {
      const int max_tokens = std::uniform_int_distribution<int>(2, 60)(rng);
      Json body = {{"messages", {{{"role", "user"}, {"content", "Weather in Paris, then ping."}}}},
                   {"tools", kTools},
                   {"tool_choice", trial % 2 ? "required" : "auto"},
                   {"max_tokens", max_tokens},
                   {"temperature", 0},
                   {"seed", trial}};
      const HttpResult whole = http_post(server->port(), "/v1/chat/completions", body);
      ASSERT_EQ(whole.status, 200) << whole.body;
      body["stream"] = true;
      const Answer w = whole_answer(whole.json());
      const Answer s = streamed_answer(http_stream(server->port(), "/v1/chat/completions", body));
      expect_same(w, s, std::string(tmpl) + " max_tokens " + std::to_string(max_tokens) + ": " + whole.body);
      if (w.finish == "length" && !w.calls.empty()) saw_cut_call = true;
    }
    EXPECT_TRUE(saw_cut_call) << tmpl << ": no trial cut a call; the test checked nothing of the cut path";
  }
}

}  // namespace
}  // namespace llms::test
