// What the prefix cache tells the outside about its blocks, for routers that send a
// request to the replica that holds its prefix (vLLM's KV-cache events): a full block
// became findable under its hash, cached blocks were reclaimed, everything was dropped.
//
// Thread-safety: called on the engine thread, inside the KV bookkeeping; an
// implementation must return at once (queue and hand off), never block.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "base/hash.h"

namespace llms {

class KvEventListener {
 public:
  virtual ~KvEventListener() = default;
  // A full block of `tokens` is cached under `hash`, chained from `parent` (nullopt
  // for a sequence's first block). `salt` is the salt mixed into a first block's hash
  // (SequenceBlocks::salt; 0: none), so that a listener that re-keys blocks keys a
  // salted block apart from an unsalted one with the same tokens, as the cache does.
  virtual void on_stored(const Hash128& hash, const std::optional<Hash128>& parent, std::span<const int32_t> tokens,
                         int block_size, uint64_t salt) = 0;
  // The cached block under `hash` is gone (evicted for new data, or its engine closed).
  virtual void on_removed(const Hash128& hash) = 0;
  // Every cached block is gone.
  virtual void on_cleared() = 0;
};

}  // namespace llms
