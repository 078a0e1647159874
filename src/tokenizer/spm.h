// SpmModel: SentencePiece BPE as LLaMA-family GGUF files describe it. The input
// (spaces already written as U+2581 '▁') starts as one symbol per UTF-8 character;
// the adjacent pair whose concatenation is a vocabulary piece with the highest score
// is merged (leftmost first among equal scores) until no pair is a piece. A symbol
// that is not a piece is written as its bytes through the <0xNN> byte-fallback
// tokens (or the unknown token when the vocabulary has none).
//
// Thread-safety: immutable after build(); encode() may run on many threads at once.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace llms {

class SpmModel {
 public:
  // `vocab` must outlive the model (pieces are looked up in its map).
  explicit SpmModel(const Vocab& vocab);

  // Appends the ids of `escaped` (a text fragment with ' ' already replaced by '▁').
  // `allow_word_split` = false runs the merge loop over the whole fragment (tests
  // compare the two).
  void encode(std::string_view escaped, std::vector<int32_t>* out, bool allow_word_split = true) const;

  // True when no piece that merges can produce contains '▁' right after another
  // character than '▁'. Then no merge ever crosses the start of a word ('▁' after a
  // non-space), so words can be encoded one by one, and a word seen before in the
  // same call reuses its ids. Holds for LLaMA-style vocabularies; computed at load.
  bool splits_at_words() const { return split_at_words_; }

  // The token that stands for raw byte `b`: <0xNN>, else the one-byte piece, else unk.
  int32_t byte_token(uint8_t b) const { return byte_token_[b]; }

 private:
  // A symbol's history: a leaf is one character, an inner node the merge of two.
  struct Node {
    uint32_t start;
    uint32_t len;
    int32_t id;  // merged piece; -1 for a leaf
    int32_t left;
    int32_t right;
  };
  // Id of a piece that merges may produce, or -1.
  int32_t mergeable_piece(std::string_view text) const;
  // The merge loop over one run of characters.
  void encode_run(std::string_view text, std::vector<int32_t>* out) const;
  // Appends the ids of `node`: its piece, or for an unused piece (which SentencePiece
  // never emits) the ids of its two halves, or for a leaf that is no piece its bytes.
  void emit(std::string_view escaped, const std::vector<Node>& nodes, int32_t node, std::vector<int32_t>* out) const;

  const Vocab& vocab_;
  std::array<int32_t, 256> byte_token_{};
  size_t max_piece_bytes_ = 0;
  bool split_at_words_ = true;
};

}  // namespace llms
