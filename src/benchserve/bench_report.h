// How a run is reported: the text printed after it, the JSON saved by --save-result
// (vLLM's keys where vLLM has one, so that notebooks written for `vllm bench serve`
// read it: completed, failed, request_throughput, output_throughput, request_goodput,
// mean_/median_/std_/pNN_ for ttft_ms, tpot_ms, itl_ms, e2el_ms, ...) and a markdown
// summary beside it.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "benchserve/bench_options.h"
#include "benchserve/bench_result.h"

namespace llms::benchserve {

// What a report says about the setup besides the options.
struct RunContext {
  std::string model;
  std::string date;  // e.g. 20261201-111500
};

// "p99", "p99.9": vLLM's spelling of a percentile in key names.
std::string percentile_key(double p);

nlohmann::json result_json(const BenchResult& r, const BenchOptions& o, const RunContext& ctx);
// One JSON for a sweep: the options and one result_json per rate under "runs".
nlohmann::json sweep_json(const std::vector<BenchResult>& runs, const BenchOptions& o, const RunContext& ctx);

// The human-readable block printed after a run.
std::string result_text(const BenchResult& r, const BenchOptions& o);
// Markdown: the setup, then a table with one row per run.
std::string markdown_summary(const std::vector<BenchResult>& runs, const BenchOptions& o, const RunContext& ctx);

}  // namespace llms::benchserve
