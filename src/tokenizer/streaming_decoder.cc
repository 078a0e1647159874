#include "tokenizer/streaming_decoder.h"

#include "base/utf8.h"

namespace llms {

StreamingDecoder::StreamingDecoder(const Tokenizer& tok, const DecodeOptions& opts) : tok_(tok), opts_(opts) {}

std::string StreamingDecoder::push(int32_t id) {
  // decode() of one id applies the leading-space rule exactly as it would at the
  // start of the whole sequence, and nothing otherwise.
  DecodeOptions one = opts_;
  one.strip_leading_space = opts_.strip_leading_space && at_start_;
  const int32_t ids[1] = {id};
  const std::string piece = tok_.decode(ids, one);
  if (piece.empty()) return std::string();
  at_start_ = false;
  pending_ += piece;
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
