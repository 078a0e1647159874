// The safetensors reader on well-formed and malformed files: every malformation is an
// error that names what is wrong, never a crash.
#include "io/safetensors.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace llms {
namespace {

// A file of `header` (padded to 8 bytes as writers do, unless `pad` is false) and
// `data_bytes` bytes of data counting 0, 1, 2, ...
std::vector<uint8_t> file_of(std::string header, size_t data_bytes, bool pad = true) {
  if (pad) header.append((8 - header.size() % 8) % 8, ' ');
  std::vector<uint8_t> b(8 + header.size() + data_bytes);
  const uint64_t n = header.size();
  std::memcpy(b.data(), &n, 8);
  std::memcpy(b.data() + 8, header.data(), header.size());
  for (size_t i = 0; i < data_bytes; ++i) b[8 + header.size() + i] = static_cast<uint8_t>(i);
  return b;
}

std::string error_of(const std::vector<uint8_t>& bytes) {
  auto f = SafetensorsFile::parse(bytes);
  return f.ok() ? std::string("(parsed)") : f.status().message();
}

TEST(SafetensorsTest, ParsesTensorsInPlace) {
  const auto bytes = file_of(
      R"({"__metadata__":{"format":"pt"},"b":{"dtype":"BF16","shape":[4],"data_offsets":[24,32]},)"
      R"("a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]}})",
      32);
  auto f = SafetensorsFile::parse(bytes);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  ASSERT_EQ(f->tensors().size(), 2u);
  EXPECT_EQ(f->tensors()[0].name, "a");  // file order
  const SafetensorsTensor* b = f->find("b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->dtype, DType::kBF16);
  EXPECT_EQ(b->shape, (std::vector<int64_t>{4}));
  EXPECT_EQ(b->data, bytes.data() + f->data_offset() + 24);
  EXPECT_EQ(b->data[0], 24);
  EXPECT_EQ(f->metadata().at("format"), "pt");
}

TEST(SafetensorsTest, OtherDtypesParseWithoutAWeightType) {
  auto f = SafetensorsFile::parse(file_of(R"({"ids":{"dtype":"I64","shape":[2],"data_offsets":[0,16]}})", 16));
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_FALSE(f->tensors()[0].dtype.has_value());
  EXPECT_EQ(f->tensors()[0].dtype_name, "I64");
}

TEST(SafetensorsTest, WriterOutputReadsBack) {
  const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_st.safetensors";
  std::vector<SafetensorsOutput> out;
  // An F16 tensor of odd length before an F32 one: the writer orders by element size.
  out.push_back({"half", DType::kF16, {3}, [](std::span<uint8_t> o) { std::memset(o.data(), 7, o.size()); }});
  out.push_back({"full", DType::kF32, {2, 2}, [](std::span<uint8_t> o) { std::memset(o.data(), 9, o.size()); }});
  ASSERT_TRUE(write_safetensors(path, out, {{"format", "pt"}}).ok());
  auto f = SafetensorsFile::open(path);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->find("full")->num_bytes, 16u);
  EXPECT_EQ(f->find("full")->data[15], 9);
  EXPECT_EQ(f->find("half")->data[5], 7);
  EXPECT_EQ(f->data_offset() % 8, 0u);
  std::remove(path.c_str());
}

struct Malformed {
  const char* what;
  std::vector<uint8_t> bytes;
  const char* message;  // a part of the error
};

TEST(SafetensorsTest, MalformedFilesAreErrorsThatSayWhy) {
  const std::string ok_entry = R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  std::vector<uint8_t> huge_len(16, 0);
  const uint64_t huge = uint64_t{1} << 40;
  std::memcpy(huge_len.data(), &huge, 8);
  std::vector<uint8_t> past_end = file_of("{" + ok_entry + "}", 8);
  const uint64_t past = past_end.size();
  std::memcpy(past_end.data(), &past, 8);
  const std::vector<Malformed> cases = {
      {"no length", {1, 2, 3}, "truncated"},
      {"header over the limit", huge_len, "over the limit"},
      {"header past the end", past_end, "truncated"},
      {"not JSON", file_of(R"({"a": )", 0), "not valid JSON"},
      {"not an object", file_of("[1, 2]", 0), "does not start with '{'"},
      {"duplicate tensor", file_of("{" + ok_entry + "," + ok_entry + "}", 8), "names 'a' twice"},
      {"duplicate field", file_of(R"({"a":{"dtype":"F32","dtype":"F16","shape":[2],"data_offsets":[0,8]}})", 8), "twice"},
      {"unknown field", file_of(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1}})", 8), "unknown field"},
      {"missing dtype", file_of(R"({"a":{"shape":[2],"data_offsets":[0,8]}})", 8), "'dtype'"},
      {"unknown dtype", file_of(R"({"a":{"dtype":"F7","shape":[2],"data_offsets":[0,8]}})", 8), "unknown dtype"},
      {"negative dimension", file_of(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8), "dimension"},
      {"float offset", file_of(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8.5]}})", 8), "data_offsets"},
      {"reversed offsets", file_of(R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", 8), "end before"},
      {"size mismatch", file_of(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8), "takes 12 bytes"},
      {"overflowing shape", file_of(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", 8),
       "more than the file"},
      {"overlap", file_of("{" + ok_entry + R"(,"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12), "overlap"},
      {"gap", file_of(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12), "gap"},
      {"trailing bytes", file_of("{" + ok_entry + "}", 12), "after the last tensor"},
      {"truncated data", file_of("{" + ok_entry + "}", 4), "truncated"},
      {"misaligned", file_of(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8, false), "not a multiple"},
      {"metadata not strings", file_of(R"({"__metadata__":{"k":1}})", 0), "not a string"},
  };
  for (const auto& c : cases) {
    const std::string e = error_of(c.bytes);
    EXPECT_NE(e.find(c.message), std::string::npos) << c.what << ": " << e;
  }
}

}  // namespace
}  // namespace llms
