#include "kvevents/block_keys.h"

#include "kvevents/cbor_writer.h"

namespace llms {

Sha256Digest sha256_cbor_root(std::string_view seed) {
  CborWriter w;
  w.text(seed);
  return sha256(w.data());
}

Sha256Digest sha256_cbor_block(const Sha256Digest& parent, std::span<const int32_t> tokens, uint64_t salt) {
  CborWriter w;
  w.array(3);
  w.bytes(parent);
  w.array(tokens.size());
  for (int32_t t : tokens) w.integer(t);
  if (salt == 0) {
    w.null();
  } else {
    w.array(1);
    w.unsigned_integer(salt);
  }
  return sha256(w.data());
}

uint64_t sha256_cbor_key(const Sha256Digest& d) {
  uint64_t k = 0;
  for (int i = 24; i < 32; ++i) k = k << 8 | d[i];
  return k;
}

std::vector<KvEvent> Sha256CborKeys::translate(const std::vector<KvEvent>& events) {
  std::vector<KvEvent> out;
  for (const KvEvent& e : events) {
    switch (e.kind) {
      case KvEvent::Kind::kStored: {
        const Sha256Digest* parent = &root_;
        if (e.parent) {
          const auto it = blocks_.find(*e.parent);
          if (it == blocks_.end()) break;  // its parent's event was lost
          parent = &it->second.digest;
        }
        const Sha256Digest digest = sha256_cbor_block(*parent, e.tokens, e.parent ? 0 : e.salt);
        const uint64_t key = sha256_cbor_key(digest);
        const std::optional<uint64_t> parent_key = e.parent ? std::optional<uint64_t>(sha256_cbor_key(*parent)) : std::nullopt;
        if (!blocks_.emplace(e.hashes.at(0), Block{digest, key}).second) break;  // announced already
        if (holders_[key]++ > 0) break;
        KvEvent s = e;
        s.hashes = {key};
        s.parent = parent_key;
        out.push_back(std::move(s));
        break;
      }
      case KvEvent::Kind::kRemoved: {
        KvEvent r;
        r.kind = KvEvent::Kind::kRemoved;
        for (uint64_t h : e.hashes) {
          const auto it = blocks_.find(h);
          if (it == blocks_.end()) continue;
          const uint64_t key = it->second.key;
          blocks_.erase(it);
          if (--holders_[key] == 0) {
            holders_.erase(key);
            r.hashes.push_back(key);
          }
        }
        if (!r.hashes.empty()) out.push_back(std::move(r));
        break;
      }
      case KvEvent::Kind::kCleared:
        blocks_.clear();
        holders_.clear();
        out.push_back(e);
        break;
    }
  }
  return out;
}

}  // namespace llms
