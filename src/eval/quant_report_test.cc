#include "eval/quant_report.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>

#include "tools/synthetic.h"

namespace llms {
namespace {

TEST(QuantReportTest, ErrorsGrowAsBitsShrinkAndOutputsAreMeasured) {
  SyntheticSpec spec = synthetic_preset("tiny").value();
  const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_qr.gguf";
  ASSERT_TRUE(write_synthetic_model(spec, path).ok());
  QuantReportOptions o;
  o.type = DType::kQ8_0;
  auto q8 = quant_report(path, o);
  o.type = DType::kQ4_0;
  for (int i = 0; i < 40; ++i) o.tokens.push_back(3 + i * 11 % 500);
  o.tolerance = 0.11;
  auto q4 = quant_report(path, o);
  ASSERT_TRUE(q8.ok() && q4.ok()) << q4.status().to_string();
  ASSERT_EQ(q8->tensors.size(), q4->tensors.size());
  for (size_t i = 0; i < q8->tensors.size(); ++i) {
    const auto& a = q8->tensors[i];
    const auto& b = q4->tensors[i];
    EXPECT_LT(a.relative_rms, b.relative_rms) << a.name;
    EXPECT_GT(a.snr_db, b.snr_db) << a.name;
    EXPECT_EQ(a.output_relative_rms, -1);  // no text
    if (b.name == "token_embd.weight") {
      EXPECT_EQ(b.output_relative_rms, -1);  // looked up, never multiplied
    } else {
      EXPECT_GT(b.output_relative_rms, 0) << b.name;
      EXPECT_LT(b.output_relative_rms, 1.0) << b.name;
    }
    EXPECT_NEAR(b.kurtosis, 0.0, 0.5) << b.name;  // Gaussian weights
    EXPECT_EQ(b.flagged, b.relative_rms > 0.11 || b.output_relative_rms > 0.11);
  }
  EXPECT_EQ(q4->text_tokens, 40);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace llms
