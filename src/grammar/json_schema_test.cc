#include "grammar/json_schema.h"

#include <gtest/gtest.h>

#include "grammar/testing/grammar_test_util.h"

namespace llms {
namespace {

using testing::matches;

std::shared_ptr<const Grammar> schema(const std::string& text) {
  auto g = json_schema_grammar(SchemaJson::parse(text));
  EXPECT_TRUE(g.ok()) << text << ": " << g.status().to_string();
  return g.ok() ? std::make_shared<const Grammar>(std::move(g).value()) : nullptr;
}

std::string error_of(const std::string& text) {
  auto g = json_schema_grammar(SchemaJson::parse(text));
  return g.ok() ? "" : g.status().message();
}

TEST(JsonSchema, ObjectWithRequiredAndOptionalProperties) {
  auto g = schema(R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}},
                      "required":["a"],"additionalProperties":false})");
  EXPECT_TRUE(matches(g, R"({"a":1})"));
  EXPECT_TRUE(matches(g, R"({"a": -20, "b": "x"})"));
  EXPECT_TRUE(matches(g, "{\n  \"a\": 0,\n  \"b\": \"\"\n}"));
  EXPECT_FALSE(matches(g, R"({"b":"x"})"));          // a is required
  EXPECT_FALSE(matches(g, R"({"a":1,"c":2})"));      // no extra properties
  EXPECT_FALSE(matches(g, R"({"a":01})"));           // no leading zeros
  EXPECT_FALSE(matches(g, R"({"a":1,})"));
  EXPECT_FALSE(matches(g, R"({"a":1.5})"));
}

TEST(JsonSchema, AllOptionalPropertiesAllowTheEmptyObject) {
  auto g = schema(R"({"properties":{"x":{"type":"boolean"},"y":{"type":"null"}},"additionalProperties":false,
                      "type":"object"})");
  EXPECT_TRUE(matches(g, "{}"));
  EXPECT_TRUE(matches(g, "{ }"));
  EXPECT_TRUE(matches(g, R"({"y":null})"));
  EXPECT_TRUE(matches(g, R"({"x":true,"y":null})"));
  EXPECT_FALSE(matches(g, R"({"y":null,"x":true})"));  // properties come in schema order
}

TEST(JsonSchema, ExtraPropertiesMustNotReuseADeclaredName) {
  auto g = schema(R"({"type":"object","properties":{"ab":{"type":"integer"}},"additionalProperties":{"type":"string"}})");
  EXPECT_TRUE(matches(g, R"({"ab":1,"a":"x"})"));
  EXPECT_TRUE(matches(g, R"({"abc":"x"})"));
  EXPECT_TRUE(matches(g, R"({"":"x","b":"y"})"));
  EXPECT_FALSE(matches(g, R"({"ab":"x"})"));   // "ab" is declared: its value is an integer
  EXPECT_FALSE(matches(g, R"({"a\u0062":"x"})"));  // no escapes in extra keys
  EXPECT_FALSE(matches(g, R"({"x":1})"));      // extra values are strings
}

TEST(JsonSchema, ArraysWithPrefixItemsAndBounds) {
  auto g = schema(R"({"type":"array","prefixItems":[{"const":"a"},{"type":"integer"}],"items":{"type":"boolean"},
                      "minItems":1,"maxItems":3})");
  EXPECT_TRUE(matches(g, R"(["a"])"));
  EXPECT_TRUE(matches(g, R"(["a", 5])"));
  EXPECT_TRUE(matches(g, R"(["a",5,true])"));
  EXPECT_FALSE(matches(g, "[]"));
  EXPECT_FALSE(matches(g, R"(["a",5,true,false])"));
  EXPECT_FALSE(matches(g, R"([5])"));
  auto closed = schema(R"({"type":"array","prefixItems":[{"type":"null"}],"items":false})");
  EXPECT_TRUE(matches(closed, "[]"));
  EXPECT_TRUE(matches(closed, "[null]"));
  EXPECT_FALSE(matches(closed, "[null,null]"));
  auto many = schema(R"({"type":"array","items":{"type":"integer"},"minItems":2})");
  EXPECT_FALSE(matches(many, "[1]"));
  EXPECT_TRUE(matches(many, "[1,2,3,4]"));
}

