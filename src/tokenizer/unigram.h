// UnigramModel: the Unigram model of a tokenizer.json (SentencePiece's unigram
// language model, as Hugging Face's tokenizers runs it): the segmentation of a piece
// with the highest total log-probability (Viterbi over the vocabulary's pieces). A
// character no piece starts with costs the lowest score minus 10 and becomes the
// unknown token; consecutive unknown characters become one, which byte fallback then
// writes as <0xNN> tokens when the vocabulary has them all.
//
// Thread-safety: immutable after construction; encode() may run on many threads.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace llms {

class UnigramModel {
 public:
  // `vocab` (texts and scores) must outlive the model.
  UnigramModel(const Vocab& vocab, bool byte_fallback);

  // Appends the ids of one piece.
  void encode(std::string_view piece, std::vector<int32_t>* out) const;

 private:
  // Appends the ids of an unknown stretch: its <0xNN> tokens, or the unknown token.
  void emit_unknown(std::string_view text, std::vector<int32_t>* out) const;

  const Vocab& vocab_;
  bool byte_fallback_;
  float unk_score_ = 0.0f;
  size_t max_piece_bytes_ = 0;
};

}  // namespace llms
