#include "tokenizer/streaming_decoder.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/random.h"
#include "base/utf8.h"
#include "tokenizer/testing/tokenizer_test_util.h"

namespace llms {
namespace {

const std::vector<std::string> kSnippets = {"Hello",
                                            " world",
                                            ", ",
                                            "日本語",
                                            "🦙",
                                            "👩‍👩‍👧",
                                            "é",
                                            "e\xCC\x81",
                                            "Ünïcödé",
                                            " ",
                                            "\n",
                                            "🇫🇷",
                                            "\xF0\x9F\x98\x80",
                                            "ὕ",
                                            "한국어",
                                            "𝔘𝔫𝔦",
                                            "\t",
                                            "12345",
                                            "<s>",
                                            "Ω"};

class StreamingDecoderTest : public ::testing::TestWithParam<const char*> {};

TEST_P(StreamingDecoderTest, OneTokenAtATimeGivesTheWholeTextInCompleteCharacters) {
  LLMS_LOAD_TOKENIZER_OR_SKIP(lt, GetParam());
  Rng rng(5);
  for (int trial = 0; trial < 200; ++trial) {
    std::string text;
    const size_t n = rng.below(12);
    for (size_t i = 0; i < n; ++i) text += kSnippets[rng.below(kSnippets.size())];
    const auto ids = lt.tok->encode(text);  // with BOS where the vocabulary adds one
    StreamingDecoder dec(*lt.tok, StreamStart::kTextStart);
    std::string streamed;
    for (const int32_t id : ids) {
      const std::string chunk = dec.push(id);
      ASSERT_TRUE(is_valid_utf8(chunk)) << "chunk ends inside a character";
      ASSERT_LE(dec.pending_bytes(), 3u);
      streamed += chunk;
    }
    EXPECT_EQ(dec.flush(), "") << "a complete text leaves nothing behind";
    EXPECT_EQ(streamed, lt.tok->decode(ids));
    EXPECT_EQ(streamed, text);
  }
}

INSTANTIATE_TEST_SUITE_P(SharedVocabs, StreamingDecoderTest,
                         ::testing::Values("tokenizer/ggml-vocab-llama-spm.gguf", "tokenizer/ggml-vocab-gpt-2.gguf",
                                           "tokenizer/ggml-vocab-deepseek-coder.gguf", "models/stories260K.gguf"));

TEST(StreamingDecoderBytesTest, ByteFallbackCharacterIsHeldUntilComplete) {
  LLMS_LOAD_TOKENIZER_OR_SKIP(lt, "models/stories260K.gguf");
  // "日" = E6 97 A5; the byte tokens are <0x00> = 3 onwards.
  const int32_t space = lt.tok->find_token("\xE2\x96\x81");
  ASSERT_GE(space, 0);
  StreamingDecoder dec(*lt.tok, StreamStart::kTextStart);
  EXPECT_EQ(dec.push(1), "");      // BOS shows nothing
  EXPECT_EQ(dec.push(space), "");  // the encoder's prefix space is dropped at the start
  EXPECT_EQ(dec.push(0xE6 + 3), "");
  EXPECT_EQ(dec.pending_bytes(), 1u);
  EXPECT_EQ(dec.push(0x97 + 3), "");
  EXPECT_EQ(dec.push(0xA5 + 3), "日");
  EXPECT_EQ(dec.pending_bytes(), 0u);
  EXPECT_EQ(dec.push(space), " ");  // later spaces are real
}

TEST(StreamingDecoderBytesTest, IncompleteAndInvalidBytesBecomeReplacementCharacters) {
  LLMS_LOAD_TOKENIZER_OR_SKIP(lt, "models/stories260K.gguf");
  StreamingDecoder dec(*lt.tok);
  EXPECT_EQ(dec.push(0xE6 + 3), "");
  EXPECT_EQ(dec.flush(), "\xEF\xBF\xBD");         // cut off at the end of the stream
  EXPECT_EQ(dec.push(0xFF + 3), "\xEF\xBF\xBD");  // can never start a character: at once
  EXPECT_EQ(dec.push(0xE6 + 3), "");
  // A character cut short by a byte that cannot continue it.
  EXPECT_EQ(dec.push('A' + 3),
            "\xEF\xBF\xBD"
            "A");
}

TEST(StreamingDecoderBytesTest, ContinuationKeepsTheFirstSpace) {
  LLMS_LOAD_TOKENIZER_OR_SKIP(lt, "models/stories260K.gguf");
  StreamingDecoder dec(*lt.tok);  // the default: tokens generated after a prompt
  EXPECT_EQ(dec.push(403), " Once");
  StreamingDecoder fresh(*lt.tok, StreamStart::kTextStart);
  EXPECT_EQ(fresh.push(403), "Once");
}

TEST(StreamingDecoderBytesTest, ControlTokensShowOnlyWhenAskedFor) {
  LLMS_LOAD_TOKENIZER_OR_SKIP(lt, "models/stories260K.gguf");
  StreamingDecoder plain(*lt.tok);
  EXPECT_EQ(plain.push(2), "");
  StreamingDecoder special(*lt.tok, StreamStart::kContinuation, /*render_special=*/true);
  EXPECT_EQ(special.push(2), "</s>");
}

}  // namespace
}  // namespace llms
