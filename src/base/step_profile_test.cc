#include "base/step_profile.h"

#include <gtest/gtest.h>

namespace llms {
namespace {

TEST(StepProfileTest, BucketsByTokens) {
  EXPECT_EQ(step_bucket(1), 0);
  EXPECT_EQ(step_bucket(2), 1);
  EXPECT_EQ(step_bucket(8), 1);
  EXPECT_EQ(step_bucket(9), 2);
  EXPECT_EQ(step_bucket(32), 2);
  EXPECT_EQ(step_bucket(33), 3);
  EXPECT_EQ(step_bucket(512), 4);
  EXPECT_EQ(step_bucket(513), 5);
  EXPECT_STREQ(step_bucket_name(2), "9-32");
}

TEST(StepProfileTest, StepsAccumulateIntoTheirBucket) {
  StepProfile p;
  p.set_enabled(true);
  p.add(StepPart::kMatmul, 600);
  p.add(StepPart::kAttention, 200);
  p.add(StepPart::kMatmul, 100);
  *p.wait_counter() += 50;
  p.end_step(32, 1000);
  p.add(StepPart::kSampling, 7);
  p.end_step(30, 500);
  p.add(StepPart::kMatmul, 999);
  p.discard_step();  // a step that ran nothing leaves no trace
  p.end_step(1, 10);
  const StepBucketProfile& b = p.buckets()[2];
  EXPECT_EQ(b.steps, 2);
  EXPECT_EQ(b.tokens, 62);
  EXPECT_EQ(b.total_ns, 1500);
  EXPECT_EQ(b.pool_wait_ns, 50);
  EXPECT_EQ(b.part_ns[static_cast<size_t>(StepPart::kMatmul)], 700);
  EXPECT_EQ(b.part_ns[static_cast<size_t>(StepPart::kAttention)], 200);
  EXPECT_EQ(b.part_ns[static_cast<size_t>(StepPart::kSampling)], 7);
  EXPECT_EQ(p.buckets()[0].steps, 1);
  EXPECT_EQ(p.buckets()[0].part_ns[static_cast<size_t>(StepPart::kMatmul)], 0);
  // 700 of 1500 ns: 46.7%; the table names each part and the buckets seen.
  const std::string t = p.table();
  EXPECT_NE(t.find("matmul"), std::string::npos);
  EXPECT_NE(t.find("9-32"), std::string::npos);
  EXPECT_NE(t.find("46.7%"), std::string::npos);
  EXPECT_EQ(t.find("2-8"), std::string::npos);
}

TEST(StepProfileTest, ScopedPartCountsOnlyWhenEnabled) {
  StepProfile p;
  { ScopedStepPart s(&p, StepPart::kAttention); }
  { ScopedStepPart s(nullptr, StepPart::kAttention); }
  p.end_step(1, 1);
  EXPECT_EQ(p.buckets()[0].part_ns[static_cast<size_t>(StepPart::kAttention)], 0);
  p.set_enabled(true);
  {
    ScopedStepPart s(&p, StepPart::kAttention);
    // Spin until the clock has moved: the scope must then record a positive time.
    const int64_t t0 = now_ns();
    while (now_ns() == t0) {
    }
  }
  p.end_step(1, 1);
  EXPECT_GT(p.buckets()[0].part_ns[static_cast<size_t>(StepPart::kAttention)], 0);
}

}  // namespace
}  // namespace llms
