// libFuzzer target for the tokenizers: random bytes through every shared vocabulary
// (SentencePiece llama, byte-level BPE gpt-2 and deepseek-coder, stories260K).
// Input: one flag byte (bit 0 add_bos, bit 1 parse_special, bit 2 render_special),
// then the text. Properties, beyond "no crash, no sanitizer report":
//   * every id is in the vocabulary;
//   * streaming detokenization gives valid UTF-8, equal to the sanitized decode();
//   * without parse_special, decode(encode(x)) == x (the exceptions are those the
//     tokenizer documents: SentencePiece spells U+2581 as a space; DeepSeek-Coder has
//     no byte tokens for C0, C1, F5-FF).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/utf8.h"
#include "fuzz_util.h"
#include "tokenizer/streaming_decoder.h"

namespace llms::fuzz {
namespace {

bool round_trips(const LoadedVocab& v, std::string_view text) {
  if (v.name.find("deepseek") == std::string::npos) return true;
  for (unsigned char b : text) {
    if (b == 0xC0 || b == 0xC1 || b >= 0xF5) return false;
  }
  return true;
}

// What decode(encode(text)) must give: SentencePiece turns its space marker into a space.
std::string expected_text(const LoadedVocab& v, std::string_view text) {
  std::string out(text);
  if (v.tok->model() != VocabModel::kSpm) return out;
  const std::string marker = "\xE2\x96\x81";
  for (size_t pos = 0; (pos = out.find(marker, pos)) != std::string::npos;) out.replace(pos, marker.size(), " ");
  return out;
}

void check(const LoadedVocab& v, std::string_view text, uint8_t flags) {
  const Tokenizer& tok = *v.tok;
  EncodeOptions enc;
  enc.add_bos = (flags & 1) != 0;
  enc.parse_special = (flags & 2) != 0;
  const bool render_special = (flags & 4) != 0;
  const auto ids = tok.encode(text, enc);
  for (const int32_t id : ids) {
    if (!tok.is_valid_id(id)) fail(v.name + ": encode gave an id outside the vocabulary");
  }
  StreamingDecoder dec(tok, StreamStart::kTextStart, render_special);
  std::string streamed;
  for (const int32_t id : ids) streamed += dec.push(id);
  streamed += dec.flush();
  if (!is_valid_utf8(streamed)) fail(v.name + ": the streaming decoder gave invalid UTF-8");
  DecodeOptions dopts;
  dopts.render_special = render_special;
  if (streamed != utf8_sanitize(tok.decode(ids, dopts))) fail(v.name + ": streamed text differs from decode()");
  if (!enc.parse_special && round_trips(v, text) && tok.decode(ids) != expected_text(v, text)) {
    fail(v.name + ": decode(encode(x)) != x");
  }
}

}  // namespace
}  // namespace llms::fuzz

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  llms::fuzz::shared_vocabs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  for (const auto& v : llms::fuzz::shared_vocabs()) llms::fuzz::check(v, text, data[0]);
  return 0;
}
