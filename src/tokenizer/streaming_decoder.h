// StreamingDecoder: turns a sequence's tokens into text as they are generated, one
// push() per token, returning only complete, valid UTF-8. Bytes of a character split
// across tokens (byte-fallback or byte-level pieces) are held back until the character
// is complete; bytes that can never become valid are written as U+FFFD at once.
//
// Concatenating every push() result and flush() gives exactly
// utf8_sanitize(tokenizer.decode(ids, {render_special, start == kTextStart})).
//
// Thread-safety: one decoder per sequence, used by one thread at a time; the
// Tokenizer it reads must outlive it.
#pragma once

#include <cstdint>
#include <string>

#include "tokenizer/tokenizer.h"

namespace llms {

// Where the first pushed token stands in the text.
enum class StreamStart {
  // The tokens continue a text (generated tokens after a prompt): every space in
  // them is real, including a leading one.
  kContinuation,
  // The tokens are a whole text from its start: decode()'s leading-space rule
  // applies (SentencePiece vocabularies drop the space the encoder prepended).
  kTextStart,
};

class StreamingDecoder {
 public:
  explicit StreamingDecoder(const Tokenizer& tok, StreamStart start = StreamStart::kContinuation,
                            bool render_special = false);

  // Text completed by `id`; often empty in the middle of a character.
  std::string push(int32_t id);
  // Whatever is still held back, with incomplete characters as U+FFFD. The decoder
  // can be reused afterwards as if new.
  std::string flush();

  // Bytes currently held back (0-3).
  size_t pending_bytes() const { return pending_.size(); }

 private:
  const Tokenizer& tok_;
  StreamStart start_;
  bool render_special_;
  bool at_start_ = true;
  std::string pending_;
};

}  // namespace llms
