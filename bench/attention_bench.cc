// The seeds' attention table on this machine: llmserve's paged attention (one pass,
// online softmax, the scores never stored) against a straightforward non-fused
// attention that materializes each head's full causal score matrix, then softmaxes
// its rows, then multiplies by the values. The baseline is vectorized with the same
// SIMD kernels (dot products and softmax of kernels/ops.h; values transposed so that
// every output is one dot product) and split by heads across the same pool.
//
// Each case is the attention of one layer over a whole sequence (ctx queries against
// their causal keys), heads of 64, multi-head (as GPT-2 and the seeds' test), F32 keys
// and values. Pairs run back to back: NonFused/heads/ctx, then Paged/heads/ctx.
//   build/release/bench/attention_bench [--benchmark_filter=...]
// Threads: LLMSERVE_BENCH_THREADS (default 2).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <vector>

#include "base/random.h"
#include "base/thread_pool.h"
#include "kernels/attention.h"
#include "kernels/ops.h"
#include "benchprobes/machine_limits.h"
#include "kv/kv_cache.h"
#include "kv/kv_layout.h"

namespace llms {
namespace {

constexpr int kHeadDim = 64;
constexpr int kBlock = 16;

ThreadPool& pool() {
  const char* env = std::getenv("LLMSERVE_BENCH_THREADS");
  static ThreadPool p(env ? std::max(1, std::atoi(env)) : 2);
  return p;
}

// Queries, keys and values of one layer for `ctx` positions and `heads` heads, and the
// same keys and values in a paged cache (blocks in reverse order).
struct Layer {
  int heads, ctx;
  std::vector<float> q, k, v;  // [ctx][heads][hd]
  std::vector<std::byte> kc, vc;
  std::vector<int32_t> table;
  KvLayerView view;

