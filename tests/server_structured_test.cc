// Structured outputs end to end on stories260K, a model that knows no JSON: every
// shape below comes from the grammar. Expectations are checked by hand-written
// validators (std::regex, nlohmann's parser and field checks), not by the grammar
// module.
#include <gtest/gtest.h>

#include <regex>

#include "server_openai_schema.h"
#include "server_test_util.h"

namespace llms::test {
namespace {

class StructuredTest : public ::testing::Test {
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

  Json chat(Json body) {
    if (!body.contains("messages")) body["messages"] = {{{"role", "user"}, {"content", "Once upon a time"}}};
    const HttpResult r = http_post(port(), "/v1/chat/completions", body);
    EXPECT_EQ(r.status, 200) << r.body;
    const Json j = r.json();
    EXPECT_TRUE(check_chat_completion(j).empty()) << r.body;
    return j;
  }
  static std::string content(const Json& j) { return j["choices"][0]["message"]["content"].get<std::string>(); }
  static LlmServer* server_;
};
LlmServer* StructuredTest::server_ = nullptr;

const Json kPerson = {
    {"type", "object"},
    {"properties",
     {{"name", {{"type", "string"}, {"minLength", 1}, {"maxLength", 8}}},
      {"age", {{"type", "integer"}, {"minimum", 0}, {"maximum", 120}}},
      {"pet", {{"enum", {"cat", "dog", nullptr}}}},
      {"tags", {{"type", "array"}, {"items", {{"type", "boolean"}}}, {"maxItems", 3}}}}},
    {"required", {"name", "age"}},
    {"additionalProperties", false}};

// The schema above, checked by hand.
void expect_person(const std::string& text) {
  const Json v = Json::parse(text, nullptr, false);
  ASSERT_FALSE(v.is_discarded()) << text;
  ASSERT_TRUE(v.is_object()) << text;
  for (const auto& [k, x] : v.items()) {
    EXPECT_TRUE(k == "name" || k == "age" || k == "pet" || k == "tags") << text;
  }
  ASSERT_TRUE(v.contains("name") && v["name"].is_string()) << text;
  EXPECT_GE(v["name"].get<std::string>().size(), 1u);
  ASSERT_TRUE(v.contains("age") && v["age"].is_number_integer()) << text;
  EXPECT_TRUE(v["age"].get<int64_t>() >= 0 && v["age"].get<int64_t>() <= 120) << text;
  if (v.contains("pet")) {
    EXPECT_TRUE(v["pet"] == "cat" || v["pet"] == "dog" || v["pet"].is_null()) << text;
  }
  if (v.contains("tags")) {
    ASSERT_TRUE(v["tags"].is_array()) << text;
    EXPECT_LE(v["tags"].size(), 3u);
    for (const Json& t : v["tags"]) EXPECT_TRUE(t.is_boolean()) << text;
  }
}

TEST_F(StructuredTest, JsonSchemaResponseFormat) {
  for (int seed = 1; seed <= 8; ++seed) {
    const Json j = chat({{"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "person"}, {"schema", kPerson}}}}},
                         {"temperature", 1.0}, {"seed", seed}, {"max_tokens", 400}});
    EXPECT_EQ(j["choices"][0]["finish_reason"], "stop") << content(j);
    expect_person(content(j));
  }
}

TEST_F(StructuredTest, StreamedJsonSchemaIsTheSameText) {
  const Json body = {{"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "person"}, {"schema", kPerson}}}}},
                     {"temperature", 1.0}, {"seed", 11}, {"max_tokens", 400},
                     {"messages", {{{"role", "user"}, {"content", "Once upon a time"}}}}};
  const std::string whole = content(chat(body));
  Json streamed = body;
  streamed["stream"] = true;
  const SseResult s = http_stream(port(), "/v1/chat/completions", streamed);
  ASSERT_TRUE(s.done()) << s.raw;
  std::string text;
  for (const Json& c : s.chunks()) {
    EXPECT_TRUE(check_chat_chunk(c).empty()) << c.dump();
    for (const Json& ch : c["choices"]) {
      if (ch["delta"].contains("content")) text += ch["delta"]["content"].get<std::string>();
    }
  }
  EXPECT_EQ(text, whole);
  expect_person(text);
}

// stories260K writes stories inside JSON strings; a bias towards '"' and '}' (ids
// 436 and 128 in its vocabulary) lets some objects close within the budget.
TEST_F(StructuredTest, JsonObjectResponseFormatIsAnObject) {
  int complete = 0;
  for (int seed = 1; seed <= 24; ++seed) {
    const Json j = chat({{"response_format", {{"type", "json_object"}}}, {"temperature", 1.0}, {"seed", seed},
                         {"max_tokens", 300}, {"logit_bias", {{"436", 6}, {"128", 6}}}});
    const std::string text = content(j);
    ASSERT_EQ(text.front(), '{') << text;
    if (j["choices"][0]["finish_reason"] != "stop") continue;  // an unbounded object may run past max_tokens
    ++complete;
    const Json v = Json::parse(text, nullptr, false);
    EXPECT_TRUE(v.is_object()) << text;
  }
  EXPECT_GT(complete, 0);
  ::testing::Test::RecordProperty("complete", std::to_string(complete));
}

TEST_F(StructuredTest, GbnfGrammarOnCompletions) {
  const char* gbnf = R"(root ::= "Answer: " ("yes" | "no") ", " [0-9]{1,3} "!")";
  const std::regex want("Answer: (yes|no), [0-9]{1,3}!");
  for (int seed = 1; seed <= 6; ++seed) {
    const HttpResult r = http_post(port(), "/v1/completions",
                                   Json{{"prompt", "Once upon a time"}, {"grammar", gbnf}, {"temperature", 1.0},
                                        {"seed", seed}, {"max_tokens", 40}});
    ASSERT_EQ(r.status, 200) << r.body;
    const std::string text = r.json()["choices"][0]["text"];
    EXPECT_TRUE(std::regex_match(text, want)) << text;
    EXPECT_EQ(r.json()["choices"][0]["finish_reason"], "stop");
  }
}

TEST_F(StructuredTest, RegexExtension) {
  const std::regex want("[A-Z][a-z]{2,5} [0-9]{4}");
  for (int seed = 1; seed <= 6; ++seed) {
    const Json j = chat({{"regex", "[A-Z][a-z]{2,5} [0-9]{4}"}, {"temperature", 1.0}, {"seed", seed}, {"max_tokens", 30}});
    EXPECT_TRUE(std::regex_match(content(j), want)) << content(j);
  }
}

TEST_F(StructuredTest, MaxTokensCutsTheGrammarShortWithLength) {
  const Json j = chat({{"regex", "a{50}"}, {"temperature", 0}, {"max_tokens", 5}});
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  const std::string text = content(j);
  EXPECT_EQ(text, std::string(text.size(), 'a'));  // a prefix of what the grammar allows
}

TEST_F(StructuredTest, LogitBiasSteersAndBans) {
  const Json base = {{"prompt", "Once upon a time"}, {"max_tokens", 6}, {"temperature", 0}};
  const HttpResult plain = http_post(port(), "/v1/completions", base);
  ASSERT_EQ(plain.status, 200);
  const HttpResult tok = http_post(port(), "/tokenize", Json{{"prompt", "!"}, {"add_special_tokens", false}});
  ASSERT_EQ(tok.status, 200) << tok.body;
  const int bang = tok.json()["tokens"].back().get<int>();
  Json forced = base;
  forced["logit_bias"] = {{std::to_string(bang), 100}};
  const HttpResult f = http_post(port(), "/v1/completions", forced);
  ASSERT_EQ(f.status, 200) << f.body;
  EXPECT_EQ(f.json()["choices"][0]["text"], "!!!!!!");
  // Banning the token the plain run chose first changes its first token. The id is
  // the last token of the prompt followed by that first token's text.
  Json one = base;
  one["max_tokens"] = 1;
  const std::string first = http_post(port(), "/v1/completions", one).json()["choices"][0]["text"];
  const Json prompt_ids = http_post(port(), "/tokenize", Json{{"prompt", "Once upon a time"}}).json()["tokens"];
  const Json with_ids = http_post(port(), "/tokenize", Json{{"prompt", "Once upon a time" + first}}).json()["tokens"];
  ASSERT_EQ(with_ids.size(), prompt_ids.size() + 1);
  Json banned = one;
  banned["logit_bias"] = {{std::to_string(with_ids.back().get<int>()), -100}};
  const HttpResult b = http_post(port(), "/v1/completions", banned);
  ASSERT_EQ(b.status, 200);
  EXPECT_NE(b.json()["choices"][0]["text"], first);
}

TEST_F(StructuredTest, BadConstraintsAre400NamingTheParameter) {
  const struct {
    Json body;
    const char* param;
    const char* needle;
  } cases[] = {
      {{{"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "x"}, {"schema", {{"type", "object"}, {"not", {}}}}}}}}},
       "response_format", "unsupported JSON Schema keyword 'not'"},
      {{{"grammar", "root ::= (\"a\""}}, "grammar", "expected ')'"},
      {{{"grammar", "root ::= x"}}, "grammar", "rule 'x' is used"},
      {{{"regex", "(?=a)"}}, "regex", "lookaround"},
      {{{"logit_bias", {{"99999", 1}}}}, "logit_bias", "outside the vocabulary"},
  };
  for (const auto& c : cases) {
    Json body = c.body;
    body["messages"] = {{{"role", "user"}, {"content", "x"}}};
    const HttpResult r = http_post(port(), "/v1/chat/completions", body);
    EXPECT_EQ(r.status, 400) << r.body;
    const Json j = r.json();
    EXPECT_EQ(j["error"]["param"], c.param) << r.body;
    EXPECT_NE(j["error"]["message"].get<std::string>().find(c.needle), std::string::npos) << r.body;
  }
}

}  // namespace
}  // namespace llms::test
