// Grammars under a budget: nested counted repetitions cost linear space, what would
// cost more is refused with a status naming the limit, a compile can be cancelled,
// and the run-time limits behave as grammar_budget.h says.
#include "grammar/grammar_budget.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "grammar/testing/grammar_test_util.h"
#include "grammar/json_schema.h"
#include "grammar/regex_parser.h"
#include "grammar/rule_returns.h"

namespace llms {
namespace {

using testing::allowed;
using testing::byte_vocab;
using testing::make_vocab;
using testing::matches;

std::shared_ptr<const Grammar> regex(const std::string& pattern) { return testing::grammar_of(parse_regex(pattern)); }
std::shared_ptr<const Grammar> gbnf(const std::string& text) { return testing::grammar_of(parse_gbnf(text)); }

std::string nested(int n) { return "(x{1," + std::to_string(n) + "}){1," + std::to_string(n) + "}"; }

// Where each rule returns to, by the definition: the points after its non-tail
// references, then a fixpoint over tail calls (a tail call returns where its caller
// does). Quadratic, for small grammars only.
std::vector<std::set<int32_t>> reference_returns(const Grammar& g, std::vector<bool>* ends_root) {
  const size_t n = g.rules().size();
  std::vector<std::set<int32_t>> points(n);
  std::vector<std::pair<int32_t, int32_t>> tail;  // (callee, caller)
  for (size_t rule = 0; rule < n; ++rule) {
    for (const int32_t start : g.rules()[rule].alternatives) {
      for (int32_t i = start; g.element(i).kind != ElementKind::kEnd; ++i) {
        if (g.element(i).kind != ElementKind::kRule) continue;
        if (g.element(i + 1).kind == ElementKind::kEnd) {
          tail.emplace_back(g.element(i).value, static_cast<int32_t>(rule));
        } else {
          points[static_cast<size_t>(g.element(i).value)].insert(make_point(i + 1, 0));
        }
      }
    }
  }
  ends_root->assign(n, false);
  (*ends_root)[static_cast<size_t>(g.root())] = true;
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto& [callee, caller] : tail) {
      auto& mine = points[static_cast<size_t>(callee)];
      const size_t before = mine.size();
      mine.insert(points[static_cast<size_t>(caller)].begin(), points[static_cast<size_t>(caller)].end());
      const bool end = (*ends_root)[static_cast<size_t>(callee)] || (*ends_root)[static_cast<size_t>(caller)];
      changed = changed || mine.size() != before || end != (*ends_root)[static_cast<size_t>(callee)];
      (*ends_root)[static_cast<size_t>(callee)] = end;
    }
  }
  return points;
}

TEST(RuleReturns, SharedSetsEqualTheDefinition) {
  const std::vector<std::shared_ptr<const Grammar>> grammars = {
      regex(nested(8)),
      regex("((ab?){0,5}c){1,4}|(d{2,6}|e){0,3}f"),
      gbnf("root ::= item (\",\" item)*\nitem ::= \"a\" tail | \"[\" root \"]\"\ntail ::= \"b\" tail | \"\""),
      gbnf("root ::= ( h1 \".\" ){0,5} ( h2 \",\" ){0,3}\nh1 ::= \"a\" ( l1 | l2 )\nh2 ::= \"b\" ( l1 | l2 )\n"
           "l1 ::= \"c\"{0,3}\nl2 ::= \"d\" l1"),
      testing::grammar_of(json_schema_grammar(SchemaJson::parse(
          R"({"type":"object","properties":{"a":{"type":"array","items":{"type":"integer"},"maxItems":3},
              "b":{"type":"string","maxLength":4}}})"))),
  };
  for (const auto& g : grammars) {
    ASSERT_NE(g, nullptr);
    WorkMeter meter;
    auto r = RuleReturns::of(*g, 0, meter);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    std::vector<bool> ends_root;
    const auto want = reference_returns(*g, &ends_root);
    for (size_t rule = 0; rule < g->rules().size(); ++rule) {
      const auto got = r.value().points(static_cast<int32_t>(rule));
      EXPECT_EQ(std::set<int32_t>(got.begin(), got.end()), want[rule]) << g->rule(static_cast<int32_t>(rule)).name;
      EXPECT_EQ(got.size(), want[rule].size()) << "a point recorded twice";
      EXPECT_EQ(r.value().ends_root(static_cast<int32_t>(rule)), ends_root[rule]);
    }
  }
}

