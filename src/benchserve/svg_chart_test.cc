#include "benchserve/svg_chart.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <sstream>

#include "benchserve/sweep_plot.h"

namespace llms::benchserve {
namespace {

// A minimal XML reader: checks that every tag closes in order and collects the
// elements' names and attributes. Enough for markup this writer produces (no CDATA,
// no comments).
struct Element {
  std::string name;
  std::map<std::string, std::string> attrs;
  std::string text;  // character data directly inside, for <text>
};

bool parse_xml(const std::string& s, std::vector<Element>& out, std::string& error) {
  std::vector<std::string> open;
  size_t pos = 0;
  while ((pos = s.find('<', pos)) != std::string::npos) {
    const size_t end = s.find('>', pos);
    if (end == std::string::npos) return error = "unterminated tag", false;
    std::string tag = s.substr(pos + 1, end - pos - 1);
    const size_t after = end + 1;
    pos = after;
    if (tag[0] == '?') continue;
    if (tag[0] == '/') {
      if (open.empty() || open.back() != tag.substr(1)) return error = "mismatched </" + tag.substr(1) + ">", false;
      open.pop_back();
      continue;
    }
    const bool self_closing = tag.back() == '/';
    if (self_closing) tag.pop_back();
    Element e;
    std::istringstream in(tag);
    in >> e.name;
    std::string rest((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t p = 0;
    while ((p = rest.find('=', p)) != std::string::npos) {
      size_t k = p;
      while (k > 0 && rest[k - 1] != ' ') --k;
      const std::string key = rest.substr(k, p - k);
      if (rest[p + 1] != '"') return error = "unquoted attribute " + key, false;
      const size_t close = rest.find('"', p + 2);
      if (close == std::string::npos) return error = "unterminated attribute " + key, false;
      e.attrs[key] = rest.substr(p + 2, close - p - 2);
      p = close + 1;
    }
    if (!self_closing) {
      open.push_back(e.name);
      e.text = s.substr(after, s.find('<', after) - after);
    }
    out.push_back(std::move(e));
  }
  if (!open.empty()) return error = "<" + open.back() + "> never closed", false;
  return true;
}

std::vector<Element> elements(const std::string& svg) {
  std::vector<Element> out;
  std::string error;
  EXPECT_TRUE(parse_xml(svg, out, error)) << error;
  return out;
}

size_t count_points(const std::string& points) {
  std::istringstream in(points);
  std::string pair;
  size_t n = 0;
  while (in >> pair) {
    EXPECT_NE(pair.find(','), std::string::npos) << pair;
    ++n;
  }
  return n;
}

TEST(SvgChart, NiceTicksAreRoundAndCoverTheMaximum) {
  EXPECT_EQ(nice_ticks(7.3), (std::vector<double>{0, 2, 4, 6, 8}));
  EXPECT_EQ(nice_ticks(100), (std::vector<double>{0, 20, 40, 60, 80, 100}));
  const auto small = nice_ticks(0.9);
  EXPECT_NEAR(small.back(), 1.0, 1e-12);
  EXPECT_NEAR(small[1], 0.2, 1e-12);
  EXPECT_EQ(nice_ticks(0), (std::vector<double>{0, 1}));
}

TEST(SvgChart, WellFormedWithAxesLegendAndOnePolylinePerSeries) {
  LineChart c{"Title & <more>", "x (req/s)", "y (ms)", {}, {}};
  c.series = {{"one", {{0, 1}, {1, 2}, {2, 4}}}, {"two", {{0.5, 3}, {1.5, 1}}}};
  const std::string svg = render_svg({c}, "Figure");
  ASSERT_EQ(svg.rfind("<?xml", 0), 0u);
  const auto els = elements(svg);
  ASSERT_FALSE(els.empty());
  EXPECT_EQ(els[0].name, "svg");
  EXPECT_EQ(els[0].attrs.at("xmlns"), "http://www.w3.org/2000/svg");
  std::map<std::string, size_t> series;
  std::vector<std::string> texts;
  for (const auto& e : els) {
    if (e.name == "polyline") series[e.attrs.at("data-series")] = count_points(e.attrs.at("points"));
    if (e.name == "text") texts.push_back(e.text);
  }
  EXPECT_EQ(series, (std::map<std::string, size_t>{{"one", 3}, {"two", 2}}));
  const auto has = [&](const std::string& t) { return std::find(texts.begin(), texts.end(), t) != texts.end(); };
  EXPECT_TRUE(has("x (req/s)"));
  EXPECT_TRUE(has("y (ms)"));
  EXPECT_TRUE(has("one"));  // legend
  EXPECT_TRUE(has("two"));
  EXPECT_TRUE(has("Title &amp; &lt;more&gt;"));  // escaped
  EXPECT_TRUE(has("4"));                        // a y tick
}

TEST(SvgChart, SweepFigureHasLatencyAndGoodputSeriesOverEveryRate) {
  std::vector<BenchResult> runs(3);
  const double rates[] = {1, 2, INFINITY};
  for (int i = 0; i < 3; ++i) {
    runs[i].request_rate = rates[i];
    runs[i].request_throughput = 0.9 * (i + 1);
    runs[i].request_goodput = 0.8 * (i + 1);
    runs[i].ttft_ms = summarize({10.0 * (i + 1), 20.0 * (i + 1)}, {50, 99});
    runs[i].e2el_ms = summarize({100.0 * (i + 1)}, {50, 99});
  }
  const auto els = elements(sweep_svg(runs, "sweep"));
  std::map<std::string, size_t> series;
  std::vector<std::string> texts;
  for (const auto& e : els) {
    if (e.name == "polyline") series[e.attrs.at("data-series")] = count_points(e.attrs.at("points"));
    if (e.name == "text") texts.push_back(e.text);
  }
  for (const char* name : {"TTFT p50", "TTFT p99", "E2E p50", "E2E p99", "throughput", "goodput"}) {
    EXPECT_EQ(series[name], 3u) << name;
  }
  EXPECT_NE(std::find(texts.begin(), texts.end(), "inf"), texts.end());  // the rate axis' last label
  EXPECT_NE(std::find(texts.begin(), texts.end(), "latency (ms)"), texts.end());
}

}  // namespace
}  // namespace llms::benchserve
