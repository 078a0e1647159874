// Property test: random JSON Schemas drawn from the supported subset, constrained
// sampling on stories260K at temperature 1 (the model knows no JSON, so the grammar
// does all the work), and every output must parse (nlohmann's parser) and validate
// under its schema with the tests' own validator, json_schema_check.h — a value
// walker with std::regex for patterns, sharing no code with the grammar module's
// schema lowering. The schemas are bounded (strings have a maxLength, a format or an
// anchored pattern; arrays a maxItems), so every answer can finish in max_tokens.
#include <gtest/gtest.h>

#include <random>

#include "json_schema_check.h"
#include "server_test_util.h"

namespace llms::test {
namespace {

using SchemaJson = nlohmann::ordered_json;

class SchemaGenerator {
 public:
  explicit SchemaGenerator(uint64_t seed) : rng_(seed) {}

  // A whole schema: sometimes with $defs the body refers to.
  SchemaJson root() {
    defs_ = SchemaJson::object();
    if (chance(0.25)) {
      const int n = pick(1, 2);
      for (int i = 0; i < n; ++i) defs_["d" + std::to_string(i)] = value(1);
    }
    SchemaJson s = chance(0.7) ? object(0) : value(0);
    if (chance(0.08)) s = tree();
    if (!defs_.empty()) s["$defs"] = defs_;
    return s;
  }

 private:
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  template <typename T>
  const T& one_of(const std::vector<T>& v) { return v[static_cast<size_t>(pick(0, static_cast<int>(v.size()) - 1))]; }

  SchemaJson value(int depth) {
    const int kind = pick(0, depth >= 2 ? 5 : 9);
    switch (kind) {
      case 0: return string();
      case 1: return integer();
      case 2: return number();
      case 3: return literal();
      case 4: return SchemaJson{{"type", one_of<std::string>({"boolean", "null"})}};
      case 5: return defs_.empty() ? string() : SchemaJson{{"$ref", "#/$defs/" + std::string(defs_.begin().key())}};
      case 6: return object(depth + 1);
      case 7: return array(depth + 1);
      case 8: return combination(depth + 1);
      default: return SchemaJson{{"type", SchemaJson::array({"string", "null"})}, {"maxLength", pick(0, 6)}};
    }
  }

  SchemaJson string() {
    switch (pick(0, 3)) {
      case 0: {
        const int lo = pick(0, 3);
        SchemaJson s = {{"type", "string"}, {"maxLength", lo + pick(0, 8)}};
        if (chance(0.5)) s["minLength"] = lo;
        return s;
      }
      case 1:
        return {{"type", "string"},
                {"pattern", one_of<std::string>({"^[a-z]{1,6}$", "^[A-Z][a-z]{0,4}$", "^(ab|cd){1,3}$", "^[0-9]{3}-[0-9]{2}$",
                                                 "^(yes|no|maybe)$", "^\\d{2}\\.\\d$", "^[^\"\\\\]{2,4}$"})}};
      default:
        return {{"type", "string"}, {"format", one_of<std::string>({"date", "time", "date-time", "uuid", "email"})}};
    }
  }

  SchemaJson integer() {
    SchemaJson s = {{"type", "integer"}};
    const int lo = pick(-1000, 1000);
    if (chance(0.6)) s[chance(0.5) ? "minimum" : "exclusiveMinimum"] = lo;
    if (chance(0.6)) s[chance(0.5) ? "maximum" : "exclusiveMaximum"] = lo + pick(2, 5000);
    return s;
  }

  SchemaJson number() {
    SchemaJson s = {{"type", "number"}};
    const double lo = pick(-400, 400) / 4.0;
    if (chance(0.6)) s["minimum"] = lo;
    if (chance(0.6)) s["maximum"] = lo + pick(1, 400) / 8.0;
    return s;
  }

  SchemaJson literal() {
    static const std::vector<SchemaJson> values = {
        "cat", "a\"b", "x\\y", "ü日本", "", 0, -17, 3.5, true, false, nullptr,
        SchemaJson{{"k", 1}}, SchemaJson::array({1, "two"})};
    if (chance(0.3)) return {{"const", one_of(values)}};
    SchemaJson e = SchemaJson::array();
    const int n = pick(1, 4);
    for (int i = 0; i < n; ++i) {
      const SchemaJson& v = one_of(values);
      if (std::find(e.begin(), e.end(), v) == e.end()) e.push_back(v);
    }
    return {{"enum", e}};
  }

  SchemaJson object(int depth) {
    SchemaJson props = SchemaJson::object();
    SchemaJson required = SchemaJson::array();
    const int n = pick(0, depth == 0 ? 5 : 3);
    static const std::vector<std::string> names = {"name", "age", "id", "tags", "when", "x", "deep", "é", "a b", "q\"k"};
    for (int i = 0; i < n; ++i) {
      const std::string key = one_of(names);
      if (props.contains(key)) continue;
      props[key] = value(depth);
      if (chance(0.6)) required.push_back(key);
    }
    SchemaJson s = {{"type", "object"}, {"properties", props}};
    if (!required.empty()) s["required"] = required;
    // No extra keys: their names are free strings, and stories260K writes stories in
    // them until max_tokens (extra keys are covered by grammar/json_schema_test).
    s["additionalProperties"] = false;
    return s;
  }

  SchemaJson array(int depth) {
    if (chance(0.3)) {
      SchemaJson prefix = SchemaJson::array();
      const int n = pick(1, 3);
      for (int i = 0; i < n; ++i) prefix.push_back(value(depth));
      return {{"type", "array"}, {"prefixItems", prefix}, {"items", false}};
    }
    const int lo = pick(0, 2);
    return {{"type", "array"}, {"items", value(depth)}, {"minItems", lo}, {"maxItems", lo + pick(0, 2)}};
  }