// The issue's regex: each inner chain rule used to hold one return point per outer
// chain rule (N×N). The chain shares one set, so the total is linear, and the bounds
// that took minutes compile.
TEST(GrammarBudget, NestedCountedRepetitionIsLinear) {
  for (const int n : {1024, 4096}) {
    auto cg = CompiledGrammar::compile(regex(nested(n)), byte_vocab());
    ASSERT_TRUE(cg.ok()) << cg.status().to_string();
    EXPECT_LE(cg.value()->stats().return_points, 2 * n);
    // Short texts match as under small bounds: one x or more.
    for (const int k : {1, 2, 17, 40}) EXPECT_TRUE(matches(cg.value()->grammar_ptr(), std::string(k, 'x'))) << k;
    EXPECT_FALSE(matches(cg.value()->grammar_ptr(), ""));
    EXPECT_FALSE(matches(cg.value()->grammar_ptr(), "xxy"));
  }
}

// At N=16 the language is x{1,256}, the same as a plain counted repetition's.
TEST(GrammarBudget, SmallBoundsMatchWhatTheyMatchedBefore) {
  auto nested16 = regex(nested(16));
  auto flat = gbnf("root ::= \"x\"{1,256}");
  for (const int k : {0, 1, 2, 15, 16, 17, 255, 256, 257, 300}) {
    const std::string text(static_cast<size_t>(k), 'x');
    EXPECT_EQ(matches(nested16, text), matches(flat, text)) << k;
    EXPECT_EQ(matches(nested16, text), k >= 1 && k <= 256) << k;
  }
  EXPECT_FALSE(matches(nested16, "xy"));
}

TEST(GrammarBudget, RefusalsNameTheLimit) {
  GrammarBudget points;
  points.max_return_points = 1000;
  auto r = CompiledGrammar::compile(regex(nested(4096)), byte_vocab(), points);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(r.status().message().find("more than 1000 return points (budget max_return_points)"), std::string::npos)
      << r.status().message();

  GrammarBudget work;
  work.compile_work = 10'000;
  r = CompiledGrammar::compile(regex(nested(1024)), byte_vocab(), work);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(r.status().message().find("compiling it needs more than 10000 work units (budget compile_work)"),
            std::string::npos)
      << r.status().message();
}

// Rules with several tail callers each hold the union of their callers' points: 100
// rules reached from two repeated rules of 4096 uses each make 819,200 points.
TEST(GrammarBudget, ReturnPointsPastTheDefaultCapAreRefused) {
  std::string alts, defs;
  for (int i = 0; i < 100; ++i) {
    const std::string name = std::string("l").append(std::to_string(i));
    alts += i ? " | " + name : name;
    defs += name + " ::= \"c\"\n";
  }
  auto g = gbnf("root ::= ( h1 \".\" ){0,4096} ( h2 \",\" ){0,4096}\nh1 ::= \"a\" ( " + alts + " )\nh2 ::= \"b\" ( " +
                alts + " )\n" + defs);
  auto r = CompiledGrammar::compile(g, byte_vocab());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(r.status().message().find("return points"), std::string::npos) << r.status().message();
}

// The first character of (a|b{0,N}){0,N} can follow any number of empty b-runs:
// more stacks than a matcher follows, so compile() says so instead of a generation
// that allows no token.
TEST(GrammarBudget, StartTooAmbiguousToFollowIsRefused) {
  auto r = CompiledGrammar::compile(regex("(a|b{0,4096}){0,4096}"), byte_vocab());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(r.status().message().find("too ambiguous"), std::string::npos) << r.status().message();
  EXPECT_TRUE(CompiledGrammar::compile(regex("(a|b{0,64}){0,64}"), byte_vocab()).ok());
}

TEST(GrammarBudget, CancellationStopsACompile) {
  std::atomic<bool> cancel{true};
  GrammarBudget budget;
  budget.cancel = &cancel;
  auto r = CompiledGrammar::compile(regex(nested(16)), byte_vocab(), budget);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kCancelled);
  cancel = false;
  auto ok = CompiledGrammar::compile(regex(nested(16)), byte_vocab(), budget);
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
  EXPECT_EQ(ok.value()->budget().cancel, nullptr);  // the grammar does not keep the caller's flag
}

