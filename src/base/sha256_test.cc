#include "base/sha256.h"

#include <gtest/gtest.h>

#include <string>

namespace llms {
namespace {

std::string hex(const Sha256Digest& d) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (uint8_t b : d) s += digits[b >> 4], s += digits[b & 15];
  return s;
}

// The examples of FIPS 180-4 (NIST's "SHA256.pdf" and "SHA2_Additional.pdf").
TEST(Sha256Test, NistExamples) {
  EXPECT_EQ(hex(sha256("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(hex(sha256("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(hex(sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(hex(sha256(std::string(1000000, 'a'))), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// Fed in pieces of every size across the 64-byte block boundaries: the same digest.
TEST(Sha256Test, PiecesGiveTheWholeDigest) {
  std::string text;
  for (int i = 0; i < 300; ++i) text += static_cast<char>('a' + i % 26);
  const Sha256Digest whole = sha256(text);
  for (size_t piece = 1; piece <= 130; ++piece) {
    Sha256 s;
    for (size_t at = 0; at < text.size(); at += piece) s.update(text.substr(at, piece));
    ASSERT_EQ(s.finish(), whole) << piece;
  }
}

}  // namespace
}  // namespace llms
