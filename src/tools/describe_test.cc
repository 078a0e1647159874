// `inspect`'s description says per tensor how loading runs it (native kernel, widened
// to Q8_0, read in place, vector) and what it then takes in memory.
#include "tools/describe.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "tools/synthetic.h"

namespace llms {
namespace {

nlohmann::json describe(DType type, const std::string& tag) {
  SyntheticSpec spec;
  spec.n_vocab = 512, spec.n_embd = 256, spec.n_layer = 1, spec.n_head = 4, spec.n_head_kv = 2, spec.n_ff = 512;
  spec.weight_type = type;
  const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_describe_" + tag + ".gguf";
  EXPECT_TRUE(write_synthetic_model(spec, path).ok());
  auto d = describe_model_file(GgufFile::open(path).value());
  std::remove(path.c_str());
  return d;
}

const nlohmann::json& tensor(const nlohmann::json& d, const std::string& name) {
  for (const auto& t : d["tensors"])
    if (t["name"] == name) return t;
  ADD_FAILURE() << name;
  return d;
}

TEST(DescribeTest, NativeTypesTakeTheirFileSizeInMemory) {
  const auto d = describe(DType::kIQ4_XS, "native");
  const auto& q = tensor(d, "blk.0.attn_q.weight");
  EXPECT_EQ(q["kernel"], "native");
  EXPECT_EQ(q["memory_bytes"], q["bytes"]);  // 256 x 256: whole panels
  EXPECT_EQ(tensor(d, "token_embd.weight")["kernel"], "in place");
  EXPECT_EQ(tensor(d, "blk.0.attn_norm.weight")["kernel"], "vector");
  EXPECT_EQ(d["widened"]["tensors"], 0);
}

TEST(DescribeTest, WidenedTypesCostQ8_0InMemory) {
  const auto d = describe(DType::kQ4_1, "widened");
  const auto& up = tensor(d, "blk.0.ffn_up.weight");  // [512, 256]
  EXPECT_EQ(up["kernel"], "widened to q8_0");
  EXPECT_EQ(up["bytes"], 512 * 256 / 32 * 20);
  EXPECT_EQ(up["memory_bytes"], 512 * 256 / 32 * 34);
  // Seven matrices and the output head.
  EXPECT_EQ(d["widened"]["tensors"], 8);
  EXPECT_GT(d["widened"]["memory_bytes"].get<uint64_t>(), d["widened"]["file_bytes"].get<uint64_t>());
  EXPECT_NE(format_model_description(d).find("widened to q8_0 at load"), std::string::npos);
}

}  // namespace
}  // namespace llms
