#include "eval/task_score.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

namespace llms {
namespace {

const std::string kData = std::string(LLMSERVE_SOURCE_DIR) + "/tests/data/task_score/";

TEST(Tokenize13a, SplitsPunctuationButNotNumbers) {
  // Derived by hand from mteval-v13a's rules.
  EXPECT_EQ(tokenize_13a("Hello, world! 3,000.50 and 2019-2020."),
            (std::vector<std::string>{"Hello", ",", "world", "!", "3,000.50", "and", "2019", "-", "2020", "."}));
  EXPECT_EQ(tokenize_13a("a&amp;b &quot;x&quot; $5/kg"),
            (std::vector<std::string>{"a", "&", "b", "\"", "x", "\"", "$", "5", "/", "kg"}));
  EXPECT_EQ(tokenize_13a("well-\nknown\nline  "), (std::vector<std::string>{"wellknown", "line"}));
  EXPECT_TRUE(tokenize_13a(" \t ").empty());
}

TEST(TaskScore, BrevityPenaltyAndSmoothingByHand) {
  // 4 answer tokens against 9 reference tokens, every n-gram of the answer matched:
  // precisions 100, BLEU = exp(1 - 9/4) * 100.
  const BleuScore b = bleu_from_stats(bleu_stats("the quick brown fox", "the quick brown fox jumps over the lazy dog"));
  EXPECT_DOUBLE_EQ(b.brevity_penalty, std::exp(1.0 - 9.0 / 4.0));
  EXPECT_NEAR(b.score, 100 * std::exp(1.0 - 9.0 / 4.0), 1e-9);
  // No 4-gram matches out of 3: 'exp' smoothing gives 100 / (2 * 3).
  const BleuScore z = bleu_from_stats(bleu_stats("alpha beta gamma x delta epsilon", "alpha beta gamma delta epsilon zeta"));
  EXPECT_NEAR(z.precisions[3], 100.0 / 6, 1e-12);
  EXPECT_NEAR(z.precisions[2], 25.0, 1e-12);
  // Fewer than 4 answer tokens in the corpus: no 4-grams, BLEU 0 even when all match.
  EXPECT_EQ(bleu_from_stats(bleu_stats("yes no", "yes no")).score, 0.0);
  EXPECT_EQ(score_task({}).bleu.score, 0.0);
}

// The committed pairs against the values scripts/task-score-reference.py computed.
TEST(TaskScore, MatchesTheReferenceScript) {
  std::ifstream in(kData + "pairs.jsonl");
  ASSERT_TRUE(in) << kData;
  std::map<std::string, std::vector<TaskPair>> corpora;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    const auto j = nlohmann::json::parse(line);
    const TaskPair p{j["hypothesis"], j["reference"]};
    corpora[j["corpus"]].push_back(p);
    corpora["all"].push_back(p);
  }
  std::ifstream ein(kData + "expected.json");
  const auto expected = nlohmann::json::parse(ein);
  ASSERT_EQ(expected.size(), corpora.size());
  for (const auto& [name, pairs] : corpora) {
    SCOPED_TRACE(name);
    const auto& e = expected.at(name);
    const TaskScores t = score_task(pairs);
    EXPECT_EQ(t.pairs, e["pairs"].get<int64_t>());
    EXPECT_EQ(t.bleu.sys_len, e["sys_len"].get<int64_t>());
    EXPECT_EQ(t.bleu.ref_len, e["ref_len"].get<int64_t>());
    EXPECT_NEAR(t.bleu.brevity_penalty, e["bp"].get<double>(), 1e-12);
    for (size_t n = 0; n < 4; ++n) EXPECT_NEAR(t.bleu.precisions[n], e["precisions"][n].get<double>(), 1e-9);
    EXPECT_NEAR(t.bleu.score, e["bleu"].get<double>(), 1e-9);
    EXPECT_NEAR(t.chrf, e["chrf"].get<double>(), 1e-9);
    EXPECT_NEAR(t.exact_match, e["exact_match"].get<double>(), 1e-12);
  }
  // The set covers what it claims to: a brevity penalty, smoothed orders, a zero.
  EXPECT_LT(expected["brevity"]["bp"].get<double>(), 1.0);
  EXPECT_EQ(expected["no_match"]["bleu"].get<double>(), 0.0);
  EXPECT_GT(expected["zero_3_4gram"]["bleu"].get<double>(), 0.0);
}

TEST(TaskScore, ReadsPairsAndNamesABadLine) {
  const std::string path = ::testing::TempDir() + "/task_pairs.jsonl";
  {
    std::ofstream out(path);
    out << R"({"hypothesis": "a", "reference": "a"})" << "\n\n" << R"({"hypothesis": "b"})" << "\n";
  }
  auto r = read_task_pairs(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(":3:"), std::string::npos) << r.status().message();
  {
    std::ofstream out(path);
    out << R"({"hypothesis": "a b", "reference": "a b"})" << "\n";
  }
  r = read_task_pairs(path);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ(exact_match(*r), 1.0);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace llms
