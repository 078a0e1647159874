#include "kvevents/block_keys.h"

#include <gtest/gtest.h>

#include <numeric>
#include <string>

#include "kv/kv_block_manager.h"
#include "kv/kv_events.h"
#include "kvevents/cbor_writer.h"

namespace llms {
namespace {

std::string hex(std::string_view bytes) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (unsigned char b : bytes) s += digits[b >> 4], s += digits[b & 15];
  return s;
}

std::string hex(const Sha256Digest& d) { return hex(std::string_view(reinterpret_cast<const char*>(d.data()), d.size())); }

// RFC 8949 Appendix A's examples of the encodings used.
TEST(CborWriterTest, RfcExamples) {
  auto enc = [](auto f) {
    CborWriter w;
    f(w);
    return hex(w.data());
  };
  EXPECT_EQ(enc([](CborWriter& w) { w.integer(0); }), "00");
  EXPECT_EQ(enc([](CborWriter& w) { w.integer(23); }), "17");
  EXPECT_EQ(enc([](CborWriter& w) { w.integer(24); }), "1818");
  EXPECT_EQ(enc([](CborWriter& w) { w.integer(1000); }), "1903e8");
  EXPECT_EQ(enc([](CborWriter& w) { w.integer(1000000); }), "1a000f4240");
  EXPECT_EQ(enc([](CborWriter& w) { w.integer(1000000000000); }), "1b000000e8d4a51000");
  EXPECT_EQ(enc([](CborWriter& w) { w.unsigned_integer(18446744073709551615ull); }), "1bffffffffffffffff");
  EXPECT_EQ(enc([](CborWriter& w) { w.integer(-1); }), "20");
  EXPECT_EQ(enc([](CborWriter& w) { w.integer(-1000); }), "3903e7");
  EXPECT_EQ(enc([](CborWriter& w) { w.null(); }), "f6");
  EXPECT_EQ(enc([](CborWriter& w) { w.text("IETF"); }), "6449455446");
  EXPECT_EQ(enc([](CborWriter& w) { w.text(""); }), "60");
  EXPECT_EQ(enc([](CborWriter& w) {
              const uint8_t b[] = {1, 2, 3, 4};
              w.bytes(b);
            }),
            "4401020304");
  EXPECT_EQ(enc([](CborWriter& w) {
              w.array(3);
              w.integer(1);
              w.array(2);
              w.integer(2);
              w.integer(3);
              w.array(2);
              w.integer(4);
              w.integer(5);
            }),
            "8301820203820405");
  EXPECT_EQ(enc([](CborWriter& w) {
              w.array(25);
              for (int i = 1; i <= 25; ++i) w.integer(i);
            }),
            "98190102030405060708090a0b0c0d0e0f101112131415161718181819");
}

// Expected values computed with Python's cbor2.dumps(..., canonical=True) and hashlib
// (the code vLLM's sha256_cbor runs):
//   H = lambda x: hashlib.sha256(cbor2.dumps(x, canonical=True)).digest()
//   root = H("0"); b0 = H((root, tuple(range(1, 17)), None))
TEST(BlockKeysTest, MatchVllmSha256Cbor) {
  EXPECT_EQ(hex(sha256_cbor_root("0")), "4e1195df020de59e0d65a33a4279f1183e7ae4e5d980e309f8b55adff2e61c3e");
  EXPECT_EQ(hex(sha256_cbor_root("")), "8d33f520a3c4cef80d2453aef81b612bfe1cb44c8b2025630ad38662763f13d3");
  std::vector<int32_t> tokens(16);
  std::iota(tokens.begin(), tokens.end(), 1);
  const Sha256Digest b0 = sha256_cbor_block(sha256_cbor_root("0"), tokens);
  EXPECT_EQ(hex(b0), "202da172482d928bbc42ab25b0151e2b895f13f41002e27b2ceabcfae6d332ea");
  EXPECT_EQ(sha256_cbor_key(b0), 3236607068019569386ull);
}

KvEvent stored(uint64_t h, std::optional<uint64_t> parent, std::vector<int32_t> tokens) {
  KvEvent e;
  e.kind = KvEvent::Kind::kStored;
  e.hashes = {h};
  e.parent = parent;
  e.tokens = std::move(tokens);
  e.block_size = static_cast<int>(e.tokens.size());
  return e;
}

KvEvent removed(std::vector<uint64_t> hs) {
  KvEvent e;
  e.kind = KvEvent::Kind::kRemoved;
  e.hashes = std::move(hs);
  return e;
}

TEST(BlockKeysTest, ChainsParentsAndSharesKeysAcrossVersions) {
  Sha256CborKeys keys("0");
  const std::vector<int32_t> a(16, 7), b(16, 9);
  const Sha256Digest d0 = sha256_cbor_block(sha256_cbor_root("0"), a), d1 = sha256_cbor_block(d0, b);
  // Two blocks of one version, then the same tokens in another version (other internal hashes).
  auto out = keys.translate({stored(100, std::nullopt, a), stored(101, 100, b), stored(200, std::nullopt, a)});
  ASSERT_EQ(out.size(), 2u);  // the second version's block has a key already announced
  EXPECT_EQ(out[0].hashes, std::vector<uint64_t>{sha256_cbor_key(d0)});
  EXPECT_FALSE(out[0].parent.has_value());
  EXPECT_EQ(out[1].hashes, std::vector<uint64_t>{sha256_cbor_key(d1)});
  EXPECT_EQ(out[1].parent, sha256_cbor_key(d0));
  EXPECT_EQ(out[1].tokens, b);
  // The key is withdrawn when the last block holding it goes.
  out = keys.translate({removed({100})});
  EXPECT_TRUE(out.empty());
  out = keys.translate({removed({200, 101, 999})});  // 999: never seen, left out
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].hashes, (std::vector<uint64_t>{sha256_cbor_key(d0), sha256_cbor_key(d1)}));
  EXPECT_EQ(keys.tracked_blocks(), 0u);
  // A block whose parent was never seen (its event lost) has no key.
  EXPECT_TRUE(keys.translate({stored(300, 299, b)}).empty());
  // Cleared forgets everything and passes on.
  keys.translate({stored(400, std::nullopt, a)});
  KvEvent cleared;
  cleared.kind = KvEvent::Kind::kCleared;
  out = keys.translate({cleared});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].kind, KvEvent::Kind::kCleared);
  EXPECT_EQ(keys.tracked_blocks(), 0u);
}

