// StreamingDecoder: turns a sequence's tokens into text as they are generated, one
// push() per token, returning only complete, valid UTF-8. Bytes of a character split
// across tokens (byte-fallback or byte-level pieces) are held back until the character
// is complete; bytes that can never become valid are written as U+FFFD at once.
//
// Concatenating every push() result and flush() gives exactly
// utf8_sanitize(tokenizer.decode(all ids)) for the same DecodeOptions.
//
// Thread-safety: one decoder per sequence, used by one thread at a time; the
// Tokenizer it reads must outlive it.
#pragma once

#include <cstdint>
#include <string>

#include "tokenizer/tokenizer.h"

namespace llms {

class StreamingDecoder {
 public:
  // DecodeOptions::strip_leading_space applies to the first text this decoder emits:
  // keep it true when the decoder sees a whole text from its start, and pass false
  // when it continues a text (generated tokens after a prompt), whose first piece's
  // space is real.
  explicit StreamingDecoder(const Tokenizer& tok, const DecodeOptions& opts = {});

  // Text completed by `id`; often empty in the middle of a character.
  std::string push(int32_t id);
  // Whatever is still held back, with incomplete characters as U+FFFD. The decoder
  // can be reused afterwards as if new.
  std::string flush();

  // Bytes currently held back (0-3).
  size_t pending_bytes() const { return pending_.size(); }

 private:
  const Tokenizer& tok_;
  DecodeOptions opts_;
  bool at_start_ = true;
  std::string pending_;
};

}  // namespace llms
