// KvBlockManager: the KV cache's bookkeeping — free blocks, reference counts, and the
// prefix cache that lets sequences with a common prompt prefix share blocks.
//
// Every *full* block of a sequence gets a hash chained from its parent block's hash
// and its token ids (the chain is seeded with the model identity and the KV types, so
// blocks of different models or precisions never match). A new sequence starts with
// the longest run of its prompt's full blocks already cached (their ref counts go up)
// and computes only the rest. A cached block whose last owner leaves stays in the
// cache, reusable, on an LRU list; allocation takes truly free blocks first and then
// evicts the least recently used cached block. Only full blocks are shared, and full
// blocks are never written again, so sharing them needs no copy.
//
// Running out of blocks is a normal answer (false / nullopt), never an error.
// Thread-safety: owned by the engine thread; no locking.
#pragma once

#include <cstdint>
#include <list>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "base/hash.h"
#include "kv/block_pool.h"
#include "kv/kv_events.h"

namespace llms {

struct PrefixCacheStats {
  int64_t queries = 0;        // sequences that looked up a prefix
  int64_t query_tokens = 0;   // prompt tokens eligible for a hit
  int64_t hit_tokens = 0;     // prompt tokens served from the cache
  int64_t evictions = 0;      // cached blocks reclaimed for new data
};

// One sequence's view: its block table plus the hashes of its full blocks.
struct SequenceBlocks {
  BlockTable table;
  std::vector<Hash128> hashes;  // hashes[i] for full block i, as far as computed
  // Mixed into the first block's hash (0: none): sequences share cached blocks only
  // with sequences of the same salt (a request's cache_salt and its tenant's scope).
  uint64_t salt = 0;
};

class KvBlockManager {
 public:
  // `seed` distinguishes models and KV precisions; prefix caching may be turned off.
  KvBlockManager(int32_t num_blocks, int block_size, Hash128 seed, bool enable_prefix_cache);
  // Tells the listener that the blocks still cached are gone.
  ~KvBlockManager();
  KvBlockManager(const KvBlockManager&) = delete;
  KvBlockManager& operator=(const KvBlockManager&) = delete;

  // Receives an event for every block the prefix cache stores or drops (null: none).
  // The listener must outlive this manager.
  void set_listener(KvEventListener* listener) { listener_ = listener; }

  int block_size() const { return block_size_; }
  int32_t num_blocks() const { return pool_.num_blocks(); }
  // Blocks that can be handed out now: free plus evictable cached ones.
  int32_t num_available() const { return pool_.num_free() + static_cast<int32_t>(lru_.size()); }
  // Blocks owned by at least one sequence.
  int32_t num_used() const { return pool_.num_used() - static_cast<int32_t>(lru_.size()); }
  // Unowned blocks kept for their cached content.
  int32_t num_cached_idle() const { return static_cast<int32_t>(lru_.size()); }
  int32_t ref_count(int32_t block) const { return pool_.ref_count(block) - (in_lru_[static_cast<size_t>(block)] ? 1 : 0); }
  const PrefixCacheStats& stats() const { return stats_; }

  // Starts `seq` (empty) on `prompt`: shares the longest cached run of full blocks,
  // never all of the prompt (its last token must be computed to get logits).
  // Returns the number of prompt tokens already in the cache.
  int64_t begin_sequence(SequenceBlocks& seq, std::span<const int32_t> prompt);
  // The tokens begin_sequence would find cached for `prompt` (under `salt`) now,
  // taking nothing.
  int64_t cached_prefix_tokens(std::span<const int32_t> prompt, uint64_t salt = 0) const;

  // Grows the sequence for `n` more positions; false (and no change) on no room.
  bool reserve(SequenceBlocks& seq, int64_t n);

  // Gives back the positions past `n` (proposed tokens that were rejected): the table
  // holds n positions and no block beyond them. Committed blocks are never cut.
  void truncate(SequenceBlocks& seq, int64_t n);

  // Records the blocks that `tokens` (the sequence's tokens so far, all computed)
  // has filled since the last call, making them findable by later sequences.
  void commit(SequenceBlocks& seq, std::span<const int32_t> tokens);

  // Releases every block of the sequence and empties it.
  void release(SequenceBlocks& seq);

  // Drops every idle cached block (memory pressure): they become free. Returns how many.
  int32_t evict_idle();
  // The blocks no sequence owns and no cache entry holds: their bytes may be discarded.
  std::span<const int32_t> free_blocks() const { return pool_.free_blocks(); }

 private:
  std::optional<int32_t> allocate();
  int32_t evict_oldest();  // the LRU idle cached block, out of the cache, still referenced once
  void drop_reference(int32_t block);
  Hash128 chain(const Hash128& parent, std::span<const int32_t> tokens) const;
  // The parent of a sequence's first block: the seed, salted.
  Hash128 root(uint64_t salt) const;

  BlockPool pool_;
  int block_size_;
  Hash128 seed_;
  bool enabled_;
  std::unordered_map<Hash128, int32_t, Hash128Hasher> by_hash_;
  std::vector<std::optional<Hash128>> hash_of_;           // per block, when cached
  std::list<int32_t> lru_;                                // idle cached blocks, oldest first
  std::vector<std::list<int32_t>::iterator> lru_pos_;
  std::vector<bool> in_lru_;
  PrefixCacheStats stats_;
  KvEventListener* listener_ = nullptr;
};

}  // namespace llms
