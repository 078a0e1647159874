// `llmserve bench serve` end to end: finds the model, makes the prompts, sends the
// warm-up, runs each rate (one, or every --sweep-rates entry, each with prompts of its
// own so that no server's result cache answers a later rate), prints each result,
// and writes --save-result's JSON and markdown and the sweep's SVG.
//
// Thread-safety: blocks its caller; one call at a time per process is the intent
// (it draws a progress bar on stderr when that is a terminal).
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "base/status.h"
#include "benchserve/bench_options.h"
#include "benchserve/bench_result.h"

namespace llms::benchserve {

struct BenchServeOutput {
  std::string model;
  std::vector<BenchResult> runs;
  std::vector<std::string> files_written;
};

// Results go to `out` (nullptr: quiet). An error when the options are invalid, the
// server cannot be reached, the warm-up or a run completed no request, or a file
// cannot be written.
Result<BenchServeOutput> bench_serve(const BenchOptions& o, std::FILE* out);

// "x/y.json" → "x/y" + ext; a name without ".json" gets ext appended.
std::string sibling_path(const std::string& json_path, const std::string& ext);

}  // namespace llms::benchserve
