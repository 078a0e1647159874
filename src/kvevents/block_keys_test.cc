#include "kvevents/block_keys.h"

#include <gtest/gtest.h>

#include <numeric>
#include <string>

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

}  // namespace
}  // namespace llms
