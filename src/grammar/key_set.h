// KeySet: a set of 64-bit keys with open addressing, for the grammar's graph walks
// (the stepper's closure items, the rules' return points). clear() is O(1): each slot
// carries the stamp of the generation that filled it.
//
// Thread-safety: one thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace llms {

inline uint64_t mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

inline uint64_t pair_key(int32_t a, int32_t b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

class KeySet {
 public:
  // True when `key` was not in the set (it is now).
  bool insert(uint64_t key) {
    if ((count_ + 1) * 2 > keys_.size()) grow();
    const size_t mask = keys_.size() - 1;
    for (size_t j = mix64(key) & mask;; j = (j + 1) & mask) {
      if (stamps_[j] != stamp_) {
        stamps_[j] = stamp_;
        keys_[j] = key;
        ++count_;
        return true;
      }
      if (keys_[j] == key) return false;
    }
  }

  void clear() {
    count_ = 0;
    if (++stamp_ == 0) {  // wrapped: old stamps could collide
      std::fill(stamps_.begin(), stamps_.end(), 0);
      stamp_ = 1;
    }
  }

  size_t size() const { return count_; }

 private:
  // Keeps the table at most half full; the current keys move to the larger table.
  void grow() {
    const size_t n = std::max<size_t>(256, keys_.size() * 2);
    std::vector<uint64_t> keys(n, 0);
    std::vector<uint32_t> stamps(n, 0);
    for (size_t i = 0; i < keys_.size(); ++i) {
      if (stamps_[i] != stamp_) continue;
      size_t j = mix64(keys_[i]) & (n - 1);
      while (stamps[j] == stamp_) j = (j + 1) & (n - 1);
      keys[j] = keys_[i];
      stamps[j] = stamp_;
    }
    keys_.swap(keys);
    stamps_.swap(stamps);
  }

  std::vector<uint64_t> keys_;
  std::vector<uint32_t> stamps_;
  uint32_t stamp_ = 1;
  size_t count_ = 0;
};

}  // namespace llms
