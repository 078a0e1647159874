// One measured run: the prompts sent at the arrival process's times (at most
// max_concurrency in flight), each streamed and timed, with /metrics read before and
// after. What is computed from the outcomes lives in bench_result.h.
//
// Thread-safety: run_benchmark() blocks its caller; it starts and joins its own
// sending threads.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "benchserve/bench_options.h"
#include "benchserve/dataset.h"
#include "benchserve/openai_client.h"
#include "benchserve/metrics_delta.h"

namespace llms::benchserve {

struct RunOutput {
  double rate = 0;  // the offered request rate of this run
  std::vector<RequestOutcome> outcomes;  // in prompt order
  double duration_s = 0;                 // first send to last finish
  int peak_concurrency = 0;              // most requests in flight at once
  MetricsSnapshot metrics_before, metrics_after;  // empty when /metrics did not answer
};

// Called as requests finish (done of total), from the caller's thread.
using ProgressFn = std::function<void(int done, int total)>;

// Sends `prompts` to `model` at `rate` and waits for every answer; a request's failure
// is an outcome, not an error.
RunOutput run_benchmark(const BenchOptions& o, const std::string& model, double rate,
                        const std::vector<BenchPrompt>& prompts, const ProgressFn& progress = {});

// A progress bar on stderr when it is a terminal, nothing otherwise.
ProgressFn terminal_progress(const std::string& label);

}  // namespace llms::benchserve
