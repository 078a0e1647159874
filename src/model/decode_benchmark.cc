#include "model/decode_benchmark.h"

#include <algorithm>
#include <map>
#include <thread>

#include "base/aligned_buffer.h"
#include "base/clock.h"
#include "base/random.h"
#include "kernels/throughput_probe.h"

namespace llms {
namespace {

// Best read bandwidth over the probe's access patterns, all threads reading their own
// part of the buffer at once.
double measure_bandwidth(ThreadPool& pool, int64_t bytes) {
  const int threads = pool.num_threads();
  const int64_t part = bytes / threads / (256 * 8) * (256 * 8);
  AlignedBuffer buf(static_cast<size_t>(part * threads), true);
  double best = 0;
  for (int streams : {1, 2, 4, 8}) {
    for (int rep = 0; rep < 3; ++rep) {
      std::vector<uint64_t> sums(static_cast<size_t>(threads));
      const Stopwatch w;
      pool.run(threads, [&](int t) { sums[static_cast<size_t>(t)] = read_probe(buf.data() + part * t, part, streams); });
      const double s = w.elapsed_s();
      best = std::max(best, static_cast<double>(part * threads) / s / 1e9);
    }
  }
  return best;
}

// Peak operations per second of the instruction mix, all threads at once.
double measure_peak(ThreadPool& pool, bool integer) {
  const int threads = pool.num_threads();
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    std::vector<double> ops(static_cast<size_t>(threads));
    const Stopwatch w;
    pool.run(threads, [&](int t) {
      // int8 multiply-adds count as two operations, like a float FMA.
      ops[static_cast<size_t>(t)] = integer ? 2.0 * int8_dot_probe(2'000'000) : fma_probe(2'000'000);
    });
    const double s = w.elapsed_s();
    double total = 0;
    for (double o : ops) total += o;
    best = std::max(best, total / s / 1e9);
  }
  return best;
}

std::string dominant_type(const ModelWeights& w) {
  std::map<DType, int64_t> bytes;
  bytes[w.output.dtype()] += w.output.num_bytes();
  for (const auto& L : w.layers) {
    for (const WeightMatrix* m : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down}) bytes[m->dtype()] += m->num_bytes();
  }
  return std::string(dtype_name(std::max_element(bytes.begin(), bytes.end(), [](auto& a, auto& b) {
                                  return a.second < b.second;
                                })->first));
}

}  // namespace

Result<DecodeBenchResult> run_decode_benchmark(const Model& model, const DecodeBenchOptions& o) {
  const ModelConfig& c = model.config();
  if (o.prefill_tokens < 1 || o.decode_tokens < 1) return invalid_argument("token counts must be >= 1");
  if (o.prefill_tokens + o.decode_tokens > c.n_ctx_train) {
    return invalid_argument("prefill + decode tokens exceed the model's context");
  }
  ThreadPool pool(o.threads);
  DecodeBenchResult r;
  r.threads = pool.num_threads();
  r.type = dominant_type(model.weights());
  r.model_bytes = static_cast<int64_t>(model.file().file_size());
  r.bytes_per_token = model.weights().bytes_per_token();

  const int total = o.prefill_tokens + o.decode_tokens;
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
  SequenceChunk prefill{std::span(tokens).first(static_cast<size_t>(o.prefill_tokens)), 0, table, LogitsWanted::kLast};
  const Stopwatch pw;
  LLMS_RETURN_IF_ERROR(model.forward({&prefill, 1}, kv, state, pool, out));
  const double prefill_s = pw.elapsed_s();
  const Stopwatch dw;
  for (int i = 0; i < o.decode_tokens; ++i) {
    const size_t p = static_cast<size_t>(o.prefill_tokens + i);
    SequenceChunk d{std::span(tokens).subspan(p, 1), static_cast<int64_t>(p), table, LogitsWanted::kLast};
    LLMS_RETURN_IF_ERROR(model.forward({&d, 1}, kv, state, pool, out));
  }
  const double decode_s = dw.elapsed_s();

  r.prefill_tok_s = o.prefill_tokens / prefill_s;
  r.decode_tok_s = o.decode_tokens / decode_s;
  r.bandwidth_gb_s = measure_bandwidth(pool, o.probe_bytes);
  r.achieved_gb_s = static_cast<double>(r.bytes_per_token) * r.decode_tok_s / 1e9;
  r.pct_bandwidth = 100.0 * r.achieved_gb_s / r.bandwidth_gb_s;
  const bool integer = r.type != "f32" && r.type != "f16" && r.type != "bf16";
  r.peak_gops = measure_peak(pool, integer);
  // Matrix parameters (the work of prefill): bytes per token without the embedding row.
  double params = static_cast<double>(model.weights().output.rows() * model.weights().output.cols());
  for (const auto& L : model.weights().layers) {
    for (const WeightMatrix* m : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down}) {
      params += static_cast<double>(m->rows() * m->cols());
    }
  }
  // Logits only for the last prompt token: the output head does 1 row of work, not 512.
  const double head = static_cast<double>(model.weights().output.rows() * model.weights().output.cols());
  const double ops = 2.0 * ((params - head) * o.prefill_tokens + head);
  r.prefill_gops = ops / prefill_s / 1e9;
  r.pct_peak = 100.0 * r.prefill_gops / r.peak_gops;
  return r;
}

}  // namespace llms
