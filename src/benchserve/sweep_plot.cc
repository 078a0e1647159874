#include "benchserve/sweep_plot.h"

namespace llms::benchserve {

std::vector<LineChart> sweep_charts(const std::vector<BenchResult>& runs) {
  LineChart latency{"Latency against throughput", "request throughput (req/s)", "latency (ms)", {}, {}};
  ChartSeries ttft50{"TTFT p50", {}}, ttft99{"TTFT p99", {}}, e2e50{"E2E p50", {}}, e2e99{"E2E p99", {}};
  LineChart goodput{"Throughput and goodput against offered rate", "offered rate (req/s)", "requests/s", {}, {}};
  ChartSeries thr{"throughput", {}}, good{"goodput", {}};
  for (size_t i = 0; i < runs.size(); ++i) {
    const BenchResult& r = runs[i];
    const double x = r.request_throughput;
    ttft50.points.emplace_back(x, r.ttft_ms.median);
    ttft99.points.emplace_back(x, r.ttft_ms.at(99));
    e2e50.points.emplace_back(x, r.e2el_ms.median);
    e2e99.points.emplace_back(x, r.e2el_ms.at(99));
    goodput.x_categories.push_back(rate_label(r.request_rate));
    thr.points.emplace_back(static_cast<double>(i), r.request_throughput);
    if (r.request_goodput) good.points.emplace_back(static_cast<double>(i), *r.request_goodput);
  }
  latency.series = {ttft50, ttft99, e2e50, e2e99};
  goodput.series = {thr};
  if (!good.points.empty()) goodput.series.push_back(good);
  return {latency, goodput};
}

std::string sweep_svg(const std::vector<BenchResult>& runs, const std::string& title) {
  return render_svg(sweep_charts(runs), title);
}

}  // namespace llms::benchserve
