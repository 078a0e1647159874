// Hashing for cache keys: 64-bit and 128-bit XXH3 over bytes, with a streaming builder
// so keys can be made of several fields without concatenating them first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace llms {

struct Hash128 {
  uint64_t lo = 0;
  uint64_t hi = 0;
  friend bool operator==(const Hash128&, const Hash128&) = default;
};

struct Hash128Hasher {
  size_t operator()(const Hash128& h) const { return static_cast<size_t>(h.lo ^ (h.hi * 0x9E3779B97F4A7C15ULL)); }
};

uint64_t hash64(const void* data, size_t size, uint64_t seed = 0);
Hash128 hash128(const void* data, size_t size, uint64_t seed = 0);

// Feeds fields one after another; each field is length-prefixed so that ("ab","c")
// and ("a","bc") differ.
class HashBuilder {
 public:
  HashBuilder();
  ~HashBuilder();
  HashBuilder(const HashBuilder&) = delete;
  HashBuilder& operator=(const HashBuilder&) = delete;

  HashBuilder& add_bytes(const void* data, size_t size);
  HashBuilder& add(std::string_view s) { return add_bytes(s.data(), s.size()); }
  template <typename T>
  HashBuilder& add_pod(const T& v) { return add_bytes(&v, sizeof(T)); }
  template <typename T>
  HashBuilder& add_span(std::span<const T> v) { return add_bytes(v.data(), v.size_bytes()); }
  Hash128 finish128() const;
  uint64_t finish64() const;

 private:
  void* state_;
};

}  // namespace llms
