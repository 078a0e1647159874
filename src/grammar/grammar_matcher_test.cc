#include "grammar/grammar_matcher.h"

#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <thread>

#include "base/random.h"
#include "grammar/testing/grammar_test_util.h"

namespace llms {
namespace {

using testing::allowed;
using testing::compile_gbnf;
using testing::make_vocab;
using Ids = std::vector<int32_t>;

TEST(GrammarMatcher, LiteralAlternativesByHand) {
  //                       0    1    2    3     4      5    6 (eog)
  auto v = make_vocab({"a", "b", "c", "ab", "abc", "x", ""}, {6});
  auto g = compile_gbnf(R"(root ::= "ab" | "ac")", v);
  GrammarMatcher m(g);
  // "abc" runs past the end; "x" matches nothing; no end yet.
  EXPECT_EQ(allowed(m), (Ids{0, 3}));
  ASSERT_TRUE(m.accept_token(0));
  EXPECT_EQ(allowed(m), (Ids{1, 2}));
  ASSERT_TRUE(m.accept_token(2));
  EXPECT_TRUE(m.finished());
  EXPECT_EQ(allowed(m), (Ids{6}));  // only the end
  ASSERT_TRUE(m.accept_token(6));
  EXPECT_TRUE(m.terminated());
  EXPECT_EQ(allowed(m), Ids{});
}

TEST(GrammarMatcher, EndOfGenerationOnlyWhereTheGrammarCanEnd) {
  auto v = make_vocab({"1", "12", "a", "1a", "</s>"}, {4});
  auto g = compile_gbnf("root ::= [0-9]+", v);
  GrammarMatcher m(g);
  EXPECT_EQ(allowed(m), (Ids{0, 1}));
  EXPECT_FALSE(m.accept_token(4));
  ASSERT_TRUE(m.accept_token(1));
  EXPECT_TRUE(m.can_end());
  EXPECT_FALSE(m.finished());
  EXPECT_EQ(allowed(m), (Ids{0, 1, 4}));
}

TEST(GrammarMatcher, TokensEndingInsideACharacter) {
  // é is C3 A9; tokens split it in every way.
  auto v = make_vocab({"\xC3", "\xA9", "\xC3\xA9", "\xA9!", "!", "e"});
  auto g = compile_gbnf(R"(root ::= [^a-z] "!")", v);
  GrammarMatcher m(g);
  EXPECT_EQ(allowed(m), (Ids{0, 2, 4}));  // "!" is itself a non-[a-z] character
  ASSERT_TRUE(m.accept_token(0));
  EXPECT_EQ(allowed(m), (Ids{1, 3}));     // only the continuation byte can follow
  ASSERT_TRUE(m.accept_token(3));
  EXPECT_TRUE(m.finished());
}

TEST(GrammarMatcher, RefusedTokenLeavesTheStateAlone) {
  auto v = make_vocab({"a", "b"});
  auto g = compile_gbnf(R"(root ::= "ab")", v);
  GrammarMatcher m(g);
  EXPECT_FALSE(m.accept_token(1));
  EXPECT_EQ(m.num_accepted(), 0);
  EXPECT_TRUE(m.accept_token(0));
  EXPECT_TRUE(m.accept_token(1));
}

TEST(GrammarMatcher, RollbackRestoresEarlierMasks) {
  auto v = make_vocab({"[", "]", "1", ",", ",1"});
  auto g = compile_gbnf(R"(root ::= "[" ("1" ("," "1")*)? "]")", v);
  GrammarMatcher m(g);
  ASSERT_TRUE(m.accept_token(0));
  const Ids after_open = allowed(m);
  EXPECT_EQ(after_open, (Ids{1, 2}));
  ASSERT_TRUE(m.accept_token(2));
  EXPECT_EQ(allowed(m), (Ids{1, 3, 4}));
  ASSERT_TRUE(m.accept_token(4));
  ASSERT_TRUE(m.accept_token(1));
  EXPECT_TRUE(m.finished());
  m.rollback(3);
  EXPECT_EQ(m.num_accepted(), 1);
  EXPECT_FALSE(m.finished());
  EXPECT_EQ(allowed(m), after_open);
}

TEST(GrammarMatcher, ControlTokensWithoutBytesAreNeverAllowed) {
  auto v = make_vocab({"a", "", "<s>"});  // id 1: a control token (no bytes)
  auto g = compile_gbnf(R"(root ::= [a<>s/]*)", v);
  GrammarMatcher m(g);
  EXPECT_EQ(allowed(m), (Ids{0, 2}));
  EXPECT_FALSE(m.accept_token(1));
}

TEST(GrammarMatcher, UncertainTokensAreCheckedAgainstTheRealStack) {
  // Inside the string loop, `"x` closes the string and goes on in the caller, which
  // differs per use: after the key only ':' may follow, after the value only '}'.
  auto v = make_vocab({"{", "}", "\"", ":", "k", "\":", "\"}", "kk"});
  auto g = compile_gbnf(R"(
root ::= "{" str ":" str "}"
str  ::= "\"" [a-z]* "\""
)", v);
  GrammarMatcher m(g);
  ASSERT_TRUE(m.accept_token(0));
  ASSERT_TRUE(m.accept_token(2));
  EXPECT_EQ(allowed(m), (Ids{2, 4, 5, 7}));  // `"}` would close and need ':' next
  ASSERT_TRUE(m.accept_token(5));
  ASSERT_TRUE(m.accept_token(2));
  ASSERT_TRUE(m.accept_token(4));
  EXPECT_EQ(allowed(m), (Ids{2, 4, 6, 7}));  // now `":` is the wrong one
}

// Every token's membership in the mask agrees with accepting it directly, along
// random walks through a grammar with nesting, classes and alternatives.
TEST(GrammarMatcher, MaskAgreesWithDirectAcceptance) {
  std::vector<std::string> pieces = {"{", "}", "[", "]", "\"", ",", ":", " ", "a", "b", "1", "12", "\"a", "a\"",
                                     "\":", "\",", "}]", "[{", "1,", " \"", "\xC3", "\xA9", "\xC3\xA9\"", "},{"};
  pieces.push_back("");  // eog
  auto v = make_vocab(pieces, {static_cast<int32_t>(pieces.size() - 1)});
  auto g = compile_gbnf(R"(
root  ::= value
value ::= obj | arr | str | num
obj   ::= "{" (str ":" value ("," str ":" value)*)? "}"
arr   ::= "[" (value ("," " "? value)*)? "]"
str   ::= "\"" [^"\\]* "\""
num   ::= [0-9]+
)", v);
  Rng rng(7);
  for (int walk = 0; walk < 60; ++walk) {
    GrammarMatcher m(g);
    for (int step = 0; step < 25 && !m.terminated(); ++step) {
      const Ids ok = allowed(m);
      for (int32_t id = 0; id < v->size(); ++id) {
        const bool in_mask = std::find(ok.begin(), ok.end(), id) != ok.end();
        const bool accepted = m.accept_token(id);
        if (accepted) m.rollback(1);
        ASSERT_EQ(in_mask, accepted) << "token " << id << " at step " << step;
      }
      if (ok.empty()) break;
      ASSERT_TRUE(m.accept_token(ok[rng.below(ok.size())]));
    }
  }
}

}  // namespace
}  // namespace llms

namespace llms {
namespace {

// The classes of every token at the point inside the string loop, derived by hand.
TEST(CompiledGrammar, ClassifiesTokensAtAPoint) {
  //                        0    1     2    3     4      5      6     7
  auto v = testing::make_vocab({"a", "ab", "\"", "\":", "\"}", "\"x", "a\"", "}"});
  auto cg = testing::compile_gbnf(R"(
root ::= "{" str ":" str "}"
str  ::= "\"" [a-z]* "\""
)", v);
  ASSERT_NE(cg, nullptr);
  // The [a-z] element of the loop rule: find its point.
  const Grammar& g = cg->grammar();
  int32_t point = -1;
  for (int32_t i = 0; i < g.num_elements(); ++i) {
    const Element& e = g.element(i);
    if (e.kind == ElementKind::kBytes && g.byte_set(e.value).has('a') && !g.byte_set(e.value).has('{')) point = make_point(i, 0);
  }
  ASSERT_GE(point, 0);
  const PointTokens& t = cg->tokens_at(point);
  // The point's frame is the loop rule (star ::= [a-z] star | ""). "a" and "ab"
  // stay inside it: accepted. `a"` leaves the loop after "a" with the quote still to
  // read, which only the caller (str's closing quote) can take: uncertain. Tokens
  // starting with a quote or a brace are not read by [a-z]: refused (the loop's
  // exit is another stack top, with its own classes).
  EXPECT_EQ(testing::accepted_ids(t, v->size()), (std::vector<int32_t>{0, 1}));
  ASSERT_EQ(t.uncertain_ranks.size(), 1u);
  EXPECT_EQ(v->id_at(t.uncertain_ranks[0]), 6);
}

TEST(CompiledGrammar, AssumedContinuationsRefuseWhatNoCallerTakes) {
  //                             0     1      2      3     4
  auto v = testing::make_vocab({"\"", "\":", "\"}", "\"x", "\"\""});
  auto cg = testing::compile_gbnf(R"(
root ::= "{" str ":" str "}"
str  ::= "\"" [a-z]* "\""
)", v);
  ASSERT_NE(cg, nullptr);
  // The closing-quote element of `str` (the second '"' element of the grammar).
  const Grammar& g = cg->grammar();
  int32_t point = -1;
  int seen = 0;
  for (int32_t i = 0; i < g.num_elements(); ++i) {
    const Element& e = g.element(i);
    if (e.kind == ElementKind::kBytes && g.byte_set(e.value).has('"') && ++seen == 2) point = make_point(i, 0);
  }
  ASSERT_GE(point, 0);
  const PointTokens& t = cg->tokens_at(point);
  // `"` ends the frame at its last byte: accepted. `":` and `"}` go on in a caller
  // that may take them (after the key, after the value): uncertain. `"x` and `""`
  // are taken by no caller: refused.
  EXPECT_EQ(testing::accepted_ids(t, v->size()), (std::vector<int32_t>{0}));
  std::vector<int32_t> uncertain;
  for (const int32_t r : t.uncertain_ranks) uncertain.push_back(v->id_at(r));
  std::sort(uncertain.begin(), uncertain.end());
  EXPECT_EQ(uncertain, (std::vector<int32_t>{1, 2}));
}

// Points past the start state are classified on first use: a matcher meets only
// some of them, and its masks are the ones a fully classified grammar gives, from
// any thread.
TEST(CompiledGrammar, PointsAreClassifiedOnFirstUse) {
  auto v = testing::make_vocab({"a", "b", "ab", "0", "12", "345", "b0", "\"", "x"});
  const char* text = R"(root ::= "a" [0-9]{0,20} "b" | "x" [0-9]{0,20} "b")";
  auto lazy = testing::compile_gbnf(text, v);
  auto eager = testing::compile_gbnf(text, v);
  ASSERT_TRUE(lazy && eager);
  eager->classify_all();
  EXPECT_EQ(lazy->stats().num_classified, 2);  // compile() classified the start state's points, "a" and "x"
  EXPECT_EQ(eager->stats().num_classified, eager->stats().num_points);
  GrammarMatcher a(lazy), b(eager);
  for (const int32_t id : {0, 4, 5, 3}) {  // "a" "12" "345" "0"
    EXPECT_EQ(testing::allowed(a), testing::allowed(b));
    ASSERT_TRUE(a.accept_token(id));
    ASSERT_TRUE(b.accept_token(id));
  }
  EXPECT_EQ(testing::allowed(a), testing::allowed(b));
  const CompileStats st = lazy->stats();
  EXPECT_GT(st.num_classified, 0);
  EXPECT_LT(st.num_classified, st.num_points);  // the "x" branch was never met
  // Two threads asking for the rest get the same classes as the eager grammar.
  std::thread t1([&] { lazy->classify_all(); });
  std::thread t2([&] { lazy->classify_all(); });
  t1.join();
  t2.join();
  EXPECT_EQ(lazy->stats().num_classified, st.num_points);
  EXPECT_EQ(lazy->stats().num_accepted, eager->stats().num_accepted);
  EXPECT_EQ(lazy->stats().num_uncertain, eager->stats().num_uncertain);
}

}  // namespace
}  // namespace llms

namespace llms {
namespace {

// masked_copy against the element-by-element rule, on masks mixing empty, full and
// partial words, a vocabulary that is not a multiple of 32, and ids past the mask.
TEST(MaskedCopyTest, EqualsTheElementRule) {
  std::mt19937 rng(7);
  for (const size_t n : {1u, 31u, 32u, 33u, 1000u, 50257u}) {
    for (const size_t words : {(n + 31) / 32, n / 32}) {
      std::vector<uint32_t> mask(words);
      for (auto& w : mask) {
        const unsigned kind = rng() % 3;
        w = kind == 0 ? 0u : kind == 1 ? ~0u : static_cast<uint32_t>(rng());
      }
      std::vector<float> logits(n), out(n, 123.0f);
      for (auto& x : logits) x = static_cast<float>(static_cast<int>(rng() % 2001) - 1000) / 100.0f;
      masked_copy(mask, logits, out);
      for (size_t i = 0; i < n; ++i) {
        const bool allowed = i / 32 < mask.size() && ((mask[i / 32] >> (i % 32)) & 1);
        ASSERT_EQ(out[i], allowed ? logits[i] : -std::numeric_limits<float>::infinity()) << "n " << n << " i " << i;
      }
    }
  }
}

}  // namespace
}  // namespace llms
