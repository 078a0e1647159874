// vLLM's structured-output fields (structured_outputs.*, guided_*) and the JSON
// grammar's whitespace (bounded as llama.cpp bounds it; compact on request), end to
// end on stories260K. Outputs are checked by hand-written validators (std::regex,
// nlohmann's parser, a scanner of the whitespace outside strings), not by the grammar
// module.
#include <gtest/gtest.h>

#include <regex>
#include <set>

#include "server_test_util.h"

namespace llms::test {
namespace {

class VllmStructuredTest : public ::testing::Test {
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
  // A chat answer's choice 0 (finish_reason and content).
  Json chat(Json body) {
    if (!body.contains("messages")) body["messages"] = {{{"role", "user"}, {"content", "Once upon a time"}}};
    const HttpResult r = http_post(server_->port(), "/v1/chat/completions", body);
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json()["choices"][0];
  }
  HttpResult post(Json body) {
    body["messages"] = {{{"role", "user"}, {"content", "x"}}};
    return http_post(server_->port(), "/v1/chat/completions", body);
  }
  static LlmServer* server_;
};
LlmServer* VllmStructuredTest::server_ = nullptr;

const Json kPet = {{"type", "object"},
                   {"properties", {{"name", {{"type", "string"}, {"minLength", 1}, {"maxLength", 8}}},
                                   {"legs", {{"type", "integer"}, {"minimum", 0}, {"maximum", 8}}}}},
                   {"required", {"name", "legs"}},
                   {"additionalProperties", false}};

void expect_pet(const std::string& text) {
  const Json v = Json::parse(text, nullptr, false);
  ASSERT_TRUE(v.is_object()) << text;
  EXPECT_EQ(v.size(), 2u) << text;
  ASSERT_TRUE(v.contains("name") && v["name"].is_string()) << text;
  ASSERT_TRUE(v.contains("legs") && v["legs"].is_number_integer()) << text;
  EXPECT_TRUE(v["legs"].get<int>() >= 0 && v["legs"].get<int>() <= 8) << text;
}

// The runs of whitespace outside JSON strings, in order.
std::vector<std::string> gaps(const std::string& json) {
  std::vector<std::string> out;
  bool in_string = false, escaped = false;
  std::string run;
  for (const char c : json) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == ' ' || c == '\n' || c == '\t' || c == '\r') {
      run += c;
      continue;
    }
    if (!run.empty()) out.push_back(run);
    run.clear();
    if (c == '"') in_string = true;
  }
  if (!run.empty()) out.push_back(run);
  return out;
}

TEST_F(VllmStructuredTest, EveryJsonFieldGivesTheSchemasShape) {
  const Json bodies[] = {
      {{"guided_json", kPet}},
      {{"guided_json", kPet.dump()}},  // vLLM also takes the schema's JSON text
      {{"structured_outputs", {{"json", kPet}}}},
  };
  for (const Json& b : bodies) {
    for (int seed = 1; seed <= 3; ++seed) {
      Json body = b;
      body.update({{"temperature", 1.0}, {"seed", seed}, {"max_tokens", 200}});
      const Json c = chat(body);
      EXPECT_EQ(c["finish_reason"], "stop") << b.dump();
      expect_pet(c["message"]["content"].get<std::string>());
    }
  }
}

TEST_F(VllmStructuredTest, ChoiceIsOneOfTheStrings) {
  const Json choices = {"yes", "no", "a \"quoted\" \\ answer"};
  const std::set<std::string> allowed = {"yes", "no", "a \"quoted\" \\ answer"};
  std::set<std::string> seen;
  for (const char* field : {"guided_choice", "structured_outputs"}) {
    for (int seed = 1; seed <= 8; ++seed) {
      Json body = {{"temperature", 1.0}, {"seed", seed}, {"max_tokens", 20}};
      if (std::string(field) == "guided_choice") {
        body["guided_choice"] = choices;
      } else {
        body["structured_outputs"] = {{"choice", choices}};
      }
      const Json c = chat(body);
      const std::string text = c["message"]["content"];
      EXPECT_TRUE(allowed.count(text)) << text;
      EXPECT_EQ(c["finish_reason"], "stop");
      seen.insert(text);
    }
  }
  EXPECT_GE(seen.size(), 1u);
}

TEST_F(VllmStructuredTest, RegexAndGrammar) {
  const std::regex want("[A-Z][a-z]{2,5} [0-9]{4}");
  const char* gbnf = R"(root ::= "Answer: " ("yes" | "no"))";
  for (int seed = 1; seed <= 3; ++seed) {
    const Json base = {{"temperature", 1.0}, {"seed", seed}, {"max_tokens", 30}};
    for (const Json& extra : {Json{{"guided_regex", "[A-Z][a-z]{2,5} [0-9]{4}"}},
                              Json{{"structured_outputs", {{"regex", "[A-Z][a-z]{2,5} [0-9]{4}"}}}}}) {
      Json body = base;
      body.update(extra);
      const std::string text = chat(body)["message"]["content"];
      EXPECT_TRUE(std::regex_match(text, want)) << text;
    }
    for (const Json& extra : {Json{{"guided_grammar", gbnf}}, Json{{"structured_outputs", {{"grammar", gbnf}}}}}) {
      Json body = base;
      body.update(extra);
      const std::string text = chat(body)["message"]["content"];
      EXPECT_TRUE(text == "Answer: yes" || text == "Answer: no") << text;
    }
  }
  Json body = {{"structured_outputs", {{"json_object", true}}}, {"max_tokens", 5}, {"temperature", 0}};
  EXPECT_EQ(chat(body)["message"]["content"].get<std::string>().front(), '{');
}

