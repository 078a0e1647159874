// The adapters' products of one batched-decode step (kernels/lora.h) at llama-110m's
// shapes (12 layers, 768 wide, FFN 2048): eight rank-16 adapters on all seven
// projections, `tokens` tokens each, called as Model::forward calls them (per layer:
// Q/K/V together, the output, gate/up together, down). The factors of the eight
// adapters (about 90 MB in F32) are read once a step, so a step reads them from memory.
//   LoraStep/<tokens per adapter>/<f16>   factor GB/s per step, and pct_bw of the
//                                          machine's read bandwidth measured at start
// Threads: LLMSERVE_BENCH_THREADS (default 2).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <vector>

#include "quant/half.h"
#include "base/random.h"
#include "base/thread_pool.h"
#include "bench_pool.h"
#include "benchprobes/machine_limits.h"
#include "kernels/lora.h"

namespace llms {
namespace {

ThreadPool& pool() { return bench_pool(); }

double machine_gb_s() {
  static const double gb_s = [] {
    BandwidthProbe probe(pool(), int64_t{1} << 30);
    return probe.best_gb_s(3);
  }();
  return gb_s;
}

constexpr int kLayers = 12, kAdapters = 8;
constexpr int64_t kRank = 16, kDim = 768, kFfn = 2048;

struct Matrix {
  std::vector<float> at, bt;
  std::vector<uint16_t> at16, bt16;
  LoraFactors f;
};

Matrix make_matrix(int64_t cols, int64_t rows, bool f16, Rng& rng) {
  Matrix m;
  m.at.resize(static_cast<size_t>(cols * kRank));
  m.bt.resize(static_cast<size_t>(kRank * rows));
  for (auto& v : m.at) v = static_cast<float>(rng.normal() * 0.02);
  for (auto& v : m.bt) v = static_cast<float>(rng.normal() * 0.02);
  m.f = {m.at.data(), m.bt.data(), kRank, kRank, cols, rows, 2.0f};
  if (f16) {
    for (float v : m.at) m.at16.push_back(f32_to_f16(v));
    for (float v : m.bt) m.bt16.push_back(f32_to_f16(v));
    m.f.at = nullptr, m.f.bt = nullptr;
    m.f.at_f16 = m.at16.data(), m.f.bt_f16 = m.bt16.data();
    m.at.clear(), m.bt.clear();
    m.at.shrink_to_fit(), m.bt.shrink_to_fit();
  }
  return m;
}

void BM_LoraStep(benchmark::State& state) {
  const int64_t per = state.range(0);
  const bool f16 = state.range(1) != 0;
  const double machine = machine_gb_s();
  Rng rng(1);
  // [layer][adapter][target]: q k v o gate up down
  struct Shape {
    int64_t cols, rows;
  };
  const Shape shapes[7] = {{kDim, kDim}, {kDim, kDim}, {kDim, kDim}, {kDim, kDim}, {kDim, kFfn}, {kDim, kFfn}, {kFfn, kDim}};
  std::vector<Matrix> ms;
  ms.reserve(kLayers * kAdapters * 7);
  int64_t bytes = 0;
  for (int l = 0; l < kLayers; ++l) {
    for (int a = 0; a < kAdapters; ++a) {
      for (const Shape& s : shapes) {
        ms.push_back(make_matrix(s.cols, s.rows, f16, rng));
        bytes += (s.cols + s.rows) * kRank * (f16 ? 2 : 4);
      }
    }
  }
  const int64_t n = per * kAdapters;
  std::vector<float> x(static_cast<size_t>(n * kFfn)), y(static_cast<size_t>(n * kFfn * 3));
  for (auto& v : x) v = static_cast<float>(rng.normal());
  std::vector<std::vector<int32_t>> tokens(kAdapters);
  for (int64_t t = 0; t < n; ++t) tokens[static_cast<size_t>(t % kAdapters)].push_back(static_cast<int32_t>(t));
  // The forward's four calls per layer: {q, k, v}, {o}, {gate, up}, {down}.
  const std::vector<std::vector<int>> calls = {{0, 1, 2}, {3}, {4, 5}, {6}};
  std::vector<LoraTask> tasks;
  for (auto _ : state) {
    for (int l = 0; l < kLayers; ++l) {
      for (const auto& call : calls) {
        tasks.clear();
        for (size_t i = 0; i < call.size(); ++i) {
          for (int a = 0; a < kAdapters; ++a) {
            const Matrix& m = ms[static_cast<size_t>((l * kAdapters + a) * 7 + call[i])];
            tasks.push_back({&m.f, tokens[static_cast<size_t>(a)], y.data() + static_cast<int64_t>(i) * n * kFfn});
          }
        }
        lora_add(tasks, x.data(), pool());
      }
    }
  }
  benchmark::DoNotOptimize(y.data());
  const double gb = static_cast<double>(bytes) * static_cast<double>(state.iterations()) / 1e9;
  state.counters["GB/s"] = benchmark::Counter(gb, benchmark::Counter::kIsRate);
  state.counters["machine_GB/s"] = machine;
  state.SetLabel(f16 ? "f16" : "f32");
}

}  // namespace
}  // namespace llms

BENCHMARK(llms::BM_LoraStep)->ArgsProduct({{1, 4, 16}, {0, 1}})->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
