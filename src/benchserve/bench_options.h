// What one `llmserve bench serve` run sends and measures: the flags as plain values,
// validated once (validate_options) before anything is sent. Names follow vLLM's
// `bench serve` where it has one (docs/benchmarks.md, "Serving: llmserve bench serve").
//
// Thread-safety: plain values; the parse functions are pure.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace llms::benchserve {

inline constexpr double kInfiniteRate = std::numeric_limits<double>::infinity();

// Service-level objectives for goodput, in milliseconds; an unset one is not checked.
struct GoodputSlo {
  std::optional<double> ttft_ms, tpot_ms, e2el_ms;
  bool any() const { return ttft_ms || tpot_ms || e2el_ms; }
};

struct BenchOptions {
  std::string base_url = "http://127.0.0.1:8080";
  std::string endpoint = "/v1/completions";  // or /v1/chat/completions
  std::string model;                         // "" = the first of GET /v1/models
  std::string api_key;                       // sent as a bearer token when set

  int num_prompts = 100;
  double request_rate = kInfiniteRate;  // requests per second; inf = all at once
  double burstiness = 1.0;              // gamma shape of the inter-arrival times; 1 = Poisson
  int max_concurrency = 0;              // 0 = no limit
  uint64_t seed = 0;
  int warmup = 0;  // requests sent (and not measured) before the run

  std::string dataset = "random";  // random | shared-prefix | sonnet | PATH of a JSONL file
  int input_len = 128;             // prompt words (text datasets; the server's own token count is reported)
  int output_len = 64;             // max_tokens
  bool output_len_set = false;     // a JSONL file's own output lengths are used unless set
  double range_ratio = 0.0;        // lengths uniform in [len*(1-r), len*(1+r)]
  int prefix_len = 256;            // shared-prefix: words shared by the requests of one prefix
  int num_prefixes = 1;            // shared-prefix: distinct prefixes, assigned round robin
  bool ignore_eos = false;
  double temperature = 0.0;

  GoodputSlo goodput;
  std::vector<double> percentiles = {50, 90, 99};
  std::vector<double> sweep_rates;  // empty = one run at request_rate
  double price_per_hour = 0;        // 0 = no cost report
  double timeout_s = 600;           // per request
  std::string save_result;          // FILE.json (+ FILE.md beside it); "" = not saved
  std::string plot;                 // sweep SVG; "" = beside save_result, if any
  bool progress = true;             // only drawn when stderr is a terminal
};

// "ttft:500 tpot:50 e2el:3000" (any subset; each may be its own argument).
Result<GoodputSlo> parse_goodput(const std::vector<std::string>& items);
// "50,90,99": each in (0, 100].
Result<std::vector<double>> parse_percentiles(const std::string& csv);
// "1,2,4,8,inf": each > 0 or inf.
Result<std::vector<double>> parse_rates(const std::string& csv);
// A rate, "inf" included.
Result<double> parse_rate(const std::string& text);
// Every field in range; messages name the flag.
Status validate_options(const BenchOptions& o);

// "inf" or the shortest decimal, for reports.
std::string rate_label(double rate);

}  // namespace llms::benchserve
