// The cost of one draw of the sampler over a 32,000-token vocabulary (llama-110m's and
// TinyLlama's), per setting: the share of a batched decode step that sampling takes
// is 32 of these per step, split over the pool's threads (docs/benchmarks.md).
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <vector>

#include "base/random.h"
#include "engine/sampler.h"

namespace llms {
namespace {

constexpr int kVocab = 32000;

struct Setting {
  float temperature, top_p, min_p;
  int top_k;
};
// Temperature 1; top-p 0.95; temperature 0.8 with top-p 0.9 and min-p 0.05; top-k 40.
constexpr Setting kSettings[] = {{1.0f, 1.0f, 0.0f, 0}, {1.0f, 0.95f, 0.0f, 0}, {0.8f, 0.9f, 0.05f, 0}, {0.8f, 1.0f, 0.0f, 40}};

// Eight rows of logits drawn from a normal of deviation 2 (a flat distribution: top-p
// keeps thousands of tokens, the costly case for a cut found without sorting).
std::vector<std::vector<float>> logit_rows() {
  Rng rng(1);
  std::vector<std::vector<float>> rows(8, std::vector<float>(kVocab));
  for (auto& row : rows)
    for (float& x : row) x = static_cast<float>(2.0 * rng.normal());
  return rows;
}

void BM_Sample(benchmark::State& state) {
  const Setting& s = kSettings[state.range(0)];
  SamplingParams p;
  p.temperature = s.temperature, p.top_p = s.top_p, p.min_p = s.min_p, p.top_k = s.top_k;
  const auto rows = logit_rows();
  Sampler sampler(p, 7, {});
  size_t i = 0;
  for (auto _ : state) benchmark::DoNotOptimize(sampler.sample(rows[i++ % rows.size()].data(), kVocab));
  state.SetLabel(fmt::format("temperature {} top_p {} min_p {} top_k {}", s.temperature, s.top_p, s.min_p, s.top_k));
}
BENCHMARK(BM_Sample)->DenseRange(0, 3)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace llms

BENCHMARK_MAIN();
