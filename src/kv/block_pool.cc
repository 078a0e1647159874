#include "kv/block_pool.h"

#include "base/check.h"

namespace llms {

BlockPool::BlockPool(int32_t num_blocks) : ref_counts_(static_cast<size_t>(num_blocks), 0) {
  free_.reserve(static_cast<size_t>(num_blocks));
  for (int32_t b = num_blocks - 1; b >= 0; --b) free_.push_back(b);  // block 0 comes out first
}

std::optional<int32_t> BlockPool::allocate() {
  if (free_.empty()) return std::nullopt;
  const int32_t b = free_.back();
  free_.pop_back();
  LLMS_DCHECK(ref_counts_[static_cast<size_t>(b)] == 0, "free block with references");
  ref_counts_[static_cast<size_t>(b)] = 1;
  return b;
}

void BlockPool::retain(int32_t block) {
  LLMS_CHECK(ref_counts_[static_cast<size_t>(block)] > 0, "retain of a free block");
  ++ref_counts_[static_cast<size_t>(block)];
}

bool BlockPool::release(int32_t block) {
  int32_t& rc = ref_counts_[static_cast<size_t>(block)];
  LLMS_CHECK(rc > 0, "double free of KV block " + std::to_string(block));
  if (--rc > 0) return false;
  free_.push_back(block);
  return true;
}

}  // namespace llms