// Nested bounds through the other front ends compile or are refused, never more.
TEST(GrammarBudget, OtherFrontEndsCompileOrAreRefused) {
  const char* schemas[] = {
      R"({"type":"array","items":{"type":"string","maxLength":4096},"maxItems":4096})",
      R"({"type":"array","items":{"type":"array","items":{"type":"string","minLength":4096},"minItems":4096},"minItems":4096})",
      R"({"type":"array","items":{"type":"array","items":{"type":"integer"},"maxItems":4096},"maxItems":4096})",
  };
  for (const char* s : schemas) {
    auto g = json_schema_grammar(SchemaJson::parse(s));
    ASSERT_TRUE(g.ok()) << g.status().to_string();
    auto r = CompiledGrammar::compile(std::make_shared<const Grammar>(std::move(g).value()), byte_vocab());
    EXPECT_TRUE(r.ok()) << s << ": " << r.status().to_string();
  }
  for (const char* text : {"root ::= ( [a-z]{0,4096} \",\" ){0,4096}", "root ::= ( ( \"x\"{1,4096} ){1,4096} ){1,4096}",
                           "root ::= ( \"x\"? ){0,4096}"}) {
    auto g = parse_gbnf(text);  // three levels of 4096 allow more copies than the builder lowers
    if (!g.ok()) {
      EXPECT_EQ(g.status().code(), StatusCode::kResourceExhausted) << text << ": " << g.status().to_string();
      continue;
    }
    auto r = CompiledGrammar::compile(std::make_shared<const Grammar>(std::move(g).value()), byte_vocab());
    EXPECT_TRUE(r.ok() || r.status().code() == StatusCode::kResourceExhausted) << text << ": " << r.status().to_string();
  }
}

// A point whose classification runs past the point budget is checked at run time:
// the masks are those of a grammar classified in full.
TEST(GrammarBudget, PointPastItsBudgetIsCheckedAtRunTime) {
  auto v = make_vocab({"a", "b", "ab", "0", "12", "345", "b0", "\"", "x", "9b"});
  const char* text = R"(root ::= "a" [0-9]{0,20} "b" | "x" [0-9]{0,20} "b")";
  GrammarBudget tiny;
  tiny.point_work = 1;
  auto cut = CompiledGrammar::compile(gbnf(text), v, tiny);
  auto full = CompiledGrammar::compile(gbnf(text), v);
  ASSERT_TRUE(cut.ok() && full.ok());
  GrammarMatcher a(cut.value()), b(full.value());
  for (const int32_t id : {0, 4, 5, 3, 9}) {  // "a" "12" "345" "0" "9b"
    EXPECT_EQ(allowed(a), allowed(b));
    EXPECT_FALSE(a.failed());
    ASSERT_TRUE(a.accept_token(id));
    ASSERT_TRUE(b.accept_token(id));
  }
  EXPECT_TRUE(a.finished());
  const CompileStats st = cut.value()->stats();
  EXPECT_GT(st.num_unclassified, 0);
  EXPECT_EQ(full.value()->stats().num_unclassified, 0);
}

// A mask past its budget fails: empty, and failed() names the budget.
TEST(GrammarBudget, MaskPastItsBudgetFails) {
  auto v = make_vocab({"a", "b", "ab", "0", "12", "345", "b0"});
  GrammarBudget tiny;
  tiny.point_work = 1;  // every point after the start is checked token by token
  tiny.mask_work = 3;
  auto cg = CompiledGrammar::compile(gbnf(R"(root ::= "a" [0-9]{0,20} "b")"), v, tiny);
  ASSERT_TRUE(cg.ok()) << cg.status().to_string();
  GrammarMatcher m(cg.value());
  EXPECT_EQ(allowed(m), (std::vector<int32_t>{0, 2}));  // the start state was classified by compile()
  EXPECT_FALSE(m.failed());
  ASSERT_TRUE(m.accept_token(0));
  EXPECT_EQ(allowed(m), std::vector<int32_t>{});
  EXPECT_TRUE(m.failed());
  EXPECT_NE(m.failure().find("budget mask_work"), std::string::npos) << m.failure();
  EXPECT_TRUE(m.accept_token(4));  // the matcher itself still works
}

// x^k in (x{1,128}|y){1,128} splits into groups in more ways as k grows; past
// kMaxStacks the matcher cannot follow. The mask (built from the points' classes)
// still allows "x", so the refusal says why. ((x{1,128}){1,128} without the
// alternative is lowered as x{1,16384}: grammar_builder_test.)
TEST(GrammarBudget, TextTooAmbiguousToFollowIsReported) {
  auto cg = CompiledGrammar::compile(regex("(x{1,128}|y){1,128}"), byte_vocab());
  ASSERT_TRUE(cg.ok()) << cg.status().to_string();
  GrammarMatcher m(cg.value());
  int k = 0;
  for (; k < 400; ++k) {
    ASSERT_FALSE(m.failed());
    if (!m.accept_bytes("x")) break;
  }
  ASSERT_LT(k, 400);
  EXPECT_TRUE(m.failed());
  EXPECT_NE(m.failure().find("too ambiguous"), std::string::npos) << m.failure();
  EXPECT_TRUE(m.accept_bytes("z") == false && !m.failed());  // a plain refusal is not a failure
}

}  // namespace
}  // namespace llms
