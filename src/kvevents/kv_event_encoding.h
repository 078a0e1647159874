// vLLM's KV-cache event wire format, so that routers built for it (llm-d's KV-cache
// indexer) read llmserve's events unchanged: a message is three ZeroMQ frames
// [topic, sequence number (uint64, big-endian), payload], the payload a msgpack
// EventBatch [ts, events, dp_rank], each event an array led by its tag:
//   ["BlockStored", block_hashes, parent_block_hash, token_ids, block_size, lora_id, medium]
//   ["BlockRemoved", block_hashes, medium]
//   ["AllBlocksCleared"]
// A block hash is the prefix cache's own chained XXH3-128 hash, sent as its low 64
// bits (an unsigned integer); lora_id is nil, medium "CPU", dp_rank 0.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/hash.h"

namespace llms {

struct KvEvent {
  enum class Kind { kStored, kRemoved, kCleared };
  Kind kind = Kind::kStored;
  std::vector<uint64_t> hashes;     // stored: one block; removed: one or more
  std::optional<uint64_t> parent;   // stored: the previous block of the sequence
  std::vector<int32_t> tokens;      // stored: the block's token ids
  int block_size = 0;
  uint64_t salt = 0;                // stored, a first block: the cache's salt (not sent; sha256_cbor keys use it)
};

// The wire form of a block hash.
inline uint64_t wire_hash(const Hash128& h) { return h.lo; }

// The msgpack payload of one EventBatch.
std::string encode_event_batch(double unix_seconds, const std::vector<KvEvent>& events);
// The 8-byte big-endian sequence-number frame.
std::string encode_sequence_number(uint64_t seq);

}  // namespace llms
