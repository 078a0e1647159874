#include "base/status.h"

#include <gtest/gtest.h>

namespace llms {
namespace {

Result<int> parse_positive(int v) {
  if (v <= 0) return invalid_argument("must be positive, got " + std::to_string(v));
  return v;
}

Result<int> doubled(int v) {
  LLMS_ASSIGN_OR_RETURN(int x, parse_positive(v));
  return 2 * x;
}

Status check_all(int a, int b) {
  LLMS_RETURN_IF_ERROR(parse_positive(a).status());
  LLMS_RETURN_IF_ERROR(parse_positive(b).status());
  return ok_status();
}

TEST(StatusTest, OkAndErrorCarryCodeAndMessage) {
  EXPECT_TRUE(Status().ok());
  const Status s = data_loss("bad magic");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_EQ(s.to_string(), "DATA_LOSS: bad magic");
  EXPECT_EQ(s.with_context("file.gguf").message(), "file.gguf: bad magic");
}

TEST(StatusTest, MacrosPropagateErrors) {
  EXPECT_EQ(doubled(4).value(), 8);
  const auto r = doubled(-1);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("-1"), std::string::npos);
  EXPECT_TRUE(check_all(1, 2).ok());
  EXPECT_NE(check_all(1, -2).message().find("-2"), std::string::npos);
}

TEST(StatusDeathTest, ValueOfErrorAborts) {
  EXPECT_DEATH({ (void)parse_positive(0).value(); }, "value\\(\\) on error");
}

}  // namespace
}  // namespace llms
