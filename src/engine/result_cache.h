// ResultCache: completed outputs of deterministic requests (temperature 0, or a fixed
// seed), so that a repeated request is answered without touching the engine. LRU,
// bounded in bytes, keyed by a 128-bit XXH3 hash of the model identity, the prompt
// tokens and every parameter that changes the output. A hit keeps its per-token
// pieces so it can be replayed as a stream. Emptied when the model changes.
//
// Thread-safety: all methods take an internal mutex; call from any thread.
#pragma once

#include <cstdint>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/hash.h"
#include "engine/request.h"

namespace llms {

struct CachedCompletion {
  std::vector<TokenEvent> tokens;  // as streamed, with logprobs when they were asked for
  FinishEvent finish;              // reason, usage, timings of the original run
  int64_t bytes() const;
};

struct ResultCacheStats {
  int64_t hits = 0;
  int64_t misses = 0;
  int64_t entries = 0;
  int64_t bytes = 0;
  double seconds_saved = 0;  // original end-to-end time of every hit
};

class ResultCache {
 public:
  explicit ResultCache(int64_t max_bytes) : max_bytes_(max_bytes) {}

  // The key of a request, or nullopt when its output is not deterministic.
  static std::optional<Hash128> key_for(const Hash128& model_identity, const RequestParams& params);

  std::optional<CachedCompletion> lookup(const Hash128& key);
  void insert(const Hash128& key, CachedCompletion value);
  void clear();
  ResultCacheStats stats() const;
  int64_t max_bytes() const { return max_bytes_; }

 private:
  struct Entry {
    Hash128 key;
    CachedCompletion value;
    int64_t bytes;
  };
  void evict_to(int64_t limit);

  const int64_t max_bytes_;
  mutable std::mutex mu_;
  std::list<Entry> lru_;  // most recent first
  std::unordered_map<Hash128, std::list<Entry>::iterator, Hash128Hasher> index_;
  int64_t bytes_ = 0;
  ResultCacheStats stats_;
};

}  // namespace llms
