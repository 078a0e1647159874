// Matrix kernels at TinyLlama-1.1B shapes, reported as shares of the machine's limits
// measured in the same run:
//   MemoryReadBandwidth/<streams>  read bandwidth of all pool threads, each reading
//                         `streams` parts side by side; machine_GB/s is the best
//                         pass of any pattern at start (see BandwidthBracket)
//   PeakFma, PeakInt8Dot  peak rate of the float FMA and int8 dot instructions
//   Gemv/<type>/<rows>/<cols>     decode (n = 1): weight GB/s and pct_bw
//   GemvInCache/<type>            decode on a 1024 x 2048 matrix that stays in cache:
//                                 the GB/s the instructions allow
//   Gemm/<type>/<rows>/<cols>     prefill (n = 512): GFLOP/s or GMAC/s and pct_peak
//                                 (of the peak measured around it, see PeakBracket)
//   Attention/<ctx>/<n_q>         one layer's paged attention (F16 KV): n_q = 1 is
//                                 decode at context ctx, n_q = ctx prefill
//   DecodeTinyLlama/<type>        every matrix of the 22 layers and the output head
//   PrefillTinyLlamaLayer/<type>  one layer's seven matrices for 512 tokens
//   BatchStepTinyLlama/<type>/<n> one batched-decode step: every matrix of the 22
//                                 layers and the output head for n tokens (n = 8..64,
//                                 continuous batching); GMAC/s or GFLOP/s and pct_peak
// GEMV benchmarks rotate over copies of the matrix that together exceed the last-level
// cache, so they read from memory as decode does.
//
// Threads: LLMSERVE_BENCH_THREADS (default 2). The SIMD target is the best the CPU
// has (LLMSERVE_SIMD caps it).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "base/aligned_buffer.h"
#include "base/clock.h"
#include "base/random.h"
#include "base/thread_pool.h"
#include "bench_pool.h"
#include "kernels/attention.h"
#include "kernels/matmul.h"
#include "kernels/simd_target.h"
#include "kernels/kernel_table.h"
#include "benchprobes/machine_limits.h"
#include "kv/kv_layout.h"
#include "quant/row_convert.h"

namespace llms {
namespace {

ThreadPool& pool() { return bench_pool(); }

// --- Machine limits -------------------------------------------------------------

constexpr int64_t kReadBytes = int64_t{1} << 30;  // far beyond any last-level cache

BandwidthProbe& read_probe_buffer() {
  static BandwidthProbe p(pool(), kReadBytes);
  return p;
}

// The best pass of the best access pattern over `passes` passes each.
double best_read_gb_s(int passes) { return read_probe_buffer().best_gb_s(passes); }

// The machine's read bandwidth, measured once at start.
double read_gb_s() {
  static const double v = best_read_gb_s(6);
  return v;
}

// Memory bandwidth drifts with whatever else shares the memory system, so decode
// benchmarks also measure it right before and after themselves and report their
// share of the larger of the two (pct_bw; pct_machine_bw uses read_gb_s()).
class BandwidthBracket {
 public:
  BandwidthBracket() : before_(best_read_gb_s(2)) {}
  void report(benchmark::State& state, double bytes) {
    const double bw = std::max(before_, best_read_gb_s(2));
    const double gb = bytes * 1e-9 * static_cast<double>(state.iterations());
    state.counters["GB/s"] = benchmark::Counter(gb, benchmark::Counter::kIsRate);
    state.counters["bw_GB/s"] = bw;
    state.counters["pct_bw"] = benchmark::Counter(gb * 100.0 / bw, benchmark::Counter::kIsRate);
    state.counters["pct_machine_bw"] = benchmark::Counter(gb * 100.0 / read_gb_s(), benchmark::Counter::kIsRate);
  }

