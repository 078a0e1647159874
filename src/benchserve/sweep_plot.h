// The figure of a --sweep-rates run: latency percentiles (TTFT and end-to-end, p50
// and p99, ms) against the measured request throughput, and request throughput and
// goodput against the offered rate.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "benchserve/bench_result.h"
#include "benchserve/svg_chart.h"

namespace llms::benchserve {

std::vector<LineChart> sweep_charts(const std::vector<BenchResult>& runs);
std::string sweep_svg(const std::vector<BenchResult>& runs, const std::string& title);

}  // namespace llms::benchserve
