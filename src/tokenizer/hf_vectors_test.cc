// Hugging Face tokenizer.json files from ../shared, read in place:
//   * gpt2 and llama2 (real published files) encode the inputs of ggml-vocab-gpt-2 and
//     ggml-vocab-llama-spm to exactly the reference ids (their vocabularies equal those
//     GGUFs', see the folders' SOURCES.txt), and decode them back;
//   * TinyStories-656K's directory gives the tokens of the GGUF llama.cpp converted from
//     it, and the GGUF metadata we would write equals that file's tokenizer metadata.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "io/gguf_writer.h"
#include "tokenizer/gguf_tokenizer.h"
#include "tokenizer/load_tokenizer.h"
#include "tokenizer/testing/tokenizer_test_util.h"

namespace llms {
namespace {

constexpr const char* kTinyStoriesDir = "models/tinystories-656k/hf";
constexpr const char* kTinyStoriesGguf = "models/tinystories-656k/TinyStories-656K-Q8_0.gguf";

std::unique_ptr<Tokenizer> load_dir_or_null(const std::string& relative, std::string* why) {
  const std::string dir = testing::shared_path(relative);
  if (!std::filesystem::exists(dir + "/tokenizer.json")) {
    *why = dir + "/tokenizer.json is absent";
    return nullptr;
  }
  auto tok = load_tokenizer(dir);
  if (!tok.ok()) {
    *why = tok.status().to_string();
    return nullptr;
  }
  return std::move(tok).value();
}

#define LLMS_LOAD_DIR_OR_SKIP(tok, relative)                                                          \
  std::string tok##_why;                                                                              \
  auto tok = load_dir_or_null(relative, &tok##_why);                                                  \
  if (tok == nullptr) {                                                                               \
    if (!std::filesystem::exists(testing::shared_path(relative))) GTEST_SKIP() << tok##_why;         \
    FAIL() << tok##_why;                                                                              \
  }

struct VectorCase {
  const char* dir;
  const char* vocab;
};

class HfVectorsTest : public ::testing::TestWithParam<VectorCase> {};

TEST_P(HfVectorsTest, EveryInputEncodesToTheReferenceIdsAndDecodesBack) {
  const VectorCase c = GetParam();
  LLMS_LOAD_DIR_OR_SKIP(tok, c.dir);
  EXPECT_TRUE(tok->from_tokenizer_json());
  std::string inp_raw, out_raw;
  ASSERT_TRUE(testing::read_file(testing::shared_path(std::string("tokenizer/") + c.vocab + ".inp"), &inp_raw));
  ASSERT_TRUE(testing::read_file(testing::shared_path(std::string("tokenizer/") + c.vocab + ".out"), &out_raw));
  const auto inputs = testing::split_vocab_inputs(inp_raw);
  const auto expected = testing::parse_vocab_ids(out_raw);
  ASSERT_EQ(inputs.size(), expected.size());
  ASSERT_GT(inputs.size(), 0u);
  EncodeOptions opts;
  opts.add_bos = false;
  for (size_t i = 0; i < inputs.size(); ++i) {
    EXPECT_EQ(tok->encode(inputs[i], opts), expected[i]) << c.dir << " input #" << i << ": '" << inputs[i] << "'";
    EXPECT_EQ(tok->decode(expected[i]), inputs[i]) << c.dir << " input #" << i;
  }
}

INSTANTIATE_TEST_SUITE_P(SharedTokenizerJson, HfVectorsTest,
                         ::testing::Values(VectorCase{"tokenizer/hf/gpt2", "ggml-vocab-gpt-2.gguf"},
                                           VectorCase{"tokenizer/hf/llama2", "ggml-vocab-llama-spm.gguf"}),
                         [](const auto& info) { return std::string(info.param.dir).substr(13); });

TEST(HfVectorsTest, Llama2AddsBosAsItsPostProcessorSays) {
  LLMS_LOAD_DIR_OR_SKIP(tok, "tokenizer/hf/llama2");
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_EQ(tok->eos_id(), 2);
  EXPECT_EQ(tok->unk_id(), 0);
  // "▁Hello" is 15043 in LLaMA-2's vocabulary; the template puts <s> (1) first.
  EXPECT_EQ(tok->encode("Hello"), (std::vector<int32_t>{1, 15043}));
  EXPECT_EQ(tok->decode(std::vector<int32_t>{1, 15043}), "Hello");
}

TEST(HfVectorsTest, Gpt2AddsNothingAndKnowsItsEndOfText) {
  LLMS_LOAD_DIR_OR_SKIP(tok, "tokenizer/hf/gpt2");
  EXPECT_EQ(tok->encode("Hello"), (std::vector<int32_t>{15496}));
  // <|endoftext|> is special: one token only when the caller parses special tokens.
  EncodeOptions special;
  special.parse_special = true;
  EXPECT_EQ(tok->encode("<|endoftext|>", special), (std::vector<int32_t>{50256}));
  EXPECT_GT(tok->encode("<|endoftext|>").size(), 1u);
  EXPECT_TRUE(tok->is_end_of_generation(50256));
}

TEST(HfVectorsTest, TinyStoriesDirectoryTokenizesAsItsGgufConversion) {
  LLMS_LOAD_DIR_OR_SKIP(hf, kTinyStoriesDir);
  LLMS_LOAD_TOKENIZER_OR_SKIP(gguf, kTinyStoriesGguf);
  std::string inp_raw;
  ASSERT_TRUE(testing::read_file(testing::shared_path("tokenizer/ggml-vocab-llama-spm.gguf.inp"), &inp_raw));
  const auto inputs = testing::split_vocab_inputs(inp_raw);
  size_t compared = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto from_gguf = gguf.tok->encode(inputs[i]);
    const auto from_dir = hf->encode(inputs[i]);
    if (std::find(from_gguf.begin(), from_gguf.end(), gguf.tok->unk_id()) != from_gguf.end()) {
      // Characters outside this 2048-piece vocabulary (no <0xNN> pieces): llama.cpp
      // aborts on them, our GGUF path writes <unk> per byte, and Hugging Face's BPE one
      // fused <unk> per run (fuse_unk); both give <unk> where the GGUF does.
      EXPECT_NE(std::find(from_dir.begin(), from_dir.end(), hf->unk_id()), from_dir.end()) << "input #" << i;
      continue;
    }
    EXPECT_EQ(from_dir, from_gguf) << "input #" << i << ": '" << inputs[i] << "'";
    ++compared;
  }
  EXPECT_GE(compared, 30u);
  // The first story word of the model card, and the fused unknown run.
  EXPECT_EQ(hf->encode("Once upon a time"), gguf.tok->encode("Once upon a time"));
  EncodeOptions no_bos;
  no_bos.add_bos = false;
  EXPECT_EQ(hf->encode("\t", no_bos), (std::vector<int32_t>{80, 0}));  // "▁", then <unk> for the tab
}

// Every tokenizer.* key llama.cpp wrote for TinyStories equals what we would write.
TEST(HfVectorsTest, TinyStoriesGgufMetadataEqualsLlamaCppConversion) {
  LLMS_LOAD_DIR_OR_SKIP(hf, kTinyStoriesDir);
  LLMS_LOAD_TOKENIZER_OR_SKIP(gguf, kTinyStoriesGguf);
  GgufWriter w;
  w.set("general.architecture", gguf::Value::string("llama"));
  ASSERT_TRUE(set_gguf_tokenizer_metadata(*hf, w).ok());
  const std::vector<uint8_t> bytes = w.write_to_memory();
  auto ours = GgufFile::parse(bytes);
  ASSERT_TRUE(ours.ok()) << ours.status().to_string();
  const GgufFile& ref = *gguf.file;
  for (const char* key : {"tokenizer.ggml.model", "tokenizer.ggml.pre"}) {
    EXPECT_EQ(*ours->get_string(key), *ref.get_string(key)) << key;
  }
  EXPECT_EQ(*ours->get_string_array("tokenizer.ggml.tokens"), *ref.get_string_array("tokenizer.ggml.tokens"));
  EXPECT_EQ(*ours->get_f32_array("tokenizer.ggml.scores"), *ref.get_f32_array("tokenizer.ggml.scores"));
  EXPECT_EQ(*ours->get_i32_array("tokenizer.ggml.token_type"), *ref.get_i32_array("tokenizer.ggml.token_type"));
  for (const char* key : {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
                          "tokenizer.ggml.unknown_token_id", "tokenizer.ggml.padding_token_id"}) {
    ASSERT_TRUE(ref.has(key)) << key;
    EXPECT_EQ(*ours->get_uint(key), *ref.get_uint(key)) << key;
  }
  for (const char* key : {"tokenizer.ggml.add_bos_token", "tokenizer.ggml.add_eos_token"}) {
    EXPECT_EQ(*ours->get_bool_or(key, false), *ref.get_bool_or(key, true)) << key;
  }
  // And the tokenizer read back from what we wrote tokenizes as the reference file.
  auto back = Tokenizer::from_gguf(*ours);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ((*back)->encode("Once upon a time, there was a little girl."),
            gguf.tok->encode("Once upon a time, there was a little girl."));
}

TEST(HfVectorsTest, TinyStoriesGenerationConfigGivesEosIds) {
  const std::string dir = testing::shared_path(kTinyStoriesDir);
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << dir << " is absent";
  auto d = read_generation_config(dir);
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  EXPECT_EQ(d->eos_token_ids, std::vector<int32_t>{2});
  EXPECT_FALSE(d->temperature.has_value());
}

}  // namespace
}  // namespace llms