 private:
  double before_;
};

double fma_gflops() {
  static const double v = peak_ops_per_s(pool(), PeakKind::kFma, 20'000'000) / 1e9;
  return v;
}

double int8_gmacs() {
  static const double v = peak_ops_per_s(pool(), PeakKind::kInt8Dot, 20'000'000) / 1e9;
  return v;
}

void BM_MemoryReadBandwidth(benchmark::State& state) {
  const int streams = static_cast<int>(state.range(0));
  for (auto _ : state) state.SetIterationTime(read_probe_buffer().pass_s(streams));
  state.SetBytesProcessed(state.iterations() * kReadBytes);
  state.counters["machine_GB/s"] = read_gb_s();
  state.SetLabel(simd_target_name());
}

// The latency of a job on the pool: a trivial parallel_for, right after another one
// (the workers spinning: range 0) or after park() (asleep: range 1).
void BM_PoolWakeUp(benchmark::State& state) {
  const bool parked = state.range(0) != 0;
  std::atomic<int64_t> sink{0};
  for (auto _ : state) {
    if (parked) {
      state.PauseTiming();
      pool().park();
      // Give the workers time to fall asleep (they check the flag while spinning).
      const int64_t t0 = now_ns();
      while (now_ns() - t0 < 200'000) {
      }
      state.ResumeTiming();
    }
    pool().parallel_for(pool().num_threads(), 1, 0, [&](int64_t b, int64_t e) { sink.fetch_add(e - b); });
  }
  benchmark::DoNotOptimize(sink.load());
  state.SetLabel(parked ? "parked" : "spinning");
}

void BM_PeakFma(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(fma_gflops());
  state.counters["GFLOP/s"] = fma_gflops();
}

void BM_PeakInt8Dot(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(int8_gmacs());
  state.counters["GMAC/s"] = int8_gmacs();
}

// --- Weights ----------------------------------------------------------------------

constexpr DType kTypes[] = {DType::kF32,  DType::kF16,  DType::kBF16, DType::kQ8_0,   DType::kQ4_0,
                            DType::kQ4_K, DType::kQ6_K, DType::kQ5_0, DType::kQ5_1,   DType::kIQ4_NL,
                            DType::kQ5_K, DType::kIQ4_XS, DType::kQ3_K};

bool is_float(DType t) { return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; }

// GGUF bytes of a [rows, cols] matrix: 64 distinct quantized Gaussian rows repeated
// (speed does not depend on the values, and the k-quant search is slow).
struct Source {
  std::vector<uint8_t> bytes;
  Tensor tensor;
};

std::unique_ptr<Source> make_source(DType type, int64_t rows, int64_t cols) {
  auto s = std::make_unique<Source>();
  const int64_t rb = dtype_row_bytes(type, cols);
  constexpr int64_t kDistinct = 64;
  std::vector<uint8_t> distinct(static_cast<size_t>(rb * kDistinct));
  std::vector<float> row(static_cast<size_t>(cols));
  Rng rng(static_cast<uint64_t>(rows * 31 + cols));
  for (int64_t r = 0; r < kDistinct; ++r) {
    for (auto& v : row) v = static_cast<float>(rng.normal() * 0.02);
    quantize_row(type, row.data(), distinct.data() + r * rb, cols);
  }
  s->bytes.resize(static_cast<size_t>(rb * rows));
  for (int64_t r = 0; r < rows; ++r)
    std::copy_n(distinct.data() + (r % kDistinct) * rb, rb, s->bytes.data() + r * rb);
  s->tensor.dtype = type;
  s->tensor.n_dims = 2;
  s->tensor.ne = {cols, rows, 1, 1};
  s->tensor.data = s->bytes.data();
  return s;
}

WeightMatrix pack(const Source& s) { return WeightMatrix::from_tensor(s.tensor, "bench").value(); }

std::vector<float> random_activations(int64_t n, int64_t cols) {
  Rng rng(7);
  std::vector<float> x(static_cast<size_t>(n * cols));
  for (auto& v : x) v = static_cast<float>(rng.normal());
  return x;
}

// --- Single matrices ----------------------------------------------------------------

constexpr int64_t kRotateBytes = int64_t{256} << 20;  // 8x the 32 MiB L3 of the reference machine

void BM_Gemv(benchmark::State& state) {
  const DType type = kTypes[state.range(0)];
  const int64_t rows = state.range(1), cols = state.range(2);
  const auto src = make_source(type, rows, cols);
  std::vector<WeightMatrix> copies;
  do {
    copies.push_back(pack(*src));
  } while (static_cast<int64_t>(copies.size()) * copies[0].packed_bytes() < kRotateBytes);
  const auto x = random_activations(1, cols);
  std::vector<float> y(static_cast<size_t>(rows));
  size_t i = 0;
  BandwidthBracket bracket;
  for (auto _ : state) {
    matmul(copies[i], x.data(), 1, y.data(), pool());
    i = (i + 1) % copies.size();
    benchmark::ClobberMemory();
  }
  bracket.report(state, static_cast<double>(copies[0].packed_bytes()));
  state.SetLabel(std::string(dtype_name(type)));
}

// GEMV on one matrix small enough to stay in the second-level caches (1024 x 2048):
// the rate the kernel's instructions allow when memory is not the limit, in weight
// GB/s. Decode reaches its share of the bandwidth only where this is well above it.
void BM_GemvInCache(benchmark::State& state) {
  const DType type = kTypes[state.range(0)];
  const auto src = make_source(type, 1024, 2048);
  const WeightMatrix w = pack(*src);
  const auto x = random_activations(1, 2048);
  std::vector<float> y(1024);
  for (auto _ : state) {
    matmul(w, x.data(), 1, y.data(), pool());
    benchmark::ClobberMemory();
  }
  const double gb = static_cast<double>(w.packed_bytes()) * 1e-9 * static_cast<double>(state.iterations());
  state.counters["GB/s"] = benchmark::Counter(gb, benchmark::Counter::kIsRate);
  state.SetLabel(std::string(dtype_name(type)));
}

// As BandwidthBracket for the peak rate of the instruction mix: GEMM shares the cores
// with whatever else runs, so the peak is measured right before and after it too.
class PeakBracket {
 public:
  explicit PeakBracket(DType type) : float_(is_float(type)), before_(measure()) {}
  void report(benchmark::State& state, DType type, double macs_per_iter) {
    const double peak = std::max(before_, measure());
    const double total = macs_per_iter * static_cast<double>(state.iterations());
    // Float peaks count 2 operations per FMA lane, int8 peaks one multiply-add.
    const double ops = float_ ? 2 * total : total;
    state.counters[float_ ? "GFLOP/s" : "GMAC/s"] = benchmark::Counter(ops * 1e-9, benchmark::Counter::kIsRate);
    state.counters["peak"] = peak;
    state.counters["pct_peak"] = benchmark::Counter(ops * 1e-9 * 100.0 / peak, benchmark::Counter::kIsRate);
    state.SetLabel(std::string(dtype_name(type)));
  }