// A salted sequence's first block has the extra keys [salt], so its key is not the
// unsalted block's. Expected value: the deterministic CBOR of
// [root, [1..16], [42]] (83 5820 <root> 90 01..10 81 182a) hashed with hashlib.
TEST(BlockKeysTest, SaltedFirstBlockHasItsOwnKey) {
  std::vector<int32_t> tokens(16);
  std::iota(tokens.begin(), tokens.end(), 1);
  const Sha256Digest salted = sha256_cbor_block(sha256_cbor_root("0"), tokens, 42);
  EXPECT_EQ(hex(salted), "f3b765544580e63d29d834ab34d8a331df34788ab8b41cce735e3fad0e58844a");
  EXPECT_EQ(sha256_cbor_key(salted), 8313151974675088458ull);
}

// Records the prefix cache's events as the publisher does.
class Recorder : public KvEventListener {
 public:
  void on_stored(const Hash128& hash, const std::optional<Hash128>& parent, std::span<const int32_t> tokens,
                 int block_size, uint64_t salt) override {
    KvEvent e = stored(wire_hash(hash), parent ? std::optional<uint64_t>(wire_hash(*parent)) : std::nullopt,
                       std::vector<int32_t>(tokens.begin(), tokens.end()));
    e.block_size = block_size;
    e.salt = salt;
    events.push_back(std::move(e));
  }
  void on_removed(const Hash128& hash) override { events.push_back(removed({wire_hash(hash)})); }
  void on_cleared() override {}
  std::vector<KvEvent> events;
};

// The same two blocks cached unsalted, under salt 42 and under salt 43: three chains
// of keys, each the one a router computing with that salt would find (the salted
// block's child chains from the salted digest). Before, every salt's blocks were
// announced under the unsalted keys (and, those being announced already, not at all).
TEST(BlockKeysTest, PrefixCacheSaltsReachTheKeys) {
  std::vector<int32_t> tokens(32);
  std::iota(tokens.begin(), tokens.end(), 1);
  const std::span<const int32_t> first(tokens.data(), 16), second(tokens.data() + 16, 16);
  Recorder rec;
  KvBlockManager blocks(16, 16, Hash128{1, 2}, true);
  blocks.set_listener(&rec);
  std::vector<SequenceBlocks> seqs(3);
  const uint64_t salts[] = {0, 42, 43};
  for (size_t i = 0; i < seqs.size(); ++i) {
    seqs[i].salt = salts[i];
    EXPECT_EQ(blocks.begin_sequence(seqs[i], tokens), 0);  // a salt shares nothing with another
    ASSERT_TRUE(blocks.reserve(seqs[i], 32));
    blocks.commit(seqs[i], tokens);
  }
  Sha256CborKeys keys("0");
  const std::vector<KvEvent> out = keys.translate(rec.events);
  ASSERT_EQ(out.size(), 6u);
  const Sha256Digest root = sha256_cbor_root("0");
  for (size_t i = 0; i < seqs.size(); ++i) {
    const Sha256Digest d0 = sha256_cbor_block(root, first, salts[i]), d1 = sha256_cbor_block(d0, second);
    EXPECT_EQ(out[2 * i].hashes, std::vector<uint64_t>{sha256_cbor_key(d0)}) << salts[i];
    EXPECT_FALSE(out[2 * i].parent.has_value());
    EXPECT_EQ(out[2 * i + 1].hashes, std::vector<uint64_t>{sha256_cbor_key(d1)}) << salts[i];
    EXPECT_EQ(out[2 * i + 1].parent, sha256_cbor_key(d0));
  }
  EXPECT_NE(out[0].hashes, out[2].hashes);
  EXPECT_NE(out[2].hashes, out[4].hashes);
  for (SequenceBlocks& s : seqs) blocks.release(s);
  blocks.set_listener(nullptr);
}

}  // namespace
}  // namespace llms