TEST(JsonSchema, StringLengthsCountCharactersAndEscapes) {
  auto g = schema(R"({"type":"string","minLength":2,"maxLength":3})");
  EXPECT_TRUE(matches(g, R"("ab")"));
  EXPECT_TRUE(matches(g, "\"\xC3\xA9\xC3\xA9\""));  // two characters, four bytes
  EXPECT_TRUE(matches(g, R"("a\n\u00e9")"));
  EXPECT_FALSE(matches(g, R"("a")"));
  EXPECT_FALSE(matches(g, R"("abcd")"));
  EXPECT_FALSE(matches(g, R"("a\ud83d")"));  // a surrogate escape is never written
  EXPECT_FALSE(matches(g, "\"a\nb\""));      // raw control characters are not JSON
}

TEST(JsonSchema, EnumConstAndTypeLists) {
  auto e = schema(R"({"enum":["red",3,null,{"k":[1]}]})");
  EXPECT_TRUE(matches(e, R"("red")"));
  EXPECT_TRUE(matches(e, "3"));
  EXPECT_TRUE(matches(e, "null"));
  EXPECT_TRUE(matches(e, R"({"k":[1]})"));
  EXPECT_FALSE(matches(e, R"("blue")"));
  auto t = schema(R"({"type":["string","null"],"maxLength":1})");
  EXPECT_TRUE(matches(t, "null"));
  EXPECT_TRUE(matches(t, R"("x")"));
  EXPECT_FALSE(matches(t, "1"));
}

// Every integer in a window, against the bounds by hand.
TEST(JsonSchema, IntegerRangesAreExact) {
  auto g = schema(R"({"type":"integer","minimum":-123,"exclusiveMaximum":4568})");
  for (int v = -1500; v <= 6000; v += 7) {
    EXPECT_EQ(matches(g, std::to_string(v)), v >= -123 && v <= 4567) << v;
  }
  for (const int v : {-123, -100, -99, -10, -9, -1, 0, 9, 10, 99, 100, 999, 1000, 4567}) {
    EXPECT_TRUE(matches(g, std::to_string(v))) << v;
  }
  EXPECT_FALSE(matches(g, "-0"));
  EXPECT_FALSE(matches(g, "007"));
  auto positive = schema(R"({"type":"integer","exclusiveMinimum":0})");
  EXPECT_FALSE(matches(positive, "0"));
  EXPECT_TRUE(matches(positive, "1"));
  EXPECT_TRUE(matches(positive, "9999999999999999"));
  EXPECT_FALSE(matches(positive, "-5"));
}

TEST(JsonSchema, NumberBoundsHoldForEveryFraction) {
  auto g = schema(R"({"type":"number","minimum":-2.5,"maximum":3})");
  EXPECT_TRUE(matches(g, "3"));
  EXPECT_TRUE(matches(g, "2.999"));
  EXPECT_TRUE(matches(g, "-2"));
  EXPECT_TRUE(matches(g, "-1.75"));   // (-2, -1] fits inside [-2.5, 3]
  EXPECT_FALSE(matches(g, "3.5"));
  EXPECT_FALSE(matches(g, "-2.25"));  // within the bounds, but -2.F could reach -2.9
  EXPECT_FALSE(matches(g, "1e2"));    // no exponents with bounds
  auto free_number = schema(R"({"type":"number"})");
  EXPECT_TRUE(matches(free_number, "-0.5e+12"));
  EXPECT_TRUE(matches(free_number, "12"));
  EXPECT_FALSE(matches(free_number, "1e123"));  // at most two exponent digits
  EXPECT_FALSE(matches(free_number, ".5"));
}

TEST(JsonSchema, Formats) {
  auto date = schema(R"({"type":"string","format":"date"})");
  EXPECT_TRUE(matches(date, R"("2024-02-28")"));
  EXPECT_TRUE(matches(date, R"("1999-12-31")"));
  EXPECT_FALSE(matches(date, R"("2024-02-30")"));
  EXPECT_FALSE(matches(date, R"("2024-04-31")"));
  EXPECT_FALSE(matches(date, R"("2024-13-01")"));
  auto dt = schema(R"({"type":"string","format":"date-time"})");
  EXPECT_TRUE(matches(dt, R"("2024-05-01T23:59:59Z")"));
  EXPECT_TRUE(matches(dt, R"("2024-05-01T00:00:00.123+02:00")"));
  EXPECT_FALSE(matches(dt, R"("2024-05-01T24:00:00Z")"));
  EXPECT_FALSE(matches(dt, R"("2024-05-01 10:00:00Z")"));
  auto uuid = schema(R"({"type":"string","format":"uuid"})");
  EXPECT_TRUE(matches(uuid, R"("123e4567-e89b-12d3-a456-426614174000")"));
  EXPECT_FALSE(matches(uuid, R"("123e4567e89b12d3a456426614174000")"));
  auto email = schema(R"({"type":"string","format":"email"})");
  EXPECT_TRUE(matches(email, R"("a.b+c@example.co.uk")"));
  EXPECT_FALSE(matches(email, R"("no-at-sign.com")"));
}