 private:
  double measure() const {
    return peak_ops_per_s(pool(), float_ ? PeakKind::kFma : PeakKind::kInt8Dot, 5'000'000) / 1e9;
  }
  bool float_;
  double before_;
};

constexpr int64_t kPrefill = 512;

// Batched decode on one matrix: n = 8..64 tokens, with the weights rotating over
// copies beyond the last-level cache as in a real step (range 4 = 1), or one copy
// that stays in cache (range 4 = 0).
void BM_GemmBatch(benchmark::State& state) {
  const DType type = kTypes[state.range(0)];
  const int64_t rows = state.range(1), cols = state.range(2), n = state.range(3);
  const bool from_memory = state.range(4) != 0;
  const auto src = make_source(type, rows, cols);
  std::vector<WeightMatrix> copies;
  do {
    copies.push_back(pack(*src));
  } while (from_memory && static_cast<int64_t>(copies.size()) * copies[0].packed_bytes() < kRotateBytes);
  const auto x = random_activations(n, cols);
  std::vector<float> y(static_cast<size_t>(rows * n));
  size_t i = 0;
  PeakBracket bracket(type);
  for (auto _ : state) {
    matmul(copies[i], x.data(), n, y.data(), pool());
    i = (i + 1) % copies.size();
    benchmark::ClobberMemory();
  }
  bracket.report(state, type, static_cast<double>(rows * cols * n));
}

void BM_Gemm(benchmark::State& state) {
  const DType type = kTypes[state.range(0)];
  const int64_t rows = state.range(1), cols = state.range(2);
  const auto src = make_source(type, rows, cols);
  const WeightMatrix w = pack(*src);
  const auto x = random_activations(kPrefill, cols);
  std::vector<float> y(static_cast<size_t>(rows * kPrefill));
  PeakBracket bracket(type);
  for (auto _ : state) {
    matmul(w, x.data(), kPrefill, y.data(), pool());
    benchmark::ClobberMemory();
  }
  bracket.report(state, type, static_cast<double>(rows * cols * kPrefill));
}

// --- TinyLlama-1.1B: 22 layers of q, k, v, o, gate, up, down, then the output head ----

struct Shape {
  int64_t rows, cols;
};
constexpr Shape kLayerShapes[] = {{2048, 2048}, {256, 2048}, {256, 2048}, {2048, 2048},
                                  {5632, 2048}, {5632, 2048}, {2048, 5632}};
constexpr Shape kOutput = {32000, 2048};
constexpr int kLayers = 22;

// Every matrix of the 22 layers and the output head, in model order, each packed on
// its own (0.6 to 4.1 GB, far beyond the last-level cache). One type is kept at a
// time: benchmarks of the same type run one after another.
struct TinyLlama {
  DType type = DType::kF32;
  std::vector<std::unique_ptr<Source>> sources;  // the file bytes the matrices view
  std::vector<WeightMatrix> mats;
  int64_t bytes = 0;
  double macs_per_token = 0;
};

const TinyLlama& tinyllama(DType type) {
  static std::unique_ptr<TinyLlama> model;
  if (model && model->type == type) return *model;
  model.reset();
  auto m = std::make_unique<TinyLlama>();
  m->type = type;
  for (const Shape& s : kLayerShapes) m->sources.push_back(make_source(type, s.rows, s.cols));
  for (int l = 0; l < kLayers; ++l)
    for (int i = 0; i < static_cast<int>(std::size(kLayerShapes)); ++i) m->mats.push_back(pack(*m->sources[i]));
  m->sources.push_back(make_source(type, kOutput.rows, kOutput.cols));
  m->mats.push_back(pack(*m->sources.back()));
  for (const auto& w : m->mats) {
    m->bytes += w.packed_bytes();
    m->macs_per_token += static_cast<double>(w.rows() * w.cols());
  }
  model = std::move(m);
  return *model;
}

void BM_DecodeTinyLlama(benchmark::State& state) {
  const DType type = kTypes[state.range(0)];
  const TinyLlama& model = tinyllama(type);
  const std::vector<WeightMatrix>& mats = model.mats;
  const int64_t bytes = model.bytes;
  const auto x = random_activations(1, 5632);
  std::vector<float> y(static_cast<size_t>(kOutput.rows));
  BandwidthBracket bracket;
  for (auto _ : state) {
    for (const auto& m : mats) matmul(m, x.data(), 1, y.data(), pool());
    benchmark::ClobberMemory();
  }
  bracket.report(state, static_cast<double>(bytes));
  state.counters["model_GB"] = static_cast<double>(bytes) * 1e-9;
  state.counters["tok/s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.SetLabel(std::string(dtype_name(type)));
}

void BM_PrefillTinyLlamaLayer(benchmark::State& state) {
  const DType type = kTypes[state.range(0)];
  std::vector<std::unique_ptr<Source>> sources;
  std::vector<WeightMatrix> mats;
  double macs = 0;
  for (const Shape& s : kLayerShapes) {
    sources.push_back(make_source(type, s.rows, s.cols));
    mats.push_back(pack(*sources.back()));
    macs += static_cast<double>(s.rows * s.cols * kPrefill);
  }
  const auto x = random_activations(kPrefill, 5632);
  std::vector<float> y(static_cast<size_t>(5632 * kPrefill));
  PeakBracket bracket(type);
  for (auto _ : state) {
    for (const auto& m : mats) matmul(m, x.data(), kPrefill, y.data(), pool());
    benchmark::ClobberMemory();
  }
  // Tokens per second of the whole 22-layer stack at this layer's rate.
  state.counters["tok/s"] = benchmark::Counter(static_cast<double>(kPrefill * state.iterations()) / kLayers,
                                               benchmark::Counter::kIsRate);
  bracket.report(state, type, macs);
}

// Batched decode: one engine step of continuous batching multiplies every matrix by
// the n tokens of the running sequences. The weights still come from memory once per
// step, but from n = 8 on the step is bound by arithmetic; pct_peak is its share of
// the peak measured around it, pct_bw the weight bytes per second over the read
// bandwidth measured at start.
void BM_BatchStepTinyLlama(benchmark::State& state) {
  const DType type = kTypes[state.range(0)];
  const int64_t n = state.range(1);
  const TinyLlama& model = tinyllama(type);
  const auto x = random_activations(n, 5632);
  std::vector<float> y(static_cast<size_t>(kOutput.rows * n));
  PeakBracket bracket(type);
  for (auto _ : state) {
    for (const auto& m : model.mats) matmul(m, x.data(), n, y.data(), pool());
    benchmark::ClobberMemory();
  }
  const double iters = static_cast<double>(state.iterations());
  state.counters["tok/s"] = benchmark::Counter(static_cast<double>(n) * iters, benchmark::Counter::kIsRate);
  state.counters["pct_bw"] = benchmark::Counter(static_cast<double>(model.bytes) * iters * 1e-9 * 100.0 / read_gb_s(),
                                                benchmark::Counter::kIsRate);
  bracket.report(state, type, model.macs_per_token * static_cast<double>(n));
}

// Paged attention of one TinyLlama layer (32 query heads, 4 KV heads of 64, F16 KV in
// blocks of 16 scattered through a cache of 22 layers' size, so that reads come from
// memory as in a model): n_q query tokens at the end of a context of ctx positions.
// Counts 4 flops per (query head, key, dimension): scores and weighted values.
void BM_Attention(benchmark::State& state) {
  const int ctx = static_cast<int>(state.range(0)), n_q = static_cast<int>(state.range(1));
  constexpr int kHeads = 32, kKv = 4, kHd = 64, kBlock = 16, kLayers = 22;
  const int blocks = (ctx + kBlock - 1) / kBlock;
  KvLayerView view = make_kv_layer_view(nullptr, nullptr, DType::kF16, DType::kF16, kBlock, kKv, kHd);
  const int64_t pool_blocks = int64_t{blocks} * kLayers;
  AlignedBuffer k(static_cast<size_t>(pool_blocks * kBlock * view.k_row_bytes()));
  AlignedBuffer v(static_cast<size_t>(pool_blocks * kBlock * view.v_row_bytes()));
  // Layer l's sequence owns every kLayers-th block from l (as if 22 layers interleaved).
  std::vector<std::vector<int32_t>> tables(kLayers);
  for (int l = 0; l < kLayers; ++l)
    for (int b = 0; b < blocks; ++b) tables[static_cast<size_t>(l)].push_back(static_cast<int32_t>(b * kLayers + l));
  view.k = reinterpret_cast<uint8_t*>(k.data());
  view.v = reinterpret_cast<uint8_t*>(v.data());
  Rng rng(3);
  std::vector<float> kr(static_cast<size_t>(kKv * kHd)), vr(kr.size());
  for (int l = 0; l < kLayers; ++l) {
    for (int p = 0; p < ctx; ++p) {
      for (auto& x : kr) x = static_cast<float>(rng.normal());
      for (auto& x : vr) x = static_cast<float>(rng.normal());
      kv_store(view, tables[static_cast<size_t>(l)].data(), p, kr.data(), vr.data());
    }
  }
  std::vector<float> q(static_cast<size_t>(n_q * kHeads * kHd)), out(q.size());
  for (auto& x : q) x = static_cast<float>(rng.normal());
  int l = 0;
  for (auto _ : state) {
    AttentionQuery query{q.data(), n_q, ctx - n_q, tables[static_cast<size_t>(l)].data(), out.data()};
    paged_attention(query, view, kHeads, 0.125f, pool());
    l = (l + 1) % kLayers;
    benchmark::ClobberMemory();
  }
  // Causal: query i sees ctx - n_q + i + 1 positions.
  const double keys = static_cast<double>(n_q) * (ctx - n_q) + n_q * (n_q + 1) / 2.0;
  state.counters["GFLOP/s"] = benchmark::Counter(4.0 * kHeads * kHd * keys * static_cast<double>(state.iterations()) * 1e-9,
                                                 benchmark::Counter::kIsRate);
}

// Quantizing one token's activations to Q8 blocks of 32 (what every Q8_0 product
// does first), one thread, a row of `cols` values: ns per row.
void BM_QuantizeQ8Row(benchmark::State& state) {
  const int64_t cols = state.range(0), n = 32;
  const std::vector<float> x = random_activations(n, cols);
  std::vector<int8_t> q(static_cast<size_t>(n * cols));
  std::vector<float> d(static_cast<size_t>(n * cols / 32)), s(d.size());
  std::vector<int32_t> corr(d.size());
  QuantizedActivations a;
  a.n = n;
  a.cols = cols;
  a.q = q.data();
  a.d = d.data();
  a.s = s.data();
  a.corr = corr.data();
  const KernelTable& k = active_kernels();
  int64_t t = 0;
  for (auto _ : state) {
    k.quantize_q8_row(x.data(), t, k.q8_0_bias, a);
    t = (t + 1) % n;
    benchmark::ClobberMemory();
  }
  state.SetLabel(simd_target_name());
}

void matrix_args(benchmark::internal::Benchmark* b) {
  for (int t = 0; t < static_cast<int>(std::size(kTypes)); ++t)
    for (Shape s : {Shape{2048, 2048}, Shape{5632, 2048}, Shape{2048, 5632}, Shape{32000, 2048}}) b->Args({t, s.rows, s.cols});
}

void batch_matrix_args(benchmark::internal::Benchmark* b) {
  for (int t = 0; t < static_cast<int>(std::size(kTypes)); ++t)
    for (Shape s : {Shape{2048, 2048}, Shape{5632, 2048}, Shape{2048, 5632}, Shape{768, 768}, Shape{2048, 768},
                    Shape{768, 2048}, Shape{32000, 768}})  // the last: llama-110m's output head
      for (int64_t n : {8, 16, 32, 64})
        for (int64_t from_memory : {0, 1}) b->Args({t, s.rows, s.cols, n, from_memory});
}

void type_args(benchmark::internal::Benchmark* b) {
  for (int t = 0; t < static_cast<int>(std::size(kTypes)); ++t) b->Args({t});
}

void batch_args(benchmark::internal::Benchmark* b) {
  for (int t = 0; t < static_cast<int>(std::size(kTypes)); ++t)
    for (int64_t n : {8, 16, 32, 64}) b->Args({t, n});
}

BENCHMARK(BM_MemoryReadBandwidth)->Arg(1)->Arg(4)->Arg(8)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(10);
BENCHMARK(BM_PoolWakeUp)->Arg(0)->Arg(1)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_QuantizeQ8Row)->Arg(768)->Arg(2048)->Unit(benchmark::kNanosecond);
BENCHMARK(BM_PeakFma)->Iterations(1);
BENCHMARK(BM_PeakInt8Dot)->Iterations(1);
BENCHMARK(BM_Gemv)->Apply(matrix_args)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_GemvInCache)->Apply(type_args)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Attention)->Args({512, 1})->Args({2048, 1})->Args({512, 512})->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_GemmBatch)->Apply(batch_matrix_args)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Gemm)->Apply(matrix_args)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DecodeTinyLlama)->Apply(type_args)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PrefillTinyLlamaLayer)->Apply(type_args)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_BatchStepTinyLlama)->Apply(batch_args)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace llms

BENCHMARK_MAIN();
