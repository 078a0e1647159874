#include "tokenizer/streaming_decoder.h"

#include "base/utf8.h"

namespace llms {

StreamingDecoder::StreamingDecoder(const Tokenizer& tok, StreamStart start, bool render_special)
    : tok_(tok), start_(start), render_special_(render_special) {}

std::string StreamingDecoder::push(int32_t id) {
  std::string_view piece = tok_.piece_view(id, render_special_);
  if (piece.empty()) return std::string();
  // decode()'s leading-space rule: the first non-empty piece of a text loses one space.
  if (at_start_ && start_ == StreamStart::kTextStart && tok_.strips_leading_space() && piece.front() == ' ') {
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