  // anyOf over anything; oneOf over branches of different types (provably disjoint).
  SchemaJson combination(int depth) {
    if (chance(0.5)) return {{"anyOf", SchemaJson::array({value(depth), value(depth)})}};
    SchemaJson branches = SchemaJson::array({string(), integer()});
    if (chance(0.5)) branches.push_back(SchemaJson{{"type", "boolean"}});
    return {{"oneOf", branches}};
  }

  // A recursive schema: a chain of nodes through $ref "#".
  SchemaJson tree() {
    return {{"type", "object"},
            {"properties", {{"v", integer()}, {"next", {{"anyOf", SchemaJson::array({{{"$ref", "#"}}, {{"type", "null"}}})}}}}},
            {"required", SchemaJson::array({"v", "next"})},
            {"additionalProperties", false}};
  }

  std::mt19937_64 rng_;
  SchemaJson defs_;
};

TEST(SchemaPropertyTest, RandomSchemasGiveValidOutputs) {
  if (!have_stories()) GTEST_SKIP() << "needs " << shared_dir() << "/models/stories260K.gguf";
  const auto server = start_server(stories_path());
  constexpr int kSchemas = 500;
  int finished = 0;
  for (int i = 0; i < kSchemas; ++i) {
    SchemaGenerator gen(1000 + static_cast<uint64_t>(i));
    const SchemaJson schema = gen.root();
    const SchemaJson body = {{"messages", {{{"role", "user"}, {"content", "Once upon a time"}}}},
                             {"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "s"}, {"schema", schema}}}}},
                             {"temperature", 1.0}, {"seed", i}, {"max_tokens", 1500}};
    const HttpResult r = http_post(server->port(), "/v1/chat/completions", body.dump());
    ASSERT_EQ(r.status, 200) << schema.dump() << "\n" << r.body;
    const Json reply = r.json();
    const Json& choice = reply["choices"][0];
    const std::string text = choice["message"]["content"];
    // A grammar cut short by max_tokens ends with length; none of these should be.
    EXPECT_EQ(choice["finish_reason"], "stop") << schema.dump() << "\n" << text;
    if (choice["finish_reason"] != "stop") continue;
    ++finished;
    const Json v = Json::parse(text, nullptr, false);
    ASSERT_FALSE(v.is_discarded()) << schema.dump() << "\n" << text;
    EXPECT_EQ(schema_violation(schema, v), "") << schema.dump() << "\n" << text;
  }
  EXPECT_EQ(finished, kSchemas);
}

// The validator itself refuses what it should, so that a pass above means something.
TEST(JsonSchemaCheckTest, RefusesInvalidValues) {
  const auto bad = [](const char* schema, const char* value) {
    return !schema_violation(SchemaJson::parse(schema), Json::parse(value)).empty();
  };
  EXPECT_TRUE(bad(R"({"type":"integer"})", "1.5"));
  EXPECT_FALSE(bad(R"({"type":"integer"})", "2"));
  EXPECT_TRUE(bad(R"({"type":"object","properties":{"a":{"type":"string"}},"required":["a"]})", "{}"));
  EXPECT_TRUE(bad(R"({"type":"object","properties":{},"additionalProperties":false})", R"({"x":1})"));
  EXPECT_TRUE(bad(R"({"type":"string","maxLength":2})", R"("日本語")"));
  EXPECT_FALSE(bad(R"({"type":"string","maxLength":3})", R"("日本語")"));
  EXPECT_TRUE(bad(R"({"type":"string","pattern":"^[a-z]{1,6}$"})", R"("abc1")"));
  EXPECT_TRUE(bad(R"({"type":"string","format":"date"})", R"("2023-02-29")"));
  EXPECT_FALSE(bad(R"({"type":"string","format":"date"})", R"("2024-02-29")"));
  EXPECT_TRUE(bad(R"({"type":"string","format":"time"})", R"("24:00:00Z")"));
  EXPECT_TRUE(bad(R"({"type":"string","format":"uuid"})", R"("0123")"));
  EXPECT_TRUE(bad(R"({"type":"string","format":"email"})", R"("a@b")"));
  EXPECT_TRUE(bad(R"({"type":"number","exclusiveMaximum":3})", "3"));
  EXPECT_TRUE(bad(R"({"type":"array","prefixItems":[{"type":"null"}],"items":false})", "[null, 1]"));
  EXPECT_TRUE(bad(R"({"type":"array","items":{"type":"boolean"},"minItems":2})", "[true]"));
  EXPECT_TRUE(bad(R"({"oneOf":[{"type":"integer"},{"type":"number"}]})", "3"));
  EXPECT_TRUE(bad(R"({"anyOf":[{"type":"integer"},{"type":"null"}]})", R"("x")"));
  EXPECT_TRUE(bad(R"({"enum":["a",{"k":1}]})", R"({"k":2})"));
  EXPECT_TRUE(bad(R"({"$defs":{"p":{"type":"integer","minimum":0}},"type":"array","items":{"$ref":"#/$defs/p"}})", "[1,-1]"));
  EXPECT_TRUE(bad(R"({"type":"object","properties":{"n":{"anyOf":[{"$ref":"#"},{"type":"null"}]}},"required":["n"]})",
                  R"({"n":{"n":{}}})"));
}

}  // namespace
}  // namespace llms::test
