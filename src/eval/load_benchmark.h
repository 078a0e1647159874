// A load benchmark of the engine in-process. Closed loop: `concurrency` clients each
// submit a request, wait for it to finish and submit the next, until `requests` are
// done. Open loop (request_rate > 0): requests arrive as a Poisson process at that
// rate whatever the engine's progress, as users do. It measures what a serving user sees (time to first token, end-to-end latency)
// and what the operator pays for (generated tokens per second), so that batching
// policies can be compared on the same machine, model and requests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "engine/engine_config.h"
#include "engine/request.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace llms {

struct LoadSpec {
  int requests = 32;
  int concurrency = 32;
  int prompt_min = 64, prompt_max = 256;  // prompt tokens, uniform
  int output_min = 64, output_max = 128;  // max_tokens (EOS ignored)
  // How output lengths spread over [output_min, output_max]: evenly, or evenly in
  // their logarithm (log-uniform: as many requests in 16-64 as in 64-256 and in
  // 256-1024, like chat traffic, where most answers are short and a few are long).
  bool output_log_uniform = false;
  uint64_t seed = 1;
  // How every request samples: greedy (temperature 0) unless set; sampled requests
  // take seeds drawn from `seed`.
  float temperature = 0.0f, top_p = 1.0f, min_p = 0.0f;
  int top_k = 0;
  // Rounds of the same load (requests drawn from other seeds, so that the prefix cache
  // gives the timed round nothing) before the timed one, on the same engine; their
  // steps are left out of the profile. Their blocks stay in the prefix cache, so the
  // timed round still takes blocks never written before (their pages' first touch
  // is timed unless EngineConfig::kv_commit_at_start).
  int warmup = 0;
  // Requests per second of a Poisson arrival process (open loop); 0: closed loop.
  double request_rate = 0;
  // Goodput: a request counts when its time to first token and its time per output
  // token after the first ((e2e - ttft) / (tokens - 1)) are within these (0: no bound).
  double goodput_ttft_s = 0, goodput_tpot_s = 0;
};

struct LoadResult {
  std::string policy;
  int completed = 0;
  int64_t generated_tokens = 0;
  double seconds = 0;
  double tokens_per_s = 0;
  double ttft_p50_s = 0, ttft_p99_s = 0;
  double e2e_p50_s = 0, e2e_p99_s = 0;
  double itl_mean_s = 0;
  double tpot_p99_s = 0;          // of the requests' times per output token after the first
  int failed = 0;                 // requests the engine refused or ended in error
  std::string first_error;
  double request_goodput = 0;     // requests per second that met the goodput bounds
  double goodput_tok_s = 0;       // their generated tokens per second
  // Goodput as the engine judges its own targets (EngineConfig's SLOs: TTFT, and ITL at
  // its percentile), over the completed requests that had targets.
  int slo_requests = 0;
  double slo_goodput_tok_s = 0;
  int64_t preemptions = 0;
  double expert_load_imbalance = 0;  // mixture of experts: max / mean tokens per expert (0: dense)
  // The engine's step profile (EngineConfig::profile), as StepProfile::table() prints it.
  std::string profile;
  int64_t profiled_tokens = 0;  // tokens the profiled steps computed
};

// The requests of a load: prompts (BOS, then random tokens of a `vocab`-token
// vocabulary) and output lengths drawn from spec.seed; sampled as spec says, EOS ignored.
std::vector<RequestParams> make_load_requests(const LoadSpec& spec, int vocab);

// Seconds from the start at which each request arrives: open loop, exponential gaps
// of mean 1 / rate drawn from seed; closed loop, all at 0.
std::vector<double> make_arrival_times(const LoadSpec& spec);

// Runs the load against a fresh engine with `config`.
Result<LoadResult> run_load(const Model& model, const Tokenizer& tokenizer, const EngineConfig& config,
                            const LoadSpec& spec);

// The value below which a fraction q of `values` lies (nearest rank).
double percentile(std::vector<double> values, double q);

}  // namespace llms
