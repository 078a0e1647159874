// What a run measured, computed from its outcomes: counts, throughputs, latency
// distributions in milliseconds (TTFT, TPOT, ITL, E2E), goodput against the SLOs,
// failures grouped by message, the server's /metrics deltas, and the cost at a price
// per hour. TPOT excludes requests of one token; TTFT those that carried no text.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "benchserve/bench_options.h"
#include "benchserve/bench_run.h"
#include "benchserve/stats.h"

namespace llms::benchserve {

struct BenchResult {
  double request_rate = 0;
  int num_prompts = 0, completed = 0, failed = 0;
  double duration_s = 0;
  long long total_input_tokens = 0, total_output_tokens = 0;
  bool input_tokens_reported = true;  // false when a completed request's usage lacked prompt_tokens
  double request_throughput = 0, output_throughput = 0, total_token_throughput = 0;
  int good_requests = 0;
  std::optional<double> request_goodput;  // set when --goodput was given
  int peak_concurrency = 0;
  Distribution ttft_ms, tpot_ms, itl_ms, e2el_ms;
  std::vector<std::pair<std::string, int>> errors;  // message, count; most frequent first
  ServerDelta server;
  // The client's TTFT p50 read through the server's TTFT buckets (same interpolation as
  // the server's own p50), when the server has that histogram.
  std::optional<double> client_ttft_p50_in_server_buckets_s;
  // What servers that time each request report in it (llama-server: timings.prompt_ms,
  // its prefill without queueing); count 0 when none did.
  Distribution server_prompt_ms;
  std::optional<double> cost_usd, cost_per_million_output_tokens, cost_per_thousand_requests;
  // Per completed request, in prompt order, as vLLM saves them.
  std::vector<int> input_lens, output_lens;
  std::vector<double> ttfts_s;
};

// Completed requests that met every SLO that is set (TPOT counts as 0 for one token).
int count_good(const std::vector<RequestOutcome>& outcomes, const GoodputSlo& slo);

// The percentiles reported: the requested ones and 99 (always saved), ascending.
std::vector<double> reported_percentiles(const std::vector<double>& requested);

BenchResult compute_result(const RunOutput& run, const BenchOptions& o);

}  // namespace llms::benchserve
