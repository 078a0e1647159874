#include "metrics/metrics.h"

#include <gtest/gtest.h>

#include <thread>

namespace llms {
namespace {

TEST(MetricsTest, RendersPrometheusText) {
  Registry r;
  Counter& c = r.counter("llmserve_requests_total", "Requests.");
  c.inc();
  c.inc(2);
  Gauge& g = r.gauge("llmserve_running", "Running.");
  g.set(3);
  auto& fam = r.counter_family("llmserve_finished_total", "Finished.", {"reason"});
  fam.with({"stop"}).inc(5);
  fam.with({"le\"n"}).inc();
  Histogram& h = r.histogram("llmserve_ttft_seconds", "TTFT.", {0.1, 1.0});
  h.observe(0.05);
  h.observe(0.5);
  h.observe(5);
  const std::string text = r.render();
  EXPECT_NE(text.find("# TYPE llmserve_requests_total counter\nllmserve_requests_total 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("llmserve_running 3\n"), std::string::npos);
  EXPECT_NE(text.find("llmserve_finished_total{reason=\"stop\"} 5\n"), std::string::npos);
  EXPECT_NE(text.find("llmserve_finished_total{reason=\"le\\\"n\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("llmserve_ttft_seconds_bucket{le=\"0.1\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("llmserve_ttft_seconds_bucket{le=\"1\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("llmserve_ttft_seconds_bucket{le=\"+Inf\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("llmserve_ttft_seconds_sum 5.55\n"), std::string::npos);
  EXPECT_NE(text.find("llmserve_ttft_seconds_count 3\n"), std::string::npos);
}

TEST(MetricsTest, ConcurrentIncrementsAreNotLost) {
  Registry r;
  Counter& c = r.counter("c", "c");
  Histogram& h = r.histogram("h", "h", {1.0});
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        c.inc();
        h.observe(0.5);
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(c.value(), 40000);
  EXPECT_EQ(h.count(), 40000u);
  EXPECT_EQ(h.cumulative(0), 40000u);
}

TEST(MetricsTest, QuantileInterpolatesWithinBucket) {
  Histogram h({1.0, 2.0});
  for (int i = 0; i < 50; ++i) h.observe(0.5);
  for (int i = 0; i < 50; ++i) h.observe(1.5);
  EXPECT_NEAR(h.quantile(0.5), 1.0, 1e-9);
  EXPECT_NEAR(h.quantile(0.75), 1.5, 1e-9);
}

// Registries rendered together: one HELP/TYPE per name, each registry's series with
// its own labels in front of the family's.
TEST(MetricsTest, RenderAllMergesRegistriesUnderTheirLabels) {
  Registry server, v1, v2;
  server.counter("http_total", "H").inc(1);
  v1.counter("tokens_total", "T").inc(2);
  v2.counter("tokens_total", "T").inc(3);
  v2.counter_family("odd_total", "O", {"kind"}).with({"empty"}).inc();
  v1.histogram("lat", "L", {1.0}).observe(0.5);
  const LabeledRegistry parts[] = {{&server, {}}, {&v1, {{"version", "v1"}}}, {&v2, {{"version", "v2"}}}};
  const std::string t = Registry::render_all(parts);
  auto count = [&](const std::string& needle) {
    size_t n = 0;
    for (size_t at = t.find(needle); at != std::string::npos; at = t.find(needle, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("# TYPE tokens_total counter"), 1u) << t;
  EXPECT_EQ(count("http_total 1\n"), 1u) << t;
  EXPECT_EQ(count("tokens_total{version=\"v1\"} 2\n"), 1u) << t;
  EXPECT_EQ(count("tokens_total{version=\"v2\"} 3\n"), 1u) << t;
  EXPECT_EQ(count("odd_total{version=\"v2\",kind=\"empty\"} 1\n"), 1u) << t;
  EXPECT_EQ(count("lat_bucket{version=\"v1\",le=\"1\"} 1\n"), 1u) << t;
  // The series of one name stand together, under its header.
  EXPECT_LT(t.find("# TYPE tokens_total"), t.find("tokens_total{version=\"v1\"}"));
  EXPECT_LT(t.find("tokens_total{version=\"v2\"}"), t.find("# TYPE odd_total"));
  EXPECT_EQ(server.render(), Registry::render_all({&parts[0], 1}));
}

TEST(MetricsTest, AliasesRenderTheSameSeriesUnderAnotherName) {
  Registry v1, v2;
  v1.gauge("waiting", "W").set(2);
  v2.gauge("waiting", "W").set(5);
  v1.histogram("lat", "L", {1.0}).observe(0.5);
  const LabeledRegistry parts[] = {{&v1, {{"model_name", "m"}, {"version", "v1"}}}, {&v2, {{"model_name", "m"}, {"version", "v2"}}}};
  const MetricAlias aliases[] = {{"waiting", "other:waiting"}, {"lat", "other:lat"}, {"absent", "other:absent"}};
  const std::string t = Registry::render_aliases(parts, aliases);
  const std::string want =
      "# HELP other:waiting W\n# TYPE other:waiting gauge\n"
      "other:waiting{model_name=\"m\",version=\"v1\"} 2\n"
      "other:waiting{model_name=\"m\",version=\"v2\"} 5\n"
      "# HELP other:lat L\n# TYPE other:lat histogram\n"
      "other:lat_bucket{model_name=\"m\",version=\"v1\",le=\"1\"} 1\n"
      "other:lat_bucket{model_name=\"m\",version=\"v1\",le=\"+Inf\"} 1\n"
      "other:lat_sum{model_name=\"m\",version=\"v1\"} 0.5\n"
      "other:lat_count{model_name=\"m\",version=\"v1\"} 1\n";
  EXPECT_EQ(t, want);
}

}  // namespace
}  // namespace llms
