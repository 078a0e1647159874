// SentencePiece-style encoding on the 512-piece vocabulary of stories260K, checked
// against llama2.c's tokenizer (its greedy best-score merge loop, reimplemented below
// from tok512.bin) and against hand-checked cases.
#include "tokenizer/spm.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "base/random.h"
#include "tokenizer/testing/tokenizer_test_util.h"

namespace llms {
namespace {

// llama2.c's encoder: BOS, a dummy-prefix " " piece, one piece per UTF-8 character
// (bytes + 3 when the character is no piece), then repeatedly merge the adjacent pair
// whose concatenation is the best-scoring piece (first such pair on ties).
class Llama2cReference {
 public:
  bool load(const std::string& path) {
    std::string raw;
    if (!testing::read_file(path, &raw) || raw.size() < 4) return false;
    size_t pos = 4;  // max_token_length
    while (pos + 8 <= raw.size()) {
      float score;
      int32_t len;
      std::memcpy(&score, raw.data() + pos, 4);
      std::memcpy(&len, raw.data() + pos + 4, 4);
      pos += 8;
      if (len < 0 || pos + len > raw.size()) return false;
      index_[raw.substr(pos, len)] = static_cast<int32_t>(pieces_.size());
      pieces_.push_back(raw.substr(pos, len));
      scores_.push_back(score);
      pos += len;
    }
    return pieces_.size() == 512;
  }

  std::vector<int32_t> encode(const std::string& text) const {
    std::vector<int32_t> t = {1};
    if (!text.empty()) t.push_back(index_.at(" "));
    for (size_t i = 0; i < text.size();) {
      size_t j = i + 1;
      while (j < text.size() && (static_cast<uint8_t>(text[j]) & 0xC0) == 0x80 && j - i < 4) ++j;
      const auto it = index_.find(text.substr(i, j - i));
      if (it != index_.end()) {
        t.push_back(it->second);
      } else {
        for (size_t k = i; k < j; ++k) t.push_back(static_cast<uint8_t>(text[k]) + 3);
      }
      i = j;
    }
    for (;;) {
      float best = -1e10f;
      int at = -1, id = -1;
      for (size_t k = 0; k + 1 < t.size(); ++k) {
        const auto it = index_.find(pieces_[t[k]] + pieces_[t[k + 1]]);
        if (it != index_.end() && scores_[it->second] > best) {
          best = scores_[it->second];
          at = static_cast<int>(k);
          id = it->second;
        }
      }
      if (at < 0) return t;
      t[at] = id;
      t.erase(t.begin() + at + 1);
    }
  }

