#include "tensor/dtype.h"

#include <gtest/gtest.h>

namespace llms {
namespace {

// Block sizes and bytes per block as published in the GGUF specification's table of
// ggml types (block structs of ggml-common.h), written out by hand.
TEST(DTypeTest, SizesMatchSpecification) {
  struct Row { uint32_t id; const char* name; int64_t block, bytes; };
  const Row rows[] = {
      {0, "f32", 1, 4},        {1, "f16", 1, 2},        {2, "q4_0", 32, 18},     {3, "q4_1", 32, 20},
      {6, "q5_0", 32, 22},     {7, "q5_1", 32, 24},     {8, "q8_0", 32, 34},     {9, "q8_1", 32, 36},
      {10, "q2_k", 256, 84},   {11, "q3_k", 256, 110},  {12, "q4_k", 256, 144},  {13, "q5_k", 256, 176},
      {14, "q6_k", 256, 210},  {15, "q8_k", 256, 292},  {16, "iq2_xxs", 256, 66}, {17, "iq2_xs", 256, 74},
      {18, "iq3_xxs", 256, 98}, {19, "iq1_s", 256, 50}, {20, "iq4_nl", 32, 18},  {21, "iq3_s", 256, 110},
      {22, "iq2_s", 256, 82},  {23, "iq4_xs", 256, 136}, {24, "i8", 1, 1},      {25, "i16", 1, 2},
      {26, "i32", 1, 4},       {27, "i64", 1, 8},       {28, "f64", 1, 8},       {29, "iq1_m", 256, 56},
      {30, "bf16", 1, 2},      {34, "tq1_0", 256, 54},  {35, "tq2_0", 256, 66},  {39, "mxfp4", 32, 17},
  };
  for (const auto& r : rows) {
    const auto info = dtype_info(r.id);
    ASSERT_TRUE(info.has_value()) << r.name;
    EXPECT_STREQ(info->name, r.name);
    EXPECT_EQ(info->block_size, r.block) << r.name;
    EXPECT_EQ(info->type_size, r.bytes) << r.name;
  }
}

TEST(DTypeTest, RemovedAndUnknownIdsAreRejected) {
  for (uint32_t id : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u, 40u, 1000u}) EXPECT_FALSE(dtype_info(id).has_value()) << id;
}

TEST(DTypeTest, NamesRoundTrip) {
  EXPECT_EQ(dtype_from_name("Q4_K"), DType::kQ4_K);
  EXPECT_EQ(dtype_from_name("bf16"), DType::kBF16);
  EXPECT_FALSE(dtype_from_name("q9_9").has_value());
  EXPECT_EQ(dtype_row_bytes(DType::kQ8_0, 64), 68);
  EXPECT_TRUE(row_fits_blocks(DType::kQ4_K, 512));
  EXPECT_FALSE(row_fits_blocks(DType::kQ4_K, 172));
}

}  // namespace
}  // namespace llms
