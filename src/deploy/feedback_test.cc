#include "deploy/feedback.h"

#include <gtest/gtest.h>

#include <vector>

namespace llms {
namespace {

// Records `ratings` for `version`, one request each.
void rate(FeedbackBook& book, const std::string& version, const std::vector<int>& ratings) {
  static int next = 0;
  for (int r : ratings) {
    const std::string id = "req-" + std::to_string(next++);
    book.remember(id, version);
    ASSERT_TRUE(book.record(Feedback{id, r, {}, "", ""}).ok());
  }
}

// n ratings of a version: three in four `up`, one in four 0 (thumbs).
std::vector<int> thumbs(int n, int up) {
  std::vector<int> out;
  for (int i = 0; i < n; ++i) out.push_back(i % 4 == 0 ? 0 : up);
  return out;
}

TEST(FeedbackTest, StatsCountMeanAndNegativeShare) {
  Registry registry;
  FeedbackBook book({RatingScale::kStars}, registry);
  rate(book, "v1", {5, 4, 2, 1, 3});
  const VersionFeedback f = book.stats("v1");
  EXPECT_EQ(f.count(), 5);
  EXPECT_DOUBLE_EQ(f.mean(), 3.0);                 // (5+4+2+1+3)/5
  EXPECT_DOUBLE_EQ(f.negative_share(), 2.0 / 5);   // 2 and 1
  EXPECT_DOUBLE_EQ(f.ratings.variance(), 2.5);     // (4+1+1+4+0)/4
  EXPECT_EQ(book.stats("v2").count(), 0);
  EXPECT_EQ(book.stats("v2").negative_share(), 0);
}

// The feedback signal in the canary decision: ratings counted since a start, a lower
// mean rating is worse, the same ratings are no worse once there are enough, and
// nothing is decided below the minimum.
TEST(FeedbackTest, SignalJudgesTheRatingsSinceTheStart) {
  Registry registry;
  FeedbackBook book({}, registry);
  rate(book, "stable", thumbs(40, -1));  // before the canary: not counted
  const MeanStream stable_start = book.stats("stable").ratings;
  rate(book, "stable", thumbs(20, 1));
  rate(book, "bad", thumbs(20, -1));
  auto signal = [&](const std::string& cand, int64_t min) {
    return feedback_signal(book.stats(cand).ratings, book.stats("stable").ratings.since(stable_start), 0.5, min);
  };
  CanarySignal s = signal("bad", 20);
  EXPECT_EQ(s.name, "feedback");
  EXPECT_DOUBLE_EQ(s.stable.mean, -0.75);  // negated: higher is worse
  CanaryVerdict v = judge_canary(std::span(&s, 1), 0.05);
  EXPECT_EQ(v.verdict, Verdict::kWorse) << v.figures;
  EXPECT_EQ(v.reason, "feedback");
  s = signal("bad", 21);
  EXPECT_EQ(judge_canary(std::span(&s, 1), 0.05).verdict, Verdict::kUndecided);
  // Judged on the stable version's lifetime, its early bad ratings would hide the canary's.
  s = feedback_signal(book.stats("bad").ratings, book.stats("stable").ratings, 0.5, 20);
  EXPECT_NE(judge_canary(std::span(&s, 1), 0.05).verdict, Verdict::kWorse);
  // Rated as well as the stable version: no worse after enough ratings on both sides.
  rate(book, "good", thumbs(200, 1));
  rate(book, "stable", thumbs(180, 1));
  s = signal("good", 20);
  v = judge_canary(std::span(&s, 1), 0.05);
  EXPECT_EQ(v.verdict, Verdict::kNoWorse) << v.figures;
}

}  // namespace
}  // namespace llms
