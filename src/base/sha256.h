// SHA-256 (FIPS 180-4), for hashes that must equal other systems' byte for byte (the
// prefix-cache block hashes of vLLM's sha256_cbor option, which llm-d's indexer
// computes). Not for speed: a block hash is one call per 16 prompt tokens.
//
// Thread-safety: Sha256 is a value; the free function is pure.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace llms {

using Sha256Digest = std::array<uint8_t, 32>;

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t size);
  void update(std::string_view s) { update(s.data(), s.size()); }
  Sha256Digest finish();  // the object is spent afterwards

 private:
  void block(const uint8_t* p);
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t buffered_ = 0;
  uint64_t total_ = 0;
};

Sha256Digest sha256(std::string_view data);

}  // namespace llms