 private:
  std::vector<std::string> pieces_;
  std::vector<float> scores_;
  std::map<std::string, int32_t> index_;
};

TEST(SpmStories260KTest, OnceUponATimeMatchesLlama2c) {
  LLMS_LOAD_TOKENIZER_OR_SKIP(lt, "models/stories260K.gguf");
  EXPECT_EQ(lt.tok->model(), VocabModel::kSpm);
  EXPECT_EQ(lt.tok->vocab_size(), 512);
  EXPECT_EQ(lt.tok->bos_id(), 1);
  EXPECT_EQ(lt.tok->eos_id(), 2);
  EXPECT_TRUE(lt.tok->add_bos());
  // llama2.c: [BOS, " Once", " upon", " a", " time"]
  EXPECT_EQ(lt.tok->encode("Once upon a time"), (std::vector<int32_t>{1, 403, 407, 261, 378}));
  EncodeOptions no_bos;
  no_bos.add_bos = false;
  EXPECT_EQ(lt.tok->encode("Once upon a time", no_bos), (std::vector<int32_t>{403, 407, 261, 378}));
  EXPECT_EQ(lt.tok->decode(std::vector<int32_t>{1, 403, 407, 261, 378}), "Once upon a time");
  EXPECT_EQ(lt.tok->decode(std::vector<int32_t>{1, 403, 407, 261, 378, 2}), "Once upon a time");
  // The BOS alone when there is no text.
  EXPECT_EQ(lt.tok->encode(""), (std::vector<int32_t>{1}));
  EXPECT_TRUE(lt.tok->encode("", no_bos).empty());
}

TEST(SpmStories260KTest, AgreesWithLlama2cOnRandomText) {
  LLMS_LOAD_TOKENIZER_OR_SKIP(lt, "models/stories260K.gguf");
  Llama2cReference ref;
  const std::string path = testing::shared_path("models/tok512.bin");
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is absent";
  ASSERT_TRUE(ref.load(path));
  const std::string alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,!?'\"\n-:;()";
  const std::vector<std::string> words = {"Once",   "upon", "a",       "time", "there", "was",
                                          "little", "girl", "named",   "Lily", "She",   "loved",
                                          "to",     "play", "outside", "park", "é",     "日本"};
  Rng rng(42);
  for (int trial = 0; trial < 300; ++trial) {
    std::string text;
    const int n = 1 + static_cast<int>(rng.below(40));
    for (int i = 0; i < n; ++i) {
      if (rng.below(3) == 0) {
        text += alphabet[rng.below(alphabet.size())];
      } else {
        text += words[rng.below(words.size())];
        text += ' ';
      }
    }
    ASSERT_EQ(lt.tok->encode(text), ref.encode(text)) << "text: '" << text << "'";
  }
}

TEST(SpmStories260KTest, CharactersOutsideTheVocabularyUseByteFallback) {
  LLMS_LOAD_TOKENIZER_OR_SKIP(lt, "models/stories260K.gguf");
  EncodeOptions no_bos;
  no_bos.add_bos = false;
  // '日' is E6 97 A5; byte tokens are <0x00> = 3 onwards.
  const auto ids = lt.tok->encode("日", no_bos);
  ASSERT_EQ(ids.size(), 4u);  // "▁" then three byte tokens
  EXPECT_EQ(lt.tok->token_text(ids[0]), "\xE2\x96\x81");
  EXPECT_EQ(ids[1], 0xE6 + 3);
  EXPECT_EQ(ids[2], 0x97 + 3);
  EXPECT_EQ(ids[3], 0xA5 + 3);
  EXPECT_EQ(lt.tok->decode(ids), "日");
  // A byte token's piece is the raw byte; the text form is kept for inspection.
  EXPECT_EQ(lt.tok->token_to_piece(0xE6 + 3), "\xE6");
  EXPECT_EQ(lt.tok->token_text(0xE6 + 3), "<0xE6>");
}

TEST(SpmLlamaTest, LeadingSpaceRuleAndSpecialTokenBoundaries) {
  LLMS_LOAD_TOKENIZER_OR_SKIP(lt, "tokenizer/ggml-vocab-llama-spm.gguf");
  EncodeOptions special;
  special.parse_special = true;
  special.add_bos = false;
  // Text after a special token gets the SentencePiece space prefix, as at the start.
  const auto a = lt.tok->encode("Hello", special);
  const auto b = lt.tok->encode("</s>Hello", special);
  ASSERT_EQ(b.size(), a.size() + 1);
  EXPECT_EQ(b[0], 2);
  EXPECT_EQ(std::vector<int32_t>(b.begin() + 1, b.end()), a);
  // Decoding drops the prefix space once, at the start of the text only.
  EXPECT_EQ(lt.tok->decode(lt.tok->encode(" Hello world")), " Hello world");
  DecodeOptions keep;
  keep.strip_leading_space = false;
  EXPECT_EQ(lt.tok->decode(a, keep), " Hello");
  DecodeOptions render;
  render.render_special = true;
  EXPECT_EQ(lt.tok->decode(lt.tok->encode("Hi"), render), "<s> Hi");
}

TEST(SpmWordSplitTest, EncodingWordByWordEqualsOneMergeLoopOverTheText) {
  for (const char* name : {"tokenizer/ggml-vocab-llama-spm.gguf", "models/stories260K.gguf"}) {
    const std::string path = testing::shared_path(name);
    if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is absent";
    auto file = GgufFile::open(path);
    ASSERT_TRUE(file.ok());
    auto vocab = Vocab::from_gguf(*file);
    ASSERT_TRUE(vocab.ok());
    const SpmModel model(*vocab);
    ASSERT_TRUE(model.splits_at_words()) << name;
    const std::vector<std::string> parts = {"\xE2\x96\x81",
                                            "\xE2\x96\x81\xE2\x96\x81",
                                            "the",
                                            "Hello",
                                            "ing",
                                            "日本",
                                            "a",
                                            "\xE2\x96\x81of",
                                            ",",
                                            "\n",
                                            "🦙",
                                            "x",
                                            "\xFF"};
    Rng rng(11);
    for (int trial = 0; trial < 300; ++trial) {
      std::string text;
      const size_t n = rng.below(30);
      for (size_t i = 0; i < n; ++i) text += parts[rng.below(parts.size())];
      std::vector<int32_t> by_word, whole;
      model.encode(text, &by_word);
      model.encode(text, &whole, /*allow_word_split=*/false);
      ASSERT_EQ(by_word, whole) << name << ": '" << text << "'";
    }
  }
}

TEST(SpmWordSplitTest, APieceSpanningAWordStartTurnsTheSplitOff) {
  // "a▁b" would let a merge cross the start of the word "▁b".
  auto v = testing::make_vocab("llama",
                               {"<unk>", "<s>", "</s>", "a", "\xE2\x96\x81", "b",
                                "a\xE2\x96\x81"
                                "b"},
                               {2, 3, 3, 1, 1, 1, 1});
  ASSERT_TRUE(v.tok.ok()) << v.tok.status().to_string();
  auto vocab = Vocab::from_gguf(*v.file);
  ASSERT_TRUE(vocab.ok());
  EXPECT_FALSE(SpmModel(*vocab).splits_at_words());
}

}  // namespace
}  // namespace llms
