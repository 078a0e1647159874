// GrammarBuilder: a repetition of a repetition is lowered as one repetition where
// its counts allow (the same language, a few readings of any prefix, so a matcher
// can follow any text its masks allow), large counts take O(sqrt n) elements, and the
// front ends and the builder charge the compile budget's meter.
#include "grammar/grammar_builder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <set>
#include <string>

#include "grammar/regex_parser.h"
#include "grammar/testing/grammar_test_util.h"

namespace llms {
namespace {

using testing::allowed;
using testing::byte_vocab;

std::shared_ptr<const CompiledGrammar> compile_regex(const std::string& pattern) {
  auto g = testing::grammar_of(parse_regex(pattern));
  if (!g) return nullptr;
  auto cg = CompiledGrammar::compile(std::move(g), byte_vocab());
  EXPECT_TRUE(cg.ok()) << pattern << ": " << cg.status().to_string();
  return cg.ok() ? std::move(cg).value() : nullptr;
}

bool full_match(const std::shared_ptr<const CompiledGrammar>& cg, const std::string& text) {
  GrammarMatcher m(cg);
  return (text.empty() || m.accept_bytes(text)) && m.can_end();
}

// The counts (x{a1,a2}){b1,b2} allows up to `limit`, by enumeration (-1: unbounded).
std::set<int> reference_counts(int a1, int a2, int b1, int b2, int limit) {
  if (a2 < 0) a2 = limit;
  if (b2 < 0) b2 = limit;
  std::set<int> sums{0};  // the sums of k counts in [a1, a2]
  std::set<int> out;
  for (int k = 0; k <= b2; ++k) {
    if (k >= b1) out.insert(sums.begin(), sums.end());
    std::set<int> next;
    for (const int s : sums) {
      for (int c = a1; c <= a2 && s + c <= limit; ++c) next.insert(s + c);
    }
    sums = std::move(next);
  }
  return out;
}

std::string bounds(int lo, int hi) {
  std::string s = "{";
  s.append(std::to_string(lo)).append(",").append(hi < 0 ? "" : std::to_string(hi)).append("}");
  return s;
}

// Merged or not, (x{a1,a2}){b1,b2} matches exactly the counts its definition allows:
// intervals, intervals above a gap after 0, and sets with gaps that stay nested.
TEST(GrammarBuilder, NestedCountedRepetitionsMatchTheirCounts) {
  constexpr int kLimit = 24;
  for (int a1 = 0; a1 <= 3; ++a1) {
    for (const int a2 : {a1, a1 + 1, 4, -1}) {
      for (int b1 = 0; b1 <= 3; ++b1) {
        for (const int b2 : {b1, b1 + 2, 5, -1}) {
          if (a2 >= 0 && a2 < a1) continue;
          if (b2 >= 0 && b2 < b1) continue;
          const std::string pattern = std::string("(x").append(bounds(a1, a2)).append(")").append(bounds(b1, b2));
          auto cg = compile_regex(pattern);
          ASSERT_NE(cg, nullptr);
          const std::set<int> want = reference_counts(a1, a2, b1, b2, kLimit);
          for (int n = 0; n <= kLimit; ++n) {
            EXPECT_EQ(full_match(cg, std::string(static_cast<size_t>(n), 'x')), want.count(n) == 1)
                << pattern << " x^" << n;
          }
          EXPECT_FALSE(full_match(cg, "xy")) << pattern;
        }
      }
    }
  }
}

// Counts past max_repeat (made only by merging) lower as blocks of ~sqrt(n) items.
TEST(GrammarBuilder, LargeMergedCountsAreExactInFewElements) {
  struct Case {
    const char* pattern;
    int lo, hi;
  };
  for (const Case& c : {Case{"(x{0,100}){0,50}", 0, 5000}, Case{"(x{100}){50}", 5000, 5000},
                        Case{"(x{3,100}){2,50}", 6, 5000}, Case{"(x{1,4096}){1,4096}", 1, 4096 * 4096}}) {
    auto cg = compile_regex(c.pattern);
    ASSERT_NE(cg, nullptr);
    EXPECT_LT(cg->grammar().num_elements(), 50'000) << c.pattern;  // x{1,16777216} as a chain: 67M
    for (const int n : {c.lo - 1, c.lo, c.lo + 1, 70, 71, 4096, 4097, 4970, 4999, c.hi, c.hi + 1}) {
      if (n < 0 || n > 20'000) continue;
      EXPECT_EQ(full_match(cg, std::string(static_cast<size_t>(n), 'x')), n >= c.lo && n <= c.hi)
          << c.pattern << " " << n;
    }
  }
  auto r = parse_regex("((x{0,4096}){0,4096}){0,2}");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(r.status().message().find("nested repetitions allow more than 16777216"), std::string::npos)
      << r.status().message();
}

// The server's 500: (.{0,4096}){0,4096} read after one character in more ways than a
// matcher follows, so accept_token refused a token the mask allowed. Merged, every
// token the mask allows is accepted, far past the nested bounds.
TEST(GrammarBuilder, MaskAndAcceptAgreeUnderNestedOptionalRepetitions) {
  auto cg = compile_regex("(.{0,4096}){0,4096}");
  ASSERT_NE(cg, nullptr);
  GrammarMatcher m(cg);
  int chars = 0;
  for (int step = 0; step < 6000; ++step) {
    const std::vector<int32_t> ids = allowed(m);
    ASSERT_FALSE(m.failed()) << m.failure();
    ASSERT_FALSE(ids.empty()) << step;
    // Mostly "a" (to get past the nested bounds), now and then any allowed byte.
    const bool a_allowed = std::binary_search(ids.begin(), ids.end(), int32_t{'a'});
    const int32_t id = step % 5 == 0 || !a_allowed ? ids[static_cast<size_t>(step) * 7 % ids.size()] : 'a';
    ASSERT_TRUE(m.accept_token(id)) << step << " " << m.failure();
    chars += id < 0x80 ? 1 : 0;
  }
  EXPECT_GT(chars, 4096);
  EXPECT_FALSE(m.accept_bytes("\n"));
}

// The time fuzzer's input: a 140-byte regex (a long run of 0xFF bytes inside
// "){1,4092}") whose lowering copied its item into each of 4,091 chain rules and
// took ~4 s, unmetered. The chain now refers to the item, and the front end and the
// builder stop at the budget's work limit.
std::string fuzzed_regex() {
  return std::string("((a\x81" "0,9") + std::string(113, '\xff') + "9\x80\x9d?)}|096}){1,4092}";
}

TEST(GrammarBuilder, FuzzedRegexLowersSmallAndWithinTheBudget) {
  auto g = parse_regex(fuzzed_regex());
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_LT(g.value().num_elements(), 20'000);  // it was ~1.5M

  // The time fuzzer's compile budget, in work units only: parsing, building and
  // compiling together end (compiled or refused) within it.
  constexpr int64_t kWork = 4'000'000;
  WorkMeter meter(kWork, 0);
  GrammarLimits limits;
  limits.meter = &meter;
  auto parsed = parse_regex(fuzzed_regex(), limits);
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
  GrammarBudget rest;
  rest.compile_work = kWork - meter.used();
  rest.compile_seconds = 0;
  auto cg = CompiledGrammar::compile(std::make_shared<const Grammar>(std::move(parsed).value()), byte_vocab(), rest);
  ASSERT_TRUE(cg.ok() || cg.status().code() == StatusCode::kResourceExhausted) << cg.status().to_string();
  if (cg.ok()) {
    EXPECT_LE(meter.used() + cg.value()->stats().compile_work, kWork + 1024);
  }

  // Under a budget smaller than its lowering needs, the builder refuses it.
  WorkMeter small(10'000, 0);
  limits.meter = &small;
  auto refused = parse_regex(fuzzed_regex(), limits);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(refused.status().message().find("budget compile_work"), std::string::npos) << refused.status().message();
  EXPECT_LE(small.used(), 10'000 + 1024);
}

// 4,000 alternatives of 1,000 letters (4 MB): ~20 s to parse and build unmetered.
// The client's cancellation flag stops the parser at once, and the default work
// budget refuses it within its limit.
TEST(GrammarBuilder, HugeRegexStopsOnCancelAndOnTheWorkBudget) {
  std::string r;
  uint64_t x = 7;
  for (int i = 0; i < 4000; ++i) {
    if (i) r += '|';
    for (int j = 0; j < 1000; ++j) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      r += static_cast<char>('a' + (x >> 59) % 26);
    }
  }
  std::atomic<bool> cancel{true};
  WorkMeter cancelled(0, 0, &cancel);
  GrammarLimits limits;
  limits.meter = &cancelled;
  auto c = parse_regex(r, limits);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kCancelled) << c.status().to_string();
  EXPECT_LE(cancelled.used(), 1024);

  const GrammarBudget defaults;
  WorkMeter metered(defaults.compile_work, 0);
  limits.meter = &metered;
  auto m = parse_regex(r, limits);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kResourceExhausted) << m.status().to_string();
  EXPECT_LE(metered.used(), defaults.compile_work + 2048);  // a charge is at most one alternative
}

// A GBNF whose rules each need the next one, declared first: the productivity check
// takes one pass per rule (quadratic). Metered, it stops at the budget.
TEST(GrammarBuilder, QuadraticChecksStopAtTheBudget) {
  auto text = [](int n) {
    std::string t = "root ::= r0\n";
    for (int i = 0; i < n; ++i) {
      t.append("r").append(std::to_string(i)).append(" ::= \"a\" r").append(std::to_string(i + 1)).append("\n");
    }
    return t.append("r").append(std::to_string(n)).append(" ::= \"a\"\n");
  };
  EXPECT_TRUE(parse_gbnf(text(100)).ok());
  WorkMeter meter(1'000'000, 0);
  GrammarLimits limits;
  limits.meter = &meter;
  auto g = parse_gbnf(text(20'000), limits);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kResourceExhausted) << g.status().to_string();
  EXPECT_LE(meter.used(), 1'000'000 + 2048);
}

}  // namespace
}  // namespace llms
