#include "tokenizer/streaming_decoder.h"

#include "base/utf8.h"

namespace llms {

StreamingDecoder::StreamingDecoder(const Tokenizer& tok, const DecodeOptions& opts) : tok_(tok), opts_(opts) {}

std::string StreamingDecoder::push(int32_t id) {
  std::string_view piece = tok_.piece_view(id, opts_.render_special);
  if (piece.empty()) return std::string();
  // The leading-space rule of decode(): the first non-empty piece loses one space.
  if (at_start_ && opts_.strip_leading_space && tok_.strips_leading_space() && piece.front() == ' ') {
    piece.remove_prefix(1);
  }
  at_start_ = false;
  pending_.append(piece);
  // Everything up to an unfinished (still possibly valid) final sequence is settled:
  // sanitizing it now gives the same text as sanitizing the whole stream later.
  const size_t done = utf8_complete_prefix(pending_);
  std::string out = utf8_sanitize(std::string_view(pending_).substr(0, done));
  pending_.erase(0, done);
  return out;
}

std::string StreamingDecoder::flush() {
  std::string out = utf8_sanitize(pending_);
  pending_.clear();
  at_start_ = true;
  return out;
}

}  // namespace llms