TEST(JsonSchema, PatternIsASearchUnlessAnchored) {
  auto g = schema(R"({"type":"string","pattern":"^[A-Z]{2}-\\d+$"})");
  EXPECT_TRUE(matches(g, R"("AB-12")"));
  EXPECT_FALSE(matches(g, R"("xAB-12")"));
  auto search = schema(R"({"type":"string","pattern":"\\d"})");
  EXPECT_TRUE(matches(search, R"("abc5def")"));
  EXPECT_FALSE(matches(search, R"("abc")"));
}

TEST(JsonSchema, RefsDefsAndRecursion) {
  auto g = schema(R"({"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},
                      "next":{"anyOf":[{"$ref":"#/$defs/node"},{"type":"null"}]}},"required":["v","next"],
                      "additionalProperties":false}},"$ref":"#/$defs/node"})");
  EXPECT_TRUE(matches(g, R"({"v":1,"next":{"v":2,"next":null}})"));
  EXPECT_FALSE(matches(g, R"({"v":1,"next":{"v":2}})"));
  auto root = schema(R"({"type":"array","items":{"$ref":"#"},"maxItems":2})");
  EXPECT_TRUE(matches(root, "[[],[[]]]"));
  EXPECT_FALSE(matches(root, "[[],[],[]]"));
}

TEST(JsonSchema, EmptySchemaIsAnyValue) {
  auto g = schema("{}");
  for (const char* v : {"1", "\"s\"", "[1,{\"a\":null}]", "true", "{}", "-0.5"}) EXPECT_TRUE(matches(g, v)) << v;
  EXPECT_FALSE(matches(g, "nul"));
}

TEST(JsonSchema, OneOfNeedsDisjointBranches) {
  EXPECT_EQ(error_of(R"({"oneOf":[{"type":"string"},{"type":"string","maxLength":3}]})"),
            "json_schema: 'oneOf' branches 0 and 1 may match the same value, which a grammar cannot exclude; use "
            "'anyOf', or make the branches differ in type, in const/enum values, or in a required property's const "
            "(at #)");
  EXPECT_EQ(error_of(R"({"oneOf":[{"type":"string"},{"type":"integer"},{"enum":[true]}]})"), "");
  EXPECT_EQ(error_of(R"({"oneOf":[{"enum":["a","b"]},{"const":"c"}]})"), "");
  EXPECT_EQ(error_of(R"({"oneOf":[{"type":"object","properties":{"k":{"const":"x"}},"required":["k"]},
                                  {"type":"object","properties":{"k":{"const":"y"}},"required":["k"]}]})"),
            "");
}