  Layer(int heads_, int ctx_) : heads(heads_), ctx(ctx_) {
    const size_t n = static_cast<size_t>(ctx) * heads * kHeadDim;
    q.resize(n), k.resize(n), v.resize(n);
    Rng rng(static_cast<uint64_t>(heads * 7919 + ctx));
    for (auto* a : {&q, &k, &v})
      for (float& x : *a) x = static_cast<float>(rng.normal());
    const int blocks = (ctx + kBlock - 1) / kBlock;
    view = make_kv_layer_view(nullptr, nullptr, DType::kF32, DType::kF32, kBlock, heads, kHeadDim);
    kc.resize(static_cast<size_t>(blocks) * kBlock * view.k_row_bytes());
    vc.resize(static_cast<size_t>(blocks) * kBlock * view.v_row_bytes());
    view.k = reinterpret_cast<uint8_t*>(kc.data());
    view.v = reinterpret_cast<uint8_t*>(vc.data());
    for (int b = blocks - 1; b >= 0; --b) table.push_back(b);
    for (int p = 0; p < ctx; ++p) {
      kv_store(view, table.data(), p, k.data() + static_cast<size_t>(p) * heads * kHeadDim,
               v.data() + static_cast<size_t>(p) * heads * kHeadDim);
    }
  }
};

// Non-fused: per head, S = scale * Q K^T (causal rows), softmax of each row, O = S V.
void non_fused(const Layer& l, std::vector<float>& out) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
  const int hd = kHeadDim, H = l.heads, T = l.ctx;
  pool().parallel_for(H, 1, 0, [&](int64_t h0, int64_t h1) {
    std::vector<float> s(static_cast<size_t>(T) * T), qh(static_cast<size_t>(T) * hd), kh(qh.size()), vt(qh.size());
    for (int64_t h = h0; h < h1; ++h) {
      for (int t = 0; t < T; ++t) {
        const size_t at = (static_cast<size_t>(t) * H + h) * hd;
        std::copy_n(l.q.data() + at, hd, qh.data() + static_cast<size_t>(t) * hd);
        std::copy_n(l.k.data() + at, hd, kh.data() + static_cast<size_t>(t) * hd);
        for (int d = 0; d < hd; ++d) vt[static_cast<size_t>(d) * T + t] = l.v[at + d];
      }
      for (int i = 0; i < T; ++i) {  // the score matrix, row by row (causal: j <= i)
        float* row = s.data() + static_cast<size_t>(i) * T;
        for (int j = 0; j <= i; ++j) row[j] = scale * dot_f32(qh.data() + static_cast<size_t>(i) * hd, kh.data() + static_cast<size_t>(j) * hd, hd);
      }
      for (int i = 0; i < T; ++i) softmax(s.data() + static_cast<size_t>(i) * T, i + 1);
      for (int i = 0; i < T; ++i) {
        float* o = out.data() + (static_cast<size_t>(i) * H + h) * hd;
        for (int d = 0; d < hd; ++d) o[d] = dot_f32(s.data() + static_cast<size_t>(i) * T, vt.data() + static_cast<size_t>(d) * T, i + 1);
      }
    }
  });
}

void paged(const Layer& l, std::vector<float>& out) {
  AttentionQuery q;
  q.q = l.q.data();
  q.n_q = l.ctx;
  q.first_pos = 0;
  q.block_table = l.table.data();
  q.out = out.data();
  paged_attention(q, l.view, l.heads, 1.0f / std::sqrt(static_cast<float>(kHeadDim)), pool());
}

template <void (*Attend)(const Layer&, std::vector<float>&)>
void BM_Attention(benchmark::State& state) {
  const Layer l(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  std::vector<float> out(l.q.size()), other(l.q.size());
  // Both compute the same attention (up to float rounding), checked before timing.
  Attend(l, out);
  (Attend == paged ? non_fused : paged)(l, other);
  for (size_t i = 0; i < out.size(); ++i) {
    if (std::abs(out[i] - other[i]) > 1e-4f * (1.0f + std::abs(other[i]))) {
      state.SkipWithError("the two attentions disagree");
      return;
    }
  }
  for (auto _ : state) {
    Attend(l, out);
    benchmark::DoNotOptimize(out.data());
  }
  // Multiply-adds of the causal QK^T and PV products.
  const double macs = 2.0 * l.heads * kHeadDim * (static_cast<double>(l.ctx) * (l.ctx + 1) / 2);
  state.counters["GMAC/s"] = benchmark::Counter(macs * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// A decode step's attention, as a server runs it: `seqs` sequences of `ctx` positions,
// one new query each, every layer of a 12-layer, 12-head model (llama-110m's shape) in
// an F16 cache whose blocks are scattered over a pool four times the size needed. The
// baseline, timed in the same iteration: reading as many bytes as the step's keys and
// values with the bandwidth probe. pct_bw = probe time / attention time.
void BM_AttentionDecodeBatch(benchmark::State& state) {
  const int seqs = static_cast<int>(state.range(0)), ctx = static_cast<int>(state.range(1));
  constexpr int kLayers = 12, kHeads = 12;
  const int per_seq = (ctx + kBlock - 1) / kBlock;
  KvCacheConfig kc;
  kc.n_layer = kLayers;
  kc.n_kv_heads = kHeads;
  kc.head_dim = kHeadDim;
  kc.block_size = kBlock;
  kc.num_blocks = 4 * seqs * per_seq;
  kc.k_type = kc.v_type = DType::kF16;
  KvCache cache(kc);
  std::vector<int32_t> ids(static_cast<size_t>(kc.num_blocks));
  for (int32_t i = 0; i < kc.num_blocks; ++i) ids[static_cast<size_t>(i)] = i;
  Rng rng(7);
  for (size_t i = ids.size() - 1; i > 0; --i) std::swap(ids[i], ids[rng.next_u64() % (i + 1)]);
  const int64_t width = int64_t{kHeads} * kHeadDim;
  std::vector<float> row(static_cast<size_t>(width)), q(static_cast<size_t>(seqs * width)),
      out(static_cast<size_t>(seqs * width));
  for (float& x : q) x = static_cast<float>(rng.normal());
  std::vector<AttentionQuery> queries(static_cast<size_t>(seqs));
  for (int s = 0; s < seqs; ++s) {
    const int32_t* table = ids.data() + static_cast<size_t>(s) * per_seq;
    for (int l = 0; l < kLayers; ++l) {
      for (int p = 0; p < ctx; ++p) {
        for (float& x : row) x = static_cast<float>(rng.normal());
        kv_store(cache.layer(l), table, p, row.data(), row.data());
      }
    }
    AttentionQuery& a = queries[static_cast<size_t>(s)];
    a.q = q.data() + s * width;
    a.n_q = 1;
    a.first_pos = ctx - 1;
    a.block_table = table;
    a.out = out.data() + s * width;
  }
  const int64_t kv_bytes = int64_t{kLayers} * seqs * ctx * width * 2 * 2;
  BandwidthProbe probe(pool(), 256 << 20);
  probe.best_gb_s(1);
  double attn_s = 0, probe_s = 0;
  const float scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int l = 0; l < kLayers; ++l) paged_attention_batch(queries, cache.layer(l), kHeads, scale, pool());
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    state.SetIterationTime(s);
    attn_s += s;
    benchmark::DoNotOptimize(out.data());
    probe.read(kv_bytes);
    probe_s += probe.last_s();
  }
  state.counters["kv_GB/s"] = static_cast<double>(kv_bytes) * static_cast<double>(state.iterations()) / attn_s / 1e9;
  state.counters["probe_GB/s"] = static_cast<double>(kv_bytes) * static_cast<double>(state.iterations()) / probe_s / 1e9;
  state.counters["pct_bw"] = 100.0 * probe_s / attn_s;
}

// Registered pair by pair, so that each baseline runs right before its counterpart.
const bool registered = [] {
  for (int heads : {16, 32}) {
    for (int ctx : {512, 1024, 2048, 4096}) {
      benchmark::RegisterBenchmark("BM_AttentionNonFused", BM_Attention<non_fused>)
          ->Args({heads, ctx})->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(0.5);
      benchmark::RegisterBenchmark("BM_AttentionPaged", BM_Attention<paged>)
          ->Args({heads, ctx})->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(0.5);
    }
  }
  for (int seqs : {8, 32, 64}) {
    for (int ctx : {64, 256, 1024}) {
      benchmark::RegisterBenchmark("BM_AttentionDecodeBatch", BM_AttentionDecodeBatch)
          ->Args({seqs, ctx})->Unit(benchmark::kMillisecond)->UseManualTime()->MinTime(0.5);
    }
  }
  return true;
}();

}  // namespace
}  // namespace llms

BENCHMARK_MAIN();
