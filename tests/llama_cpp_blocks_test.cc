// llmserve reads and writes the block types it runs natively exactly as llama.cpp
// does. tests/data/llama_cpp_blocks.txt (made by scripts/llama-cpp-fixtures.sh with
// the llama.cpp build in ../shared/peers) holds, for 32 rows of a synthetic model's
// blk.0.ffn_up.weight: the rows as llama-quantize encodes them and the checksum of
// llama.cpp's F32 decoding of them; the checksum of the rows as `llmserve quantize`
// writes them, and of llama.cpp's decoding of those.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "io/gguf_file.h"
#include "quant/row_convert.h"
#include "tools/synthetic.h"

namespace llms {
namespace {

constexpr int64_t kRows = 32;

// The fixture's checksum: (sum of the little-endian uint32 words, sum of i * word_i)
// mod 2^64, as 32 hex digits.
std::string checksum(const void* data, size_t bytes) {
  uint64_t sum = 0, weighted = 0;
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < bytes / 4; ++i) {
    uint32_t w;
    std::memcpy(&w, p + 4 * i, 4);
    sum += w;
    weighted += static_cast<uint64_t>(i) * w;
  }
  char out[33];
  std::snprintf(out, sizeof(out), "%016llx%016llx", static_cast<unsigned long long>(sum),
                static_cast<unsigned long long>(weighted));
  return out;
}

std::vector<uint8_t> from_hex(const std::string& hex) {
  std::vector<uint8_t> b(hex.size() / 2);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint8_t>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  return b;
}

struct Fixture {
  DType type;
  std::vector<uint8_t> llama_rows;
  std::string llama_decoded, ours, ours_decoded;
};

std::vector<Fixture> read_fixtures() {
  std::ifstream in(std::string(LLMSERVE_SOURCE_DIR) + "/tests/data/llama_cpp_blocks.txt");
  EXPECT_TRUE(in.good());
  std::vector<Fixture> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string type, hex;
    Fixture f;
    fields >> type >> hex >> f.llama_decoded >> f.ours >> f.ours_decoded;
    f.type = dtype_from_name(type).value();
    f.llama_rows = from_hex(hex);
    out.push_back(std::move(f));
  }
  return out;
}

// The script's model: make-model --preset tiny --dim 256 --heads 4 --kv-heads 2
// --ffn 512 --layers 1 --vocab 512 --seed 7; rows [0, 32) of blk.0.ffn_up.weight.
std::vector<float> source_rows() {
  SyntheticSpec spec = synthetic_preset("tiny").value();
  spec.n_embd = 256, spec.n_head = 4, spec.n_head_kv = 2, spec.n_ff = 512, spec.n_layer = 1, spec.n_vocab = 512;
  spec.seed = 7;
  const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_llama_cpp_blocks.gguf";
  EXPECT_TRUE(write_synthetic_model(spec, path).ok());
  const GgufFile f = GgufFile::open(path).value();
  const GgufTensorInfo* t = f.find_tensor("blk.0.ffn_up.weight");
  EXPECT_EQ(t->dtype, DType::kF32);
  const auto* x = reinterpret_cast<const float*>(t->data);
  std::vector<float> rows(x, x + kRows * t->ne[0]);
  std::remove(path.c_str());
  return rows;
}

TEST(LlamaCppBlocksTest, DecodesLlamaCppBlocksBitForBit) {
  const auto fixtures = read_fixtures();
  ASSERT_EQ(fixtures.size(), 6u);
  for (const Fixture& f : fixtures) {
    const int64_t n = kRows * 256;
    ASSERT_EQ(static_cast<int64_t>(f.llama_rows.size()), dtype_row_bytes(f.type, n)) << dtype_name(f.type);
    std::vector<float> y(static_cast<size_t>(n));
    dequantize_row(f.type, f.llama_rows.data(), y.data(), n);
    EXPECT_EQ(checksum(y.data(), y.size() * 4), f.llama_decoded) << dtype_name(f.type);
  }
}

TEST(LlamaCppBlocksTest, WritesBlocksLlamaCppDecodesAsWeDo) {
  const std::vector<float> x = source_rows();
  for (const Fixture& f : read_fixtures()) {
    if (f.ours == "-") continue;  // a type `quantize` does not write
    const int64_t n = static_cast<int64_t>(x.size());
    std::vector<uint8_t> q(static_cast<size_t>(dtype_row_bytes(f.type, n)));
    quantize_row(f.type, x.data(), q.data(), n);
    EXPECT_EQ(checksum(q.data(), q.size()), f.ours) << dtype_name(f.type) << ": not the bytes the script's file holds";
    std::vector<float> y(x.size());
    dequantize_row(f.type, q.data(), y.data(), n);
    EXPECT_EQ(checksum(y.data(), y.size() * 4), f.ours_decoded) << dtype_name(f.type);
  }
}

}  // namespace
}  // namespace llms
