#include "eval/decode_benchmark.h"

#include <algorithm>
#include <map>

#include "base/clock.h"
#include "base/random.h"
#include "benchprobes/machine_limits.h"

namespace llms {
namespace {

// Peak operations per second of the instruction mix, all threads at once; an int8
// multiply-add counts as two operations, like a float FMA.
double measure_peak(ThreadPool& pool, bool integer) {
  return integer ? 2.0 * peak_ops_per_s(pool, PeakKind::kInt8Dot, 2'000'000) / 1e9
                 : peak_ops_per_s(pool, PeakKind::kFma, 2'000'000) / 1e9;
}

std::string dominant_type(const ModelWeights& w) {
  std::map<DType, int64_t> bytes;
  bytes[w.output.dtype()] += w.output.num_bytes();
  for (const auto& L : w.layers) {
    for (const WeightMatrix* m : L.dense_matrices()) bytes[m->dtype()] += m->num_bytes();
    for (const auto& e : L.experts) {
      for (const WeightMatrix* m : {&e.gate, &e.up, &e.down}) bytes[m->dtype()] += m->num_bytes();
    }
  }
  return std::string(dtype_name(std::max_element(bytes.begin(), bytes.end(), [](auto& a, auto& b) {
                                  return a.second < b.second;
                                })->first));
}

}  // namespace

Result<DecodeBenchResult> run_decode_benchmark(const Model& model, const DecodeBenchOptions& o) {
  const ModelConfig& c = model.config();
  if (o.prefill_tokens < 1 || o.decode_tokens < 1) return invalid_argument("token counts must be >= 1");
  if (o.prefill_rounds < 1) return invalid_argument("prefill rounds must be >= 1");
  if (o.prefill_tokens + o.decode_tokens > c.n_ctx_train) {
    return invalid_argument("prefill + decode tokens exceed the model's context");
  }
  ThreadPool pool(o.threads);
  DecodeBenchResult r;
  r.threads = pool.num_threads();
  r.type = dominant_type(model.weights());
  r.model_bytes = static_cast<int64_t>(model.file().file_size());
  r.bytes_per_token = model.weights().bytes_per_token();

  if (o.verify_tokens < 0 || o.verify_tokens > 16) return invalid_argument("--verify must be in 0..16");
  const int total = o.prefill_tokens + o.decode_tokens + o.verify_tokens + 1;
  if (total > c.n_ctx_train) return invalid_argument("prefill + decode + verify tokens exceed the model's context");
  KvCache kv(model.kv_config((total + 15) / 16, 16, DType::kF16, DType::kF16));
  std::vector<int32_t> table;
  for (int32_t b = 0; b < kv.num_blocks(); ++b) table.push_back(b);
  std::vector<int32_t> tokens;
  Rng rng(1);
  for (int i = 0; i < total; ++i) tokens.push_back(static_cast<int32_t>(1 + rng.below(c.n_vocab - 1)));
  ForwardState state;
  ForwardOutput out;
  // Warm-up: touch every weight once (page cache, repacked panels).
  {
    SequenceChunk warm{std::span(tokens).first(1), 0, table, LogitsWanted::kLast};
    LLMS_RETURN_IF_ERROR(model.forward({&warm, 1}, kv, state, pool, out));
  }
  // The first prefill pass writes the scratch buffers and the KV cache's blocks for the
  // first time; a serving engine pays that once, so it is timed apart from the passes
  // after it, which rewrite the same positions. The peak is probed right before and
  // right after the timed passes; the larger counts.
  const bool integer = r.type != "f32" && r.type != "f16" && r.type != "bf16";
  SequenceChunk prefill{std::span(tokens).first(static_cast<size_t>(o.prefill_tokens)), 0, table, LogitsWanted::kLast};
  const auto time_prefill = [&]() -> Result<double> {
    const Stopwatch pw;
    LLMS_RETURN_IF_ERROR(model.forward({&prefill, 1}, kv, state, pool, out));
    return pw.elapsed_s();
  };
  const double peak_before = measure_peak(pool, integer);
  LLMS_ASSIGN_OR_RETURN(const double first_s, time_prefill());
  std::vector<double> pass_s;
  for (int i = 0; i < o.prefill_rounds; ++i) {
    LLMS_ASSIGN_OR_RETURN(const double s, time_prefill());
    pass_s.push_back(s);
  }
  std::sort(pass_s.begin(), pass_s.end());
  const double prefill_s = pass_s[pass_s.size() / 2];
  r.peak_gops = std::max(peak_before, measure_peak(pool, integer));
  if (r.type == "q8_0") r.q8_0_tile_gops = 2.0 * peak_ops_per_s(pool, PeakKind::kQ8_0Tile, 2'000'000) / 1e9;
  // The host's bandwidth drifts by tens of percent within seconds (other tenants of
  // the memory system), so a probe read of one token's weight bytes runs before every
  // decoded token: decode and probe see the same conditions, and the share is taken
  // against the probe's rate over the same span.
  BandwidthProbe probe(pool, o.probe_bytes);
  r.best_bandwidth_gb_s = probe.best_gb_s(3);
  double decode_s = 0, probe_s = 0;
  int64_t probe_read = 0;
  for (int i = 0; i < o.decode_tokens; ++i) {
    probe_read += probe.read(r.bytes_per_token);
    probe_s += probe.last_s();
    const size_t p = static_cast<size_t>(o.prefill_tokens + i);
    SequenceChunk d{std::span(tokens).subspan(p, 1), static_cast<int64_t>(p), table, LogitsWanted::kLast};
    const Stopwatch dw;
    LLMS_RETURN_IF_ERROR(model.forward({&d, 1}, kv, state, pool, out));
    decode_s += dw.elapsed_s();
  }

  r.prefill_tok_s = o.prefill_tokens / prefill_s;
  r.prefill_first_tok_s = o.prefill_tokens / first_s;
  r.decode_tok_s = o.decode_tokens / decode_s;
  r.bandwidth_gb_s = static_cast<double>(probe_read) / probe_s / 1e9;
  r.achieved_gb_s = static_cast<double>(r.bytes_per_token) * r.decode_tok_s / 1e9;
  r.pct_bandwidth = 100.0 * r.achieved_gb_s / r.bandwidth_gb_s;
  // Matrix parameters a token multiplies (the work of prefill; its chosen experts only).
  const double params = static_cast<double>(model.weights().macs_per_token());
  // Logits only for the last prompt token: the output head does 1 row of work, not 512.
  const double head = static_cast<double>(model.weights().output.rows() * model.weights().output.cols());
  const double ops = 2.0 * ((params - head) * o.prefill_tokens + head);
  r.prefill_gops = ops / prefill_s / 1e9;
  r.pct_peak = 100.0 * r.prefill_gops / r.peak_gops;
  r.pct_peak_first = r.pct_peak * prefill_s / first_s;
  if (o.verify_tokens > 0) {
    // Alternate a decode step and a verification pass at the same position, so both
    // see the same bandwidth; each overwrites the positions the other wrote.
    const size_t at = static_cast<size_t>(o.prefill_tokens + o.decode_tokens);
    SequenceChunk one{std::span(tokens).subspan(at, 1), static_cast<int64_t>(at), table, LogitsWanted::kLast};
    SequenceChunk verify{std::span(tokens).subspan(at, static_cast<size_t>(o.verify_tokens + 1)), static_cast<int64_t>(at),
                         table, LogitsWanted::kAll};
    constexpr int kRounds = 16;
    for (int i = 0; i < kRounds; ++i) {
      const Stopwatch a;
      LLMS_RETURN_IF_ERROR(model.forward({&one, 1}, kv, state, pool, out));
      r.verify_decode_s += a.elapsed_s();
      const Stopwatch b;
      LLMS_RETURN_IF_ERROR(model.forward({&verify, 1}, kv, state, pool, out));
      r.verify_s += b.elapsed_s();
    }
    r.verify_s /= kRounds;
    r.verify_decode_s /= kRounds;
    r.verify_cost_ratio = r.verify_s / r.verify_decode_s;
  }
  return r;
}

}  // namespace llms
