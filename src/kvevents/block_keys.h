// The block keys of vLLM's `--prefix-caching-hash-algo sha256_cbor` (vLLM 0.10.2 and
// later), which llm-d's KV-cache indexer computes from prompts in its sha256_cbor mode,
// so that its precise prefix scorer finds llmserve's blocks:
//   root    = SHA-256(CBOR(seed as a text string))        (vLLM: PYTHONHASHSEED)
//   block_i = SHA-256(CBOR([block_{i-1} or root (32-byte byte string),
//                           the block's token ids (unsigned integers), null]))
//   key     = the digest's last 8 bytes read big-endian   (the event's integer)
// CBOR in its deterministic form (cbor_writer.h); only full blocks have keys; null is
// the empty list of extra keys (no LoRA, no cache salt, no multimodal inputs).
//
// Salted sequences (a request's cache_salt, or its API key's prefix-cache scope):
// their first block's extra keys are [salt] instead of null — vLLM puts a request's
// cache_salt there — where salt is the 64-bit value the prefix cache mixes into that
// block's hash (an unsigned integer; it is derived with a secret of the process, so
// a router cannot compute it and matches no salted block, as the cache shares none
// across salts). Without it a salted block would be announced under the key of the
// unsalted block with the same tokens.
//
// Sha256CborKeys rewrites the prefix cache's own events (XXH3 chain hashes) into events
// with these keys. Blocks of two loaded versions with the same tokens share a key: it is
// announced when the first of them is stored and withdrawn when the last is removed. A
// stored block whose parent it never saw (its event dropped on a full queue) has no
// key and is left out, as are its descendants.
//
// Thread-safety: none; the publisher's thread alone uses it.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/sha256.h"
#include "kvevents/kv_event_encoding.h"

namespace llms {

Sha256Digest sha256_cbor_root(std::string_view seed);
// `salt` 0: null extra keys; else [salt] (a salted sequence's first block).
Sha256Digest sha256_cbor_block(const Sha256Digest& parent, std::span<const int32_t> tokens, uint64_t salt = 0);
uint64_t sha256_cbor_key(const Sha256Digest& digest);

class Sha256CborKeys {
 public:
  explicit Sha256CborKeys(std::string_view seed) : root_(sha256_cbor_root(seed)) {}
  // The events to send for `events`, in order.
  std::vector<KvEvent> translate(const std::vector<KvEvent>& events);
  size_t tracked_blocks() const { return blocks_.size(); }

 private:
  struct Block {
    Sha256Digest digest;
    uint64_t key;
  };
  Sha256Digest root_;
  std::unordered_map<uint64_t, Block> blocks_;  // by the prefix cache's wire hash
  std::unordered_map<uint64_t, int> holders_;   // key -> blocks that have it
};

}  // namespace llms
