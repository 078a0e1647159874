// BlockPool: which KV blocks are free and how many owners each used block has.
// Blocks are integer ids in [0, num_blocks); an id with ref count 0 is free. Running
// out is a normal answer (allocate() returns nullopt), which the scheduler acts on.
//
// BlockTable: one sequence's blocks in position order, and how many token positions
// it holds (KvBlockManager::reserve() grows it all-or-nothing).
//
// Thread-safety: owned by the engine thread; no locking.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace llms {

class BlockPool {
 public:
  explicit BlockPool(int32_t num_blocks);

  int32_t num_blocks() const { return static_cast<int32_t>(ref_counts_.size()); }
  int32_t num_free() const { return static_cast<int32_t>(free_.size()); }
  int32_t num_used() const { return num_blocks() - num_free(); }
  int32_t ref_count(int32_t block) const { return ref_counts_[static_cast<size_t>(block)]; }
  std::span<const int32_t> free_blocks() const { return free_; }

  // A free block with ref count 1, or nullopt when none is left.
  std::optional<int32_t> allocate();
  void retain(int32_t block);
  // Drops one reference; returns true when the block became free.
  bool release(int32_t block);

 private:
  std::vector<int32_t> ref_counts_;
  std::vector<int32_t> free_;  // a stack: recently freed blocks are reused first (warm in cache)
};

struct BlockTable {
  std::vector<int32_t> blocks;
  int64_t num_tokens = 0;  // positions written (or reserved and about to be)

  // Capacity in tokens at `block_size`.
  int64_t capacity(int block_size) const { return static_cast<int64_t>(blocks.size()) * block_size; }
};

}  // namespace llms
