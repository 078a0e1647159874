#include "engine/step_plan.h"

#include <gtest/gtest.h>

namespace llms {
namespace {

TEST(StepPlan, ForwardRoundTripsEveryFieldOfEveryChunk) {
  const std::vector<int32_t> a = {5, 6, 7}, ta = {3, 9}, b = {42}, tb = {1, 2, 8};
  std::vector<SequenceChunk> chunks = {{a, 0, ta, LogitsWanted::kNone}, {b, 33, tb, LogitsWanted::kAll, 33}};
  auto plan = decode_plan(encode_forward(chunks));
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  ASSERT_EQ(plan->kind, PlanKind::kForward);
  ASSERT_EQ(plan->chunks.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const SequenceChunk &want = chunks[i], &got = plan->chunks[i];
    EXPECT_EQ(std::vector<int32_t>(got.tokens.begin(), got.tokens.end()),
              std::vector<int32_t>(want.tokens.begin(), want.tokens.end()));
    EXPECT_EQ(std::vector<int32_t>(got.block_table.begin(), got.block_table.end()),
              std::vector<int32_t>(want.block_table.begin(), want.block_table.end()));
    EXPECT_EQ(got.start_pos, want.start_pos);
    EXPECT_EQ(got.logits, want.logits);
    EXPECT_EQ(got.early_exit_from, want.early_exit_from);
  }
}

TEST(StepPlan, SetupDiscardAndStopRoundTrip) {
  auto setup = decode_plan(encode_setup({1234, 32, DType::kQ8_0, DType::kF32, true, 4096}));
  ASSERT_TRUE(setup.ok());
  EXPECT_EQ(setup->kind, PlanKind::kSetup);
  EXPECT_EQ(setup->setup.num_blocks, 1234);
  EXPECT_EQ(setup->setup.block_size, 32);
  EXPECT_EQ(setup->setup.k_type, DType::kQ8_0);
  EXPECT_EQ(setup->setup.v_type, DType::kF32);
  EXPECT_TRUE(setup->setup.commit_at_start);
  EXPECT_EQ(setup->setup.context_length, 4096);
  const int32_t blocks[] = {4, 5};
  auto discard = decode_plan(encode_discard(blocks));
  ASSERT_TRUE(discard.ok());
  EXPECT_EQ(discard->blocks, (std::vector<int32_t>{4, 5}));
  EXPECT_EQ(decode_plan(encode_stop())->kind, PlanKind::kStop);
}

TEST(StepPlan, TruncatedOrPaddedBytesAreDataLoss) {
  const std::vector<int32_t> a = {5, 6, 7}, ta = {3};
  const SequenceChunk c{a, 0, ta};
  std::vector<uint8_t> bytes = encode_forward({&c, 1});
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_EQ(decode_plan(std::span<const uint8_t>(bytes).first(n)).status().code(), StatusCode::kDataLoss) << n;
  }
  bytes.push_back(0);
  EXPECT_EQ(decode_plan(bytes).status().code(), StatusCode::kDataLoss);
}

}  // namespace
}  // namespace llms