TEST_F(VllmStructuredTest, TwoConstraintsOrUnknownFieldsAre400) {
  const struct {
    Json body;
    const char* param;
  } cases[] = {
      {{{"guided_json", kPet}, {"guided_regex", "a"}}, "guided_regex"},
      {{{"response_format", {{"type", "json_object"}}}, {"guided_choice", Json::array({"a"})}}, "guided_choice"},
      {{{"regex", "a"}, {"structured_outputs", {{"json", kPet}}}}, "structured_outputs.json"},
      {{{"structured_outputs", {{"json", kPet}, {"regex", "a"}}}}, "structured_outputs.regex"},
      {{{"structured_outputs", {{"choice", Json::array({"a"})}}}, {"guided_grammar", "root ::= \"a\""}}, "guided_grammar"},
      {{{"structured_outputs", {{"structural_tag", "x"}}}}, "structured_outputs.structural_tag"},
      {{{"structured_outputs", "json"}}, "structured_outputs"},
      {{{"guided_choice", Json::array()}}, "guided_choice"},
      {{{"guided_json", "{not json"}}, "guided_json"},
      {{{"guided_whitespace_pattern", " "}}, "guided_whitespace_pattern"},
      {{{"json_whitespace", "wide"}}, "json_whitespace"},
  };
  for (const auto& c : cases) {
    const HttpResult r = post(c.body);
    EXPECT_EQ(r.status, 400) << c.body.dump() << r.body;
    EXPECT_EQ(r.json()["error"]["param"], c.param) << r.body;
  }
}

// Default: each gap between tokens is nothing, one space, or one or two newlines and
// at most 20 spaces or tabs (llama.cpp's rule). Compact: no gap at all.
TEST_F(VllmStructuredTest, JsonWhitespaceIsBoundedOrNone) {
  const std::regex bounded("( |\n{1,2}[ \t]{0,20})");
  int gaps_seen = 0;
  for (int seed = 1; seed <= 12; ++seed) {
    const Json c = chat({{"response_format", {{"type", "json_object"}}}, {"temperature", 1.0}, {"seed", seed},
                         {"max_tokens", 120}, {"logit_bias", {{"436", 6}, {"128", 6}}}});
    for (const std::string& g : gaps(c["message"]["content"])) {
      EXPECT_TRUE(std::regex_match(g, bounded)) << Json(g).dump();
      ++gaps_seen;
    }
  }
  EXPECT_GT(gaps_seen, 0);  // the model does write whitespace where it may
  for (const Json& compact : {Json{{"json_whitespace", "compact"}},
                              Json{{"structured_outputs", {{"json", kPet}, {"disable_any_whitespace", true}}}}}) {
    for (int seed = 1; seed <= 6; ++seed) {
      Json body = {{"temperature", 1.0}, {"seed", seed}, {"max_tokens", 120}};
      if (!compact.contains("structured_outputs")) body["response_format"] = {{"type", "json_schema"}, {"json_schema", {{"name", "pet"}, {"schema", kPet}}}};
      body.update(compact);
      const Json c = chat(body);
      const std::string text = c["message"]["content"];
      EXPECT_TRUE(gaps(text).empty()) << text;
      if (c["finish_reason"] == "stop") expect_pet(text);
    }
  }
}

// The SDK check's request (tests/sdk/openai_sdk_check.mjs: its schema, in its key
// order, its message and seeds) with max_tokens 64: every answer ends by itself and
// is valid.
TEST_F(VllmStructuredTest, SdkStructuredCheckFitsIn64Tokens) {
  const auto person = nlohmann::ordered_json::parse(R"({"type": "object", "properties": {
      "name": {"type": "string", "minLength": 1, "maxLength": 8},
      "age": {"type": "integer", "minimum": 0, "maximum": 120},
      "pet": {"enum": ["cat", "dog", null]}},
    "required": ["name", "age", "pet"], "additionalProperties": false})");
  for (int seed = 1; seed <= 5; ++seed) {
    nlohmann::ordered_json body = {
        {"model", "stories260K"},
        {"messages", {{{"role", "user"}, {"content", "What is the weather in Paris?"}}}},
        {"temperature", 1},
        {"seed", seed},
        {"max_tokens", 64},
        {"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "person"}, {"schema", person}, {"strict", true}}}}}};
    const HttpResult r = http_post(server_->port(), "/v1/chat/completions", body.dump());
    ASSERT_EQ(r.status, 200) << r.body;
    const Json j = r.json();
    const Json& c = j["choices"][0];
    const std::string text = c["message"]["content"];
    EXPECT_EQ(c["finish_reason"], "stop") << seed << ": " << text;
    const Json v = Json::parse(text, nullptr, false);
    ASSERT_TRUE(v.is_object()) << text;
    EXPECT_EQ(v.size(), 3u) << text;
  }
}

}  // namespace
}  // namespace llms::test
