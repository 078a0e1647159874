// The cost of `--prefix-hash sha256-cbor`: the publisher thread's translation of a
// prompt's BlockStored events into vLLM's sha256_cbor keys (one SHA-256 over ~60 bytes
// of CBOR per 16-token block), against the XXH3-128 chain hash the prefix cache
// computes for the same block anyway.
#include <benchmark/benchmark.h>

#include <numeric>
#include <vector>

#include "base/hash.h"
#include "kvevents/block_keys.h"

namespace llms {
namespace {

std::vector<KvEvent> prompt_events(int blocks, uint64_t first) {
  std::vector<KvEvent> events;
  for (int b = 0; b < blocks; ++b) {
    KvEvent e;
    e.kind = KvEvent::Kind::kStored;
    e.hashes = {first + static_cast<uint64_t>(b)};
    if (b > 0) e.parent = first + static_cast<uint64_t>(b) - 1;
    e.tokens.resize(16);
    std::iota(e.tokens.begin(), e.tokens.end(), 1000 + 16 * b);
    e.block_size = 16;
    events.push_back(std::move(e));
  }
  return events;
}

// Per block: translation of a 64-block (1,024-token) prompt, then its removal.
void BM_Sha256CborKeysPerBlock(benchmark::State& state) {
  Sha256CborKeys keys("0");
  uint64_t first = 1;
  for (auto _ : state) {
    state.PauseTiming();
    std::vector<KvEvent> stored = prompt_events(64, first);
    KvEvent removed;
    removed.kind = KvEvent::Kind::kRemoved;
    for (const auto& e : stored) removed.hashes.push_back(e.hashes[0]);
    first += 64;
    state.ResumeTiming();
    benchmark::DoNotOptimize(keys.translate(stored));
    benchmark::DoNotOptimize(keys.translate({removed}));
  }
  state.SetItemsProcessed(state.iterations() * 64);
}
BENCHMARK(BM_Sha256CborKeysPerBlock)->Unit(benchmark::kMicrosecond);

// The prefix cache's own hash of one block (chain + 16 token ids), for scale.
void BM_Xxh3ChainPerBlock(benchmark::State& state) {
  std::vector<int32_t> tokens(16);
  std::iota(tokens.begin(), tokens.end(), 1000);
  Hash128 parent{1, 2};
  for (auto _ : state) {
    HashBuilder h;
    h.add_pod(parent);
    h.add_span(std::span<const int32_t>(tokens));
    parent = h.finish128();
    benchmark::DoNotOptimize(parent);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Xxh3ChainPerBlock);

}  // namespace
}  // namespace llms

BENCHMARK_MAIN();
