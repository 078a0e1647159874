// Loading vocabularies from GGUF metadata: defaults, special ids and the errors a
// broken or unsupported file gives.
#include "tokenizer/vocab.h"

#include <gtest/gtest.h>

#include "tokenizer/testing/tokenizer_test_util.h"

namespace llms {
namespace {

using gguf::Value;

TEST(VocabTest, VocabularyOnlyFilesLoad) {
  for (const char* name : {"tokenizer/ggml-vocab-llama-spm.gguf", "tokenizer/ggml-vocab-gpt-2.gguf",
                           "tokenizer/ggml-vocab-deepseek-coder.gguf"}) {
    LLMS_LOAD_TOKENIZER_OR_SKIP(lt, name);
    EXPECT_TRUE(lt.file->tensors().empty()) << name << " should be vocabulary-only";
    EXPECT_GT(lt.tok->vocab_size(), 30000) << name;
  }
}

TEST(VocabTest, SharedVocabulariesHaveTheExpectedSettings) {
  {
    LLMS_LOAD_TOKENIZER_OR_SKIP(lt, "tokenizer/ggml-vocab-gpt-2.gguf");
    EXPECT_EQ(lt.tok->model(), VocabModel::kBpe);
    EXPECT_EQ(lt.tok->pre_tokenizer_name(), "gpt-2");
    EXPECT_EQ(lt.tok->vocab_size(), 50257);
    EXPECT_EQ(lt.tok->bos_id(), 50256);
    EXPECT_EQ(lt.tok->eos_id(), 50256);
    EXPECT_FALSE(lt.tok->add_bos());
  }
  {
    LLMS_LOAD_TOKENIZER_OR_SKIP(lt, "tokenizer/ggml-vocab-deepseek-coder.gguf");
    EXPECT_EQ(lt.tok->pre_tokenizer_name(), "deepseek-coder");
    EXPECT_TRUE(lt.tok->add_bos());
    EXPECT_EQ(lt.tok->encode("x").front(), 32013);
    EXPECT_TRUE(lt.tok->is_end_of_generation(32014));
  }
  {
    LLMS_LOAD_TOKENIZER_OR_SKIP(lt, "tokenizer/ggml-vocab-llama-spm.gguf");
    EXPECT_EQ(lt.tok->model(), VocabModel::kSpm);
    EXPECT_EQ(lt.tok->unk_id(), 0);
    EXPECT_TRUE(lt.tok->strips_leading_space());
    EXPECT_TRUE(lt.tok->is_end_of_generation(2));
    EXPECT_FALSE(lt.tok->is_end_of_generation(1));
  }
}

TEST(VocabTest, SpecialIdsPastTheEndMeanNone) {
  auto v = testing::make_vocab("llama", {"<unk>", "<s>", "</s>", "a"}, {2, 3, 3, 1}, [](GgufWriter& w) {
    w.set("tokenizer.ggml.padding_token_id", Value::u32(0xFFFFFFFFu));
    w.set("tokenizer.ggml.eos_token_id", Value::u32(99));
    w.set("tokenizer.ggml.eot_token_id", Value::i32(-1));
  });
  ASSERT_TRUE(v.tok.ok()) << v.tok.status().to_string();
  EXPECT_EQ((*v.tok)->eos_id(), -1);
  EXPECT_EQ((*v.tok)->eot_id(), -1);
  EXPECT_EQ((*v.tok)->bos_id(), 1);  // the SentencePiece default
  EXPECT_FALSE((*v.tok)->is_end_of_generation(2));
}

TEST(VocabTest, UnknownPreTokenizerIsAnErrorAtLoad) {
  auto v = testing::make_vocab("gpt2", {"a", "b"}, {}, [](GgufWriter& w) {
    w.set("tokenizer.ggml.pre", Value::string("brand-new-model"));
    w.set("tokenizer.ggml.merges", Value::string_array({}));
  });
  ASSERT_FALSE(v.tok.ok());
  EXPECT_EQ(v.tok.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(v.tok.status().message().find("'brand-new-model'"), std::string::npos);
  EXPECT_NE(v.tok.status().message().find("tokenizer.ggml.pre"), std::string::npos);
}

TEST(VocabTest, MissingPreTokenizerFallsBackToGpt2) {
  auto v = testing::make_vocab("gpt2", {"a", "b"}, {},
                               [](GgufWriter& w) { w.set("tokenizer.ggml.merges", Value::string_array({})); });
  ASSERT_TRUE(v.tok.ok()) << v.tok.status().to_string();
  EXPECT_EQ((*v.tok)->pre_tokenizer_name(), "gpt-2");
}

TEST(VocabTest, BrokenOrUnsupportedFilesGiveErrorsNamingTheKey) {
  auto model = testing::make_vocab("rwkv", {"a"}, {});
  ASSERT_FALSE(model.tok.ok());
  EXPECT_EQ(model.tok.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(model.tok.status().message().find("tokenizer.ggml.model"), std::string::npos);

  auto types = testing::make_vocab("llama", {"a", "b"}, {1});
  ASSERT_FALSE(types.tok.ok());
  EXPECT_EQ(types.tok.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(types.tok.status().message().find("tokenizer.ggml.token_type"), std::string::npos);

  auto merges = testing::make_vocab("gpt2", {"a"}, {},
                                    [](GgufWriter& w) { w.set("tokenizer.ggml.pre", Value::string("gpt-2")); });
  ASSERT_FALSE(merges.tok.ok());
  EXPECT_NE(merges.tok.status().message().find("tokenizer.ggml.merges"), std::string::npos);

  GgufWriter w;
  w.set("general.architecture", Value::string("llama"));
  const auto bytes = w.write_to_memory();
  auto file = GgufFile::parse(bytes);
  ASSERT_TRUE(file.ok());
  auto none = Tokenizer::from_gguf(*file);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_NE(none.status().message().find("tokenizer"), std::string::npos);
}

}  // namespace
}  // namespace llms
