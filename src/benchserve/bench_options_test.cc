#include "benchserve/bench_options.h"

#include <gtest/gtest.h>

#include <cmath>

namespace llms::benchserve {
namespace {

TEST(BenchOptions, GoodputTakesAnySubsetInOneOrManyArguments) {
  auto a = parse_goodput({"ttft:500", "tpot:50"});
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(*a.value().ttft_ms, 500);
  EXPECT_EQ(*a.value().tpot_ms, 50);
  EXPECT_FALSE(a.value().e2el_ms.has_value());
  auto b = parse_goodput({"e2el:2500.5 ttft:1"});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b.value().e2el_ms, 2500.5);
}

TEST(BenchOptions, BadGoodputSaysWhatIsExpected) {
  EXPECT_NE(parse_goodput({"ttft"}).status().message().find("KEY:MS"), std::string::npos);
  EXPECT_NE(parse_goodput({"ttft:-3"}).status().message().find("MS > 0"), std::string::npos);
  EXPECT_NE(parse_goodput({"ttft:abc"}).status().message().find("ttft:abc"), std::string::npos);
  EXPECT_NE(parse_goodput({"latency:5"}).status().message().find("unknown metric 'latency'"), std::string::npos);
  EXPECT_FALSE(parse_goodput({}).ok());
}

TEST(BenchOptions, PercentilesAndRates) {
  EXPECT_EQ(parse_percentiles("50,90,99.9").value(), (std::vector<double>{50, 90, 99.9}));
  EXPECT_FALSE(parse_percentiles("0").ok());
  EXPECT_FALSE(parse_percentiles("101").ok());
  EXPECT_FALSE(parse_percentiles("50,x").ok());
  EXPECT_FALSE(parse_percentiles("").ok());
  const auto r = parse_rates("1,2.5,inf");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value()[1], 2.5);
  EXPECT_TRUE(std::isinf(r.value()[2]));
  EXPECT_NE(parse_rates("1,0").status().message().find("--sweep-rates"), std::string::npos);
  EXPECT_FALSE(parse_rate("-1").ok());
  EXPECT_FALSE(parse_rate("fast").ok());
  EXPECT_EQ(rate_label(INFINITY), "inf");
  EXPECT_EQ(rate_label(2.5), "2.5");
}

TEST(BenchOptions, ValidationNamesTheFlag) {
  const auto message = [](auto change) {
    BenchOptions o;
    change(o);
    return validate_options(o).message();
  };
  EXPECT_TRUE(validate_options(BenchOptions{}).ok());
  EXPECT_NE(message([](BenchOptions& o) { o.base_url = "localhost:8080"; }).find("--base-url"), std::string::npos);
  EXPECT_NE(message([](BenchOptions& o) { o.endpoint = "/v1/embeddings"; }).find("--endpoint"), std::string::npos);
  EXPECT_NE(message([](BenchOptions& o) { o.num_prompts = 0; }).find("--num-prompts"), std::string::npos);
  EXPECT_NE(message([](BenchOptions& o) { o.burstiness = 0; }).find("--burstiness"), std::string::npos);
  EXPECT_NE(message([](BenchOptions& o) { o.max_concurrency = -1; }).find("--max-concurrency"), std::string::npos);
  EXPECT_NE(message([](BenchOptions& o) { o.range_ratio = 1; }).find("--range-ratio"), std::string::npos);
  EXPECT_NE(message([](BenchOptions& o) { o.output_len = 0; }).find("--output-len"), std::string::npos);
  EXPECT_NE(message([](BenchOptions& o) { o.price_per_hour = -2; }).find("--price-per-hour"), std::string::npos);
  EXPECT_NE(message([](BenchOptions& o) { o.warmup = -1; }).find("--warmup"), std::string::npos);
}

}  // namespace
}  // namespace llms::benchserve
