#include "base/hash.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace llms {

uint64_t hash64(const void* data, size_t size, uint64_t seed) { return XXH3_64bits_withSeed(data, size, seed); }

Hash128 hash128(const void* data, size_t size, uint64_t seed) {
  const XXH128_hash_t h = XXH3_128bits_withSeed(data, size, seed);
  return {h.low64, h.high64};
}

HashBuilder::HashBuilder() : state_(XXH3_createState()) { XXH3_128bits_reset(static_cast<XXH3_state_t*>(state_)); }
HashBuilder::~HashBuilder() { XXH3_freeState(static_cast<XXH3_state_t*>(state_)); }

HashBuilder& HashBuilder::add_bytes(const void* data, size_t size) {
  const uint64_t len = size;
  XXH3_128bits_update(static_cast<XXH3_state_t*>(state_), &len, sizeof(len));
  if (size > 0) XXH3_128bits_update(static_cast<XXH3_state_t*>(state_), data, size);
  return *this;
}

Hash128 HashBuilder::finish128() const {
  const XXH128_hash_t h = XXH3_128bits_digest(static_cast<XXH3_state_t*>(state_));
  return {h.low64, h.high64};
}

uint64_t HashBuilder::finish64() const { return finish128().lo; }

}  // namespace llms
