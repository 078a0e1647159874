// The interpreter's semantics, each expectation worked out from Python's and Jinja's
// documented rules (the whole templates are compared with python3-jinja2 in
// tests/chat_template_jinja_test.py).
#include "chat/jinja_template.h"

#include <gtest/gtest.h>

#include <string>

#include "chat/jinja_lexer.h"

namespace llms {
namespace {

using jinja::Value;

std::string render(const std::string& src, const nlohmann::ordered_json& ctx = nlohmann::ordered_json::object()) {
  auto t = JinjaTemplate::parse(src);
  EXPECT_TRUE(t.ok()) << t.status().to_string();
  if (!t.ok()) return "<parse error>";
  auto out = t->render(Value::from_json(ctx));
  return out.ok() ? *out : "<error: " + out.status().message() + ">";
}

std::string error_of(const std::string& src, const nlohmann::ordered_json& ctx = nlohmann::ordered_json::object()) {
  auto t = JinjaTemplate::parse(src);
  if (!t.ok()) return t.status().message();
  auto out = t->render(Value::from_json(ctx));
  return out.ok() ? "" : out.status().message();
}

TEST(JinjaTemplateTest, PrintsValuesAsPythonDoes) {
  EXPECT_EQ(render("{{ none }}|{{ true }}|{{ 1.0 }}|{{ [1, 'a', \"b'c\", none, 1.5] }}|{{ {'a': 1} }}|{{ nothing }}"),
            "None|True|1.0|[1, 'a', \"b'c\", None, 1.5]|{'a': 1}|");
  EXPECT_EQ(render("{{ (1, 2) }}|{{ 7 / 2 }}|{{ 7 // 2 }}|{{ -7 // 2 }}|{{ 2 ** 10 }}|{{ 1e3 }}|{{ 0.1 + 0.2 }}"),
            "(1, 2)|3.5|3|-4|1024|1000.0|0.30000000000000004");
  EXPECT_EQ(render("{{ 1e16 }} {{ 1e-5 }} {{ 0.0001 }} {{ 123456789.123 }} {{ -0.0 }}"),
            "1e+16 1e-05 0.0001 123456789.123 -0.0");
  EXPECT_EQ(render("{{ 1 == 1.0 }}{{ true == 1 }}{{ 'a' ~ 1 ~ none }}{{ 10 % 3 }}{{ -7 % 3 }}{{ 'x' * 3 }}"),
            "TrueTruea1None12xxx");
}

TEST(JinjaTemplateTest, WhitespaceControlFollowsTrimAndLstripBlocks) {
  // lstrip_blocks drops the indentation before a block tag, trim_blocks the newline after it.
  EXPECT_EQ(render("  {% if true %}\n  x\n  {% endif %}\n  y"), "  x\n  y");
  // Text before a tag on the same line is kept.
  EXPECT_EQ(render("a  {% if true %}b{% endif %}  \n c"), "a  b  \n c");
  EXPECT_EQ(render("a \n {{- 'b' -}} \n c"), "abc");
  EXPECT_EQ(render("a\n  {%+ if true %}b{% endif +%}\nc"), "a\n  b\nc");
  EXPECT_EQ(render("{# note #}\nx{# two\nlines #}y"), "xy");
  EXPECT_EQ(render("x\n"), "x");  // one trailing newline of the source is dropped
  EXPECT_EQ(render("{% raw %}{{ not evaluated }}{% endraw %}"), "{{ not evaluated }}");
}

TEST(JinjaTemplateTest, LoopsScopeAndLoopVariables) {
  // A set inside a loop body is gone in the next iteration and after the loop.
  EXPECT_EQ(render("{% set x = 0 %}{% for i in range(3) %}{% set x = x + 1 %}{{ x }}{% endfor %}{{ x }}"), "1110");
  EXPECT_EQ(render("{% if true %}{% set y = 5 %}{% endif %}{{ y }}"), "5");
  EXPECT_EQ(render("{% set ns = namespace(a=1) %}{% for i in range(3) %}{% set ns.a = ns.a + i %}{% endfor %}{{ ns.a }}"),
            "4");
  EXPECT_EQ(render("{% for a, b in [(1, 2), (3, 4)] %}{{ a }}{{ b }}{{ loop.index }}{{ loop.last }}{% endfor %}"),
            "121False342True");
  EXPECT_EQ(render("{% for x in [1, 2, 3, 4] if x is even %}{{ loop.index0 }}/{{ loop.length }}:{{ x }} {% endfor %}"),
            "0/2:2 1/2:4 ");
  EXPECT_EQ(render("{% for x in [] %}a{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(render("{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 4 %}{% break %}"
                   "{% endif %}{{ x }}{% endfor %}"),
            "013");
  EXPECT_EQ(render("{% for x in 'ab' %}{{ loop.cycle('o', 'e') }}{{ loop.previtem is defined }}{% endfor %}"),
            "oFalseeTrue");
}

TEST(JinjaTemplateTest, MacrosFiltersAndSetBlocks) {
  EXPECT_EQ(render("{% macro f(a, b=2) %}[{{ a }}{{ b }}]{% endmacro %}{{ f(1) }}{{ f(1, b=3) }}{{ f() }}"),
            "[12][13][2]");
  EXPECT_EQ(render("{% set s %}  Hi {{ 'x' }} {% endset %}[{{ s | trim }}]"), "[Hi x]");
  EXPECT_EQ(render("{% filter upper %}ab{{ 'c' }}{% endfilter %}"), "ABC");
  EXPECT_EQ(render("{{ [3, 1, 2] | sort | list }}{{ {'b': 1, 'a': 2} | dictsort }}{{ [1, 2] | map('string') | join(',') }}"),
            "[1, 2, 3][('a', 2), ('b', 1)]1,2");
  EXPECT_EQ(render("{{ x | selectattr('r', 'equalto', 'u') | map(attribute='c') | list }}",
                   {{"x", {{{"r", "u"}, {"c", 1}}, {{"r", "a"}, {"c", 2}}, {{"r", "u"}, {"c", 3}}}}}),
            "[1, 3]");
  EXPECT_EQ(render("{{ ''|default('d') }}{{ ''|default('d', true) }}{{ u|default('d') }}"), "dd");
  EXPECT_EQ(render("{{ 'a\nb' | indent(2) }}|{{ 'a\n\nb' | indent(2, true) }}"), "a\n  b|  a\n\n  b");
  EXPECT_EQ(render("{{ 2.5 | round }} {{ 3.14159 | round(2) }} {{ '3' | int + 1 }} {{ 'x' | int }}"), "2.0 3.14 4 0");
  EXPECT_EQ(render("{{ 'abc'[::-1] }}{{ 'héllo' | length }}{{ 'héllo'[1:3] }}{{ [1, 2, 3][-1] }}"), "cba5él3");
}

TEST(JinjaTemplateTest, ToJsonIsHuggingFaces) {
  // json.dumps(ensure_ascii=False): non-ASCII and '<' kept, ", " and ": " separators;
  // with an indent, "," at line ends.
  EXPECT_EQ(render("{{ x | tojson }}", {{"x", {{"a", {1, 2.0, "é<"}}, {"b", nullptr}}}}),
            "{\"a\": [1, 2.0, \"é<\"], \"b\": null}");
  EXPECT_EQ(render("{{ x | tojson(indent=2) }}", {{"x", {{"a", {1}}, {"b", nlohmann::ordered_json::object()}}}}),
            "{\n  \"a\": [\n    1\n  ],\n  \"b\": {}\n}");
  EXPECT_EQ(render("{{ 'q\"\\n' | tojson }}"), "\"q\\\"\\n\"");
}

TEST(JinjaTemplateTest, StringAndDictMethods) {
  EXPECT_EQ(render("{{ 'a,b'.split(',') }}{{ ' x '.strip() }}{{ 'abc'.startswith(('x', 'a')) }}{{ ' a  b '.split() }}"),
            "['a', 'b']xTrue['a', 'b']");
  EXPECT_EQ(render("{{ x.items() | list }}{{ x.get('z', 5) }}{{ x.keys() | list }}{{ 'a' in x }}", {{"x", {{"a", 1}}}}),
            "[('a', 1)]5['a']True");
  EXPECT_EQ(render("{{ 'Hello World'.replace('o', '0', 1) }}{{ 'ab'.upper() }}{{ 'hello there'.title() }}"),
            "Hell0 WorldABHello There");
}

TEST(JinjaTemplateTest, UndefinedBehavesAsJinjasDefault) {
  EXPECT_EQ(render("{{ m.tool_calls is defined }}{{ m.content is none }}", {{"m", {{"content", nullptr}}}}), "FalseTrue");
  EXPECT_EQ(render("{% for x in nothing %}x{% endfor %}{{ nothing | length }}{{ not nothing }}"), "0True");
  EXPECT_NE(error_of("{{ foo.bar }}").find("'foo' is undefined"), std::string::npos);
  EXPECT_NE(error_of("{{ nothing + 1 }}").find("'nothing' is undefined"), std::string::npos);
}

TEST(JinjaTemplateTest, ErrorsNameTheProblem) {
  EXPECT_EQ(error_of("{{ raise_exception('Roles must alternate') }}"), "chat template: Roles must alternate");
  EXPECT_NE(error_of("{% if x %}never closed").find("endif"), std::string::npos);
  EXPECT_NE(error_of("{% include 'x' %}").find("unsupported tag"), std::string::npos);
  EXPECT_NE(error_of("{{ 1 + 'a' }}").find("unsupported operand"), std::string::npos);
  EXPECT_NE(error_of("{{ [].append(1) }}").find("unsafe"), std::string::npos);
  EXPECT_NE(error_of("{{ 'a' | nosuchfilter }}").find("nosuchfilter"), std::string::npos);
  EXPECT_NE(error_of("{{ x").find("not closed"), std::string::npos);
}

TEST(JinjaTemplateTest, RunawayTemplatesStopAtTheirLimits) {
  EXPECT_NE(error_of("{% for i in range(2000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}").find("loop limit"),
            std::string::npos);
  EXPECT_NE(error_of("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}").find("too deep"), std::string::npos);
  EXPECT_NE(error_of("{{ 'x' * 100000000 }}").find("too large"), std::string::npos);
}

}  // namespace
}  // namespace llms
