// `llmserve bench-decode`: prefill and single-stream decode speed of a model, next to
// what the machine can do, measured in the same run: sustained memory read bandwidth
// (decode reads every weight once per token, so it is bandwidth-bound) and the peak
// arithmetic rate of the kernels' instruction mix (prefill is compute-bound): float
// FMA for float weights, int8 dot products for quantized ones. The bandwidth probe
// reads one token's weight bytes before every decoded token, so that decode is
// compared with the bandwidth of the same seconds.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "model/model.h"

namespace llms {

struct DecodeBenchOptions {
  int prefill_tokens = 512;
  int decode_tokens = 64;
  int threads = 0;
  int64_t probe_bytes = 1LL << 30;  // buffer for the bandwidth probe (beyond every cache)
  int verify_tokens = 0;  // K > 0: also time passes that verify K proposed tokens (speculative decoding)
  // The prefill is timed this many times over the same positions after a first pass,
  // which pays the first touch of the scratch buffers and the KV cache that a serving
  // engine pays once; the median counts, and the first pass is reported beside it.
  int prefill_rounds = 3;
};

struct DecodeBenchResult {
  std::string type;             // the weight type holding most matrix bytes
  int64_t model_bytes = 0;      // file size
  int64_t bytes_per_token = 0;  // weights read per decoded token
  double prefill_tok_s = 0;       // median of the prefill_rounds passes after the first
  double prefill_first_tok_s = 0; // the first pass (buffers and KV cache touched for the first time)
  double decode_tok_s = 0;
  double bandwidth_gb_s = 0;    // read bandwidth over the probes interleaved with decode
  double best_bandwidth_gb_s = 0;  // best single probe pass at start (for reference)
  double achieved_gb_s = 0;     // bytes_per_token * decode_tok_s
  double pct_bandwidth = 0;
  double peak_gops = 0;         // peak of the instruction mix (FMA flops or int8 ops), all threads
  double prefill_gops = 0;      // 2 * parameters * prefill tokens / time (the median pass)
  double pct_peak = 0;
  double pct_peak_first = 0;    // the first pass's
  // Q8_0 weights: the Q8_0 tile's block step with its blocks in cache
  // (PeakKind::kQ8_0Tile, in int8 ops like peak_gops), the ceiling of the products;
  // 0 for other weights.
  double q8_0_tile_gops = 0;
  int threads = 0;
  // With verify_tokens: a pass over K + 1 positions (logits at each) against a
  // one-token decode step, timed alternately at the same position.
  double verify_s = 0;
  double verify_decode_s = 0;
  double verify_cost_ratio = 0;
};

Result<DecodeBenchResult> run_decode_benchmark(const Model& model, const DecodeBenchOptions& options);

}  // namespace llms
