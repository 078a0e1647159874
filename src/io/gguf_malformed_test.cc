// A corpus of malformed GGUF files, each built byte by byte, must give a clean error
// (a Status, never a crash); run under the asan preset this also proves no invalid
// memory access happens on the way to the error.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "io/gguf_file.h"
#include "io/gguf_writer.h"

namespace llms {
namespace {

// Appends little-endian fields; lets a test write any header, valid or not.
class Bytes {
 public:
  Bytes& u8(uint8_t v) { return raw(&v, 1); }
  Bytes& u32(uint32_t v) { return raw(&v, 4); }
  Bytes& u64(uint64_t v) { return raw(&v, 8); }
  Bytes& str(const std::string& s) { return u64(s.size()).raw(s.data(), s.size()); }
  Bytes& raw(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    v_.insert(v_.end(), b, b + n);
    return *this;
  }
  Bytes& pad(size_t align) {
    while (v_.size() % align) v_.push_back(0);
    return *this;
  }
  Bytes& zeros(size_t n) {
    v_.resize(v_.size() + n, 0);
    return *this;
  }
  const std::vector<uint8_t>& get() const { return v_; }

 private:
  std::vector<uint8_t> v_;
};

Bytes header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
  Bytes b;
  b.u32(0x46554747).u32(version).u64(n_tensors).u64(n_kv);
  return b;
}

// One F32 tensor "w" of shape [8] at offset `offset`, with data following.
Bytes one_tensor(uint64_t n_dims, std::vector<uint64_t> dims, uint32_t type, uint64_t offset, size_t data_bytes) {
  Bytes b = header(1, 0);
  b.str("w").u32(static_cast<uint32_t>(n_dims));
  for (uint64_t d : dims) b.u64(d);
  b.u32(type).u64(offset).pad(32).zeros(data_bytes);
  return b;
}

struct Case {
  std::string name;
  std::vector<uint8_t> bytes;
  std::string expect;  // substring of the error message
};

std::vector<Case> corpus() {
  std::vector<Case> c;
  auto add = [&](std::string name, const Bytes& b, std::string expect) {
    c.push_back({std::move(name), b.get(), std::move(expect)});
  };
  add("empty file", Bytes(), "truncated at offset 0");
  add("bad magic", Bytes().u32(0x46554746).u32(3).u64(0).u64(0), "not a GGUF file");
  add("GGML magic", Bytes().raw("ggml", 4).u32(3).u64(0).u64(0), "not a GGUF file");
  add("version 1", header(0, 0, 1), "version 1 is not supported");
  add("version 99", header(0, 0, 99), "unknown GGUF version 99");
  add("big-endian", header(0, 0, 0x03000000), "big-endian");
  add("header cut after version", Bytes().u32(0x46554747).u32(3).u32(0), "tensor count");
  add("absurd tensor count", header(1ull << 60, 0), "cannot hold them");
  add("absurd metadata count", header(0, 1ull << 60), "cannot hold them");
  add("metadata count past end", header(0, 1), "cannot hold them");
  add("key length past end", header(0, 1).u64(1ull << 62), "claims");
  add("empty key", header(0, 1).str("").u32(4).u32(1), "empty or not valid UTF-8");
  add("key with overlong UTF-8", header(0, 1).str("a\xC0\x80").u32(4).u32(1), "not valid UTF-8");
  add("key with lone continuation byte", header(0, 1).str("\x80key").u32(4).u32(1), "not valid UTF-8");
  add("key with surrogate", header(0, 1).str("k\xED\xA0\x80").u32(4).u32(1), "not valid UTF-8");
  add("key with truncated sequence", header(0, 1).str("k\xE2\x82").u32(4).u32(1), "not valid UTF-8");
  add("unknown value type", header(0, 1).str("k").u32(13).u32(1), "unknown value type 13");
  add("huge value type", header(0, 1).str("k").u32(0xFFFFFFFF).u32(0), "unknown value type");
  add("value cut", header(0, 1).str("k").u32(10).u32(1), "u64 value");
  add("bool of 2", header(0, 1).str("k").u32(7).u8(2), "bool");
  add("string value length past end", header(0, 1).str("k").u32(8).u64(1000).raw("abc", 3), "claims 1000 bytes");
  add("array count absurd", header(0, 1).str("k").u32(9).u32(4).u64(1ull << 61), "cannot fit");
  add("array of strings absurd", header(0, 1).str("k").u32(9).u32(8).u64(1ull << 40), "cannot fit");
  add("array element type unknown", header(0, 1).str("k").u32(9).u32(77).u64(1), "unknown array element type 77");
  {
    Bytes b = header(0, 1);
    b.str("deep").u32(9);
    for (int i = 0; i < 20; ++i) b.u32(9).u64(1);
    b.u32(4).u64(1).u32(0);
    add("arrays nested too deep", b, "nested deeper");
  }
  add("duplicate key", header(0, 2).str("k").u32(4).u32(1).str("k").u32(4).u32(2), "duplicate metadata key 'k'");
  add("alignment zero", header(0, 1).str("general.alignment").u32(4).u32(0), "power of two");
  add("alignment three", header(0, 1).str("general.alignment").u32(4).u32(3), "power of two");
  add("alignment as string", header(0, 1).str("general.alignment").u32(8).str("32"), "must be an integer");
  add("tensor info cut", header(1, 0).str("w").u32(4).u64(8).u64(8).u64(8), "truncated");
  add("zero dimensions", one_tensor(0, {}, 0, 0, 32), "0 dimensions");
  add("five dimensions", one_tensor(5, {1, 1, 1, 1, 1}, 0, 0, 32), "5 dimensions");
  add("dimension zero", one_tensor(1, {0}, 0, 0, 32), "tensor 'w' (info at offset 24): dimension 0 is 0");
  add("dimension above int64", one_tensor(1, {1ull << 63}, 0, 0, 32), "dimension 0 is");
  add("element count overflow", one_tensor(2, {1ull << 32, 1ull << 32}, 0, 0, 32), "overflows");
  add("byte size overflow", one_tensor(1, {1ull << 62}, 0, 0, 32), "overflows");
  add("removed type id 4", one_tensor(1, {8}, 4, 0, 32), "unknown tensor type id 4");
  add("type id 1000", one_tensor(1, {8}, 1000, 0, 32), "unknown tensor type id 1000");
  add("row not whole q8_0 blocks", one_tensor(1, {33}, 8, 0, 64), "not a whole number of q8_0 blocks");
  add("unaligned data offset", one_tensor(1, {8}, 0, 4, 64), "not a multiple of the alignment");
  add("data past end of file", one_tensor(1, {8}, 0, 0, 16), "ends past the end of the file");
  add("offset far out of file", one_tensor(1, {8}, 0, 1ull << 50, 32), "ends past the end of the file");
  add("data section beyond file", header(1, 0).str("w").u32(1).u64(8).u32(0).u64(0), "data section");
  {
    Bytes b = header(2, 0);
    b.str("a").u32(1).u64(16).u32(0).u64(0);
    b.str("b").u32(1).u64(16).u32(0).u64(32);  // a covers [0, 64), b starts at 32
    b.pad(32).zeros(128);
    add("overlapping tensors", b, "overlap");
  }
  {
    Bytes b = header(2, 0);
    b.str("w").u32(1).u64(8).u32(0).u64(0);
    b.str("w").u32(1).u64(8).u32(0).u64(32);
    b.pad(32).zeros(64);
    add("duplicate tensor name", b, "duplicate tensor name");
  }
  add("tensor name not UTF-8", header(1, 0).str("w\xFF").u32(1).u64(8).u32(0).u64(0).pad(32).zeros(32),
      "not valid UTF-8");
  add("tensor name absurd length", header(1, 0).u64(1ull << 40), "claims");
  return c;
}

TEST(GgufMalformedTest, EveryCaseGivesItsCleanError) {
  const auto cases = corpus();
  ASSERT_GE(cases.size(), 30u);
  for (const auto& tc : cases) {
    // Copy into an exactly-sized heap buffer so ASan sees any read past the end.
    std::unique_ptr<uint8_t[]> buf(new uint8_t[tc.bytes.size() + 1]);
    if (!tc.bytes.empty()) std::memcpy(buf.get(), tc.bytes.data(), tc.bytes.size());
    auto r = GgufFile::parse({buf.get(), tc.bytes.size()});
    ASSERT_FALSE(r.ok()) << tc.name << ": parsed";
    EXPECT_NE(r.status().message().find(tc.expect), std::string::npos)
        << tc.name << ": got '" << r.status().message() << "', expected it to mention '" << tc.expect << "'";
  }
}

// A valid file cut at every length must fail (its last tensor ends exactly at the end
// of the file, so every cut removes something the header promises).
TEST(GgufMalformedTest, EveryTruncationOfAValidFileFails) {
  GgufWriter w;
  w.set("general.architecture", gguf::Value::string("llama"));
  w.set("list", gguf::Value::string_array({"x", "yy"}));
  w.set("nested", gguf::Value::array(gguf::ValueType::kArray, {gguf::Value::i32_array({1, 2, 3})}));
  std::vector<uint8_t> data(64 * 4, 1);
  w.add_tensor("t0", DType::kF32, {64}, data);
  w.add_tensor("t1", DType::kF32, {8, 8}, data);
  const auto full = w.write_to_memory();
  ASSERT_TRUE(GgufFile::parse(full).ok());
  int failures = 0;
  for (size_t len = 0; len < full.size(); ++len) {
    std::unique_ptr<uint8_t[]> buf(new uint8_t[len + 1]);
    std::memcpy(buf.get(), full.data(), len);
    auto r = GgufFile::parse({buf.get(), len});
    EXPECT_FALSE(r.ok()) << "cut at " << len << " parsed";
    failures += !r.ok();
  }
  EXPECT_EQ(failures, static_cast<int>(full.size()));
}

// Flipping single bytes of a valid file never crashes; whatever parses has every
// tensor inside the file.
TEST(GgufMalformedTest, ByteFlipsNeverEscapeTheFile) {
  GgufWriter w;
  w.set("general.architecture", gguf::Value::string("llama"));
  w.set("k", gguf::Value::f32_array({1, 2, 3}));
  std::vector<uint8_t> data(32 * 4, 7);
  w.add_tensor("t", DType::kF32, {32}, data);
  const auto full = w.write_to_memory();
  for (size_t i = 0; i < full.size(); ++i) {
    for (uint8_t x : {0x01, 0x80, 0xFF}) {
      auto mutated = full;
      mutated[i] ^= x;
      auto r = GgufFile::parse(mutated);
      if (!r.ok()) continue;
      for (const auto& t : r->tensors()) {
        EXPECT_GE(t.data, mutated.data());
        EXPECT_LE(t.data + t.num_bytes, mutated.data() + mutated.size());
      }
    }
  }
}

}  // namespace
}  // namespace llms