TEST(JsonSchema, RefusalsNameTheKeywordAndWhere) {
  EXPECT_EQ(error_of(R"({"type":"object","properties":{"a":{"allOf":[{}]}}})"),
            "json_schema: unsupported JSON Schema keyword 'allOf' (at #/properties/a)");
  EXPECT_EQ(error_of(R"({"type":"array","uniqueItems":true})"),
            "json_schema: unsupported JSON Schema keyword 'uniqueItems' (only false is accepted) (at #)");
  EXPECT_EQ(error_of(R"({"type":"string","format":"ipv4"})"),
            "json_schema: 'format' 'ipv4' is not supported (supported: date, time, date-time, uuid, email) (at #)");
  EXPECT_EQ(error_of(R"({"$ref":"#/$defs/missing"})"), "json_schema: '$ref' '#/$defs/missing' points to nothing in the schema (at #)");
  EXPECT_EQ(error_of(R"({"$ref":"http://example.com/s.json"})"),
            "json_schema: '$ref' 'http://example.com/s.json' is not supported: only references inside the schema (#...) (at #)");
  EXPECT_EQ(error_of(R"({"type":"integer","minimum":5,"maximum":4})"), "json_schema: no integer lies within the bounds (at #)");
  EXPECT_EQ(error_of(R"({"type":"string","pattern":"(a)\\1"})"),
            "json_schema: 'pattern': regex: back-references are not supported at offset 4 (at #)");
  EXPECT_EQ(error_of(R"({"enum":[]})"), "json_schema: 'enum' is empty, so no value is allowed (at #)");
  EXPECT_EQ(error_of(R"({"type":"integer","enum":[1.5]})"), "json_schema: 'enum' value 1.5 does not have the schema's type (at #)");
  EXPECT_EQ(error_of(R"({"type":"object","required":["x"],"additionalProperties":false})"),
            "json_schema: required property 'x' is not in 'properties' and additionalProperties is false (at #)");
  EXPECT_EQ(error_of(R"({"type":"object","properties":{"c":{"$ref":"#"}},"required":["c"]})"),
            "json_schema: rule 'root' can never finish: every alternative needs itself again or an empty character class");
  EXPECT_EQ(error_of(R"({"type":"number","minimum":0.2,"maximum":0.7})"),
            "json_schema: the bounds leave no number this grammar can write (an interval narrower than 1 with no integer "
            "in it is not supported) (at #)");
  EXPECT_EQ(error_of(R"(false)"), "json_schema: the schema false allows no value (at #)");
  EXPECT_EQ(error_of(R"({"minItems":-1})"), "json_schema: 'minItems' must be a non-negative integer (at #)");
}

TEST(JsonObject, AnyObjectButNothingElse) {
  auto g = json_object_grammar();
  ASSERT_TRUE(g.ok());
  auto p = std::make_shared<const Grammar>(std::move(g).value());
  EXPECT_TRUE(matches(p, R"({"a":[1,2,{"b":null}],"c":"d"})"));
  EXPECT_TRUE(matches(p, "{}"));
  EXPECT_FALSE(matches(p, "[1]"));
  EXPECT_FALSE(matches(p, R"({"a":1)"));
}

// llama.cpp's space rule: nothing, one space, or one or two newlines and up to 20
// spaces or tabs; compact: nothing at all.
TEST(JsonWhitespace, BoundedAsLlamaCppOrCompact) {
  const std::string s = R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]})";
  auto bounded = schema(s);
  EXPECT_TRUE(matches(bounded, "{\"a\": 1}"));
  EXPECT_TRUE(matches(bounded, "{\n\n" + std::string(20, ' ') + "\"a\": 1\n}"));
  EXPECT_TRUE(matches(bounded, "{\n" + std::string(19, ' ') + "\t\"a\":1}"));
  EXPECT_FALSE(matches(bounded, "{\n" + std::string(21, ' ') + "\"a\":1}"));
  EXPECT_FALSE(matches(bounded, "{\n\n\n\"a\":1}"));
  EXPECT_FALSE(matches(bounded, "{  \"a\":1}"));
  // Only where a formatter writes it: not before ':' or ',', one space at most after ':'.
  EXPECT_FALSE(matches(bounded, "{\"a\" :1}"));
  EXPECT_FALSE(matches(bounded, "{\"a\":\n1}"));
  EXPECT_FALSE(matches(bounded, "{\"a\":  1}"));
  auto list = schema(R"({"type":"array","items":{"type":"integer"}})");
  EXPECT_TRUE(matches(list, "[1, 2,\n  3\n]"));
  EXPECT_FALSE(matches(list, "[1 ,2]"));
  auto g = json_schema_grammar(SchemaJson::parse(s), {}, JsonWhitespace::kCompact);
  ASSERT_TRUE(g.ok());
  auto compact = std::make_shared<const Grammar>(std::move(g).value());
  EXPECT_TRUE(matches(compact, "{\"a\":1}"));
  EXPECT_FALSE(matches(compact, "{\"a\": 1}"));
  EXPECT_FALSE(matches(compact, "{\n\"a\":1}"));
  auto o = json_object_grammar(JsonWhitespace::kCompact);
  ASSERT_TRUE(o.ok());
  auto object = std::make_shared<const Grammar>(std::move(o).value());
  EXPECT_TRUE(matches(object, R"({"a":[1,{"b":" x "}]})"));
  EXPECT_FALSE(matches(object, R"({"a": 1})"));
}

}  // namespace
}  // namespace llms
