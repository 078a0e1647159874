// Importing the llama2.c checkpoint of stories260K must give the same model as the
// published GGUF: bit-identical logits in F32.
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "io/gguf_file.h"
#include "io/llama2c_import.h"
#include "model/model.h"

namespace llms {
namespace {

const std::string kShared = LLMSERVE_SHARED_DIR;

std::vector<float> logits_for(const Model& m, const std::vector<int32_t>& tokens) {
  KvCache kv(m.kv_config(4, 16, DType::kF32, DType::kF32));
  std::vector<int32_t> table = {0, 1, 2, 3};
  ForwardState state;
  ThreadPool pool(2);
  ForwardOutput out;
  SequenceChunk ch{tokens, 0, table, LogitsWanted::kAll};
  EXPECT_TRUE(m.forward({&ch, 1}, kv, state, pool, out).ok());
  return out.logits;
}

TEST(Llama2cImportTest, StoriesCheckpointGivesBitIdenticalLogits) {
  const std::string bin = kShared + "/models/stories260K.bin", tok = kShared + "/models/tok512.bin";
  const std::string gguf = kShared + "/models/stories260K.gguf";
  if (!std::filesystem::exists(bin) || !std::filesystem::exists(gguf)) GTEST_SKIP() << "needs " << bin;
  const std::string out = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_stories_import.gguf";
  ASSERT_TRUE(convert_llama2c(bin, tok, out).ok());
  auto imported = Model::load(out);
  auto published = Model::load(gguf);
  ASSERT_TRUE(imported.ok()) << imported.status().to_string();
  ASSERT_TRUE(published.ok());
  const std::vector<int32_t> tokens = {1, 403, 407, 261, 138, 263, 306, 266, 300, 375, 500, 13};
  const auto a = logits_for(**imported, tokens), b = logits_for(**published, tokens);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
  // The vocabulary comes across too, in the published file's spelling.
  auto fa = GgufFile::open(out), fb = GgufFile::open(gguf);
  EXPECT_EQ(fa->get_string_array("tokenizer.ggml.tokens").value(), fb->get_string_array("tokenizer.ggml.tokens").value());
  EXPECT_EQ(fa->get_f32_array("tokenizer.ggml.scores").value(), fb->get_f32_array("tokenizer.ggml.scores").value());
  EXPECT_EQ(fa->get_i32_array("tokenizer.ggml.token_type").value(),
            fb->get_i32_array("tokenizer.ggml.token_type").value());
  std::filesystem::remove(out);
}

TEST(Llama2cImportTest, TruncatedCheckpointIsAClearError) {
  const std::string bin = kShared + "/models/stories260K.bin", tok = kShared + "/models/tok512.bin";
  if (!std::filesystem::exists(bin)) GTEST_SKIP() << "needs " << bin;
  const std::string cut = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_cut.bin";
  {
    std::ifstream in(bin, std::ios::binary);
    std::vector<char> bytes(1000);
    in.read(bytes.data(), 1000);
    std::ofstream(cut, std::ios::binary).write(bytes.data(), 1000);
  }
  const Status s = convert_llama2c(cut, tok, ::testing::TempDir() + "/" + std::to_string(getpid()) + "_never.gguf");
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("1000 bytes"), std::string::npos) << s.message();
  EXPECT_FALSE(std::filesystem::exists(::testing::TempDir() + "/" + std::to_string(getpid()) + "_never.gguf"));
  // A tokenizer cut short.
  const std::string cut_tok = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_cut_tok.bin";
  {
    std::ifstream in(tok, std::ios::binary);
    std::vector<char> bytes(100);
    in.read(bytes.data(), 100);
    std::ofstream(cut_tok, std::ios::binary).write(bytes.data(), 100);
  }
  const Status t = convert_llama2c(bin, cut_tok, ::testing::TempDir() + "/" + std::to_string(getpid()) + "_never.gguf");
  EXPECT_EQ(t.code(), StatusCode::kDataLoss);
  EXPECT_NE(t.message().find("ends at token"), std::string::npos) << t.message();
  std::filesystem::remove(cut);
  std::filesystem::remove(cut_tok);
}

}  // namespace
}  // namespace llms
