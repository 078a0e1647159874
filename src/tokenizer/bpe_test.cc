#include "tokenizer/bpe.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/random.h"
#include "tokenizer/testing/tokenizer_test_util.h"

namespace llms {
namespace {

using gguf::Value;

std::vector<int32_t> encode_no_bos(const Tokenizer& tok, std::string_view text) {
  EncodeOptions o;
  o.add_bos = false;
  return tok.encode(text, o);
}

TEST(BpeMergeLoopTest, ScanAndHeapLoopsGiveTheSameTokens) {
  for (const char* name : {"ggml-vocab-gpt-2.gguf", "ggml-vocab-deepseek-coder.gguf"}) {
    const std::string path = testing::shared_path(std::string("tokenizer/") + name);
    if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is absent";
    auto file = GgufFile::open(path);
    ASSERT_TRUE(file.ok()) << file.status().to_string();
    auto vocab = Vocab::from_gguf(*file);
    ASSERT_TRUE(vocab.ok());
    auto model = BpeModel::build(*vocab, /*ignore_merges=*/false);
    ASSERT_TRUE(model.ok());
    EXPECT_GT(model->num_merges(), 30000);
    const std::vector<std::string> parts = {"e", "th", "in", "er", " ", "an", "ing", "tion", "a", "ü", "日", "\xFF"};
    Rng rng(7);
    BpeScratch scratch;
    for (int trial = 0; trial < 400; ++trial) {
      std::string piece;
      const size_t n = 1 + rng.below(120);
      while (piece.size() < n) piece += parts[rng.below(parts.size())];
      std::vector<int32_t> by_scan, by_heap;
      model->encode_piece(piece, &by_scan, scratch, BpeModel::MergeLoop::kScan);
      model->encode_piece(piece, &by_heap, scratch, BpeModel::MergeLoop::kHeap);
      ASSERT_EQ(by_scan, by_heap) << name << ": '" << piece << "'";
    }
  }
}

TEST(BpeSyntheticTest, LowestRankMergesFirstAndLeftmostWinsTies) {
  const std::vector<std::string> tokens = {"a", "b", "c", "ab", "bc", "abc", "aa"};
  auto v = testing::make_vocab("gpt2", tokens, {}, [](GgufWriter& w) {
    w.set("tokenizer.ggml.pre", Value::string("gpt-2"));
    w.set("tokenizer.ggml.merges", Value::string_array({"b c", "a b", "a bc", "a a"}));
  });
  ASSERT_TRUE(v.tok.ok()) << v.tok.status().to_string();
  const Tokenizer& tok = **v.tok;
  // (b,c) has rank 0, so "abc" is a + bc, then (a,bc) → abc.
  EXPECT_EQ(encode_no_bos(tok, "abc"), (std::vector<int32_t>{5}));
  // "ab" merges by rank 1.
  EXPECT_EQ(encode_no_bos(tok, "ab"), (std::vector<int32_t>{3}));
  // Three a's: the leftmost pair merges first.
  EXPECT_EQ(encode_no_bos(tok, "aaa"), (std::vector<int32_t>{6, 0}));
}

TEST(BpeSyntheticTest, IgnoreMergesEmitsWholeWordTokensForLlama3) {
  const std::vector<std::string> tokens = {"a", "b", "c", "ab", "abc"};
  for (const char* pre : {"gpt-2", "llama3"}) {
    auto v = testing::make_vocab("gpt2", tokens, {}, [&](GgufWriter& w) {
      w.set("tokenizer.ggml.pre", Value::string(pre));
      w.set("tokenizer.ggml.merges", Value::string_array({"a b"}));
    });
    ASSERT_TRUE(v.tok.ok()) << v.tok.status().to_string();
    const auto ids = encode_no_bos(**v.tok, "abc");
    if (std::string(pre) == "llama3") {
      EXPECT_EQ(ids, (std::vector<int32_t>{4})) << pre;
      EXPECT_TRUE((*v.tok)->add_bos()) << "llama3 vocabularies add BOS unless the file says otherwise";
    } else {
      EXPECT_EQ(ids, (std::vector<int32_t>{3, 2})) << pre;
      EXPECT_FALSE((*v.tok)->add_bos());
    }
  }
}

TEST(BpeSyntheticTest, MergesThatNameNoTokenAreSkippedAndMalformedOnesRejected) {
  const std::vector<std::string> tokens = {"a", "b", "ab"};
  auto ok = testing::make_vocab("gpt2", tokens, {}, [](GgufWriter& w) {
    w.set("tokenizer.ggml.pre", Value::string("gpt-2"));
    w.set("tokenizer.ggml.merges", Value::string_array({"x y", "a b"}));
  });
  ASSERT_TRUE(ok.tok.ok()) << ok.tok.status().to_string();
  EXPECT_EQ(encode_no_bos(**ok.tok, "ab"), (std::vector<int32_t>{2}));

  auto bad = testing::make_vocab("gpt2", tokens, {}, [](GgufWriter& w) {
    w.set("tokenizer.ggml.pre", Value::string("gpt-2"));
    w.set("tokenizer.ggml.merges", Value::string_array({"ab"}));
  });
  ASSERT_FALSE(bad.tok.ok());
  EXPECT_EQ(bad.tok.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(bad.tok.status().message().find("tokenizer.ggml.merges[0]"), std::string::npos);
}

TEST(BpeGpt2Test, LongPiecesUseTheHeapAndRoundTrip) {
  LLMS_LOAD_TOKENIZER_OR_SKIP(lt, "tokenizer/ggml-vocab-gpt-2.gguf");
  std::string text;
  for (int i = 0; i < 2000; ++i) text += "abcdefghij"[i % 10];  // one 2000-byte word
  const auto ids = encode_no_bos(*lt.tok, text);
  EXPECT_LT(ids.size(), text.size() / 2);
  EXPECT_EQ(lt.tok->decode(ids), text);
}

}  // namespace
}  // namespace llms
