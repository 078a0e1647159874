// TokenVocabulary: what a grammar needs to know about a model's vocabulary — the
// bytes each token adds to the output, which tokens end generation, and a trie of the
// token byte strings so that tokens sharing a prefix are checked once.
//
// Bytes are those the model's decoder writes (Tokenizer::piece_view): byte-level BPE
// pieces decoded from their alphabet, SentencePiece pieces with U+2581 as a space and
// <0xNN> byte tokens as that byte. A token may end inside a UTF-8 character; the
// grammar matcher works on bytes and picks up where the token left off. Control
// tokens (no bytes) are never allowed by a grammar; end-of-generation tokens are
// allowed exactly where the grammar may end.
//
// Thread-safety: immutable after construction; shared between threads.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/hash.h"
#include "tokenizer/tokenizer.h"

namespace llms {

class TokenVocabulary {
 public:
  struct TrieNode {
    uint8_t byte = 0;          // the byte that leads here from the parent
    bool has_children = false; // first child, if any, is the next node
    int32_t next_sibling = -1;
    int32_t tokens_begin = 0;  // [tokens_begin, tokens_here_end): ranks of tokens ending here
    int32_t tokens_here_end = 0;
    int32_t tokens_end = 0;    // [tokens_begin, tokens_end): ranks of every token below
  };

  // `pieces[id]`: the bytes of token `id`; `eog`: the end-of-generation ids.
  TokenVocabulary(std::vector<std::string> pieces, std::vector<int32_t> eog);
  static TokenVocabulary from_tokenizer(const Tokenizer& tok);

  int32_t size() const { return static_cast<int32_t>(pieces_.size()); }
  std::string_view bytes(int32_t id) const { return pieces_[static_cast<size_t>(id)]; }
  bool is_eog(int32_t id) const { return eog_flags_[static_cast<size_t>(id)] != 0; }
  std::span<const int32_t> eog_ids() const { return eog_; }

  // Tokens with bytes, sorted by their bytes (unsigned); rank → id and id → rank
  // (-1 for tokens without bytes).
  int32_t id_at(int32_t rank) const { return by_rank_[static_cast<size_t>(rank)]; }
  int32_t rank_of(int32_t id) const { return rank_[static_cast<size_t>(id)]; }
  int32_t num_ranked() const { return static_cast<int32_t>(by_rank_.size()); }

  // Preorder; node 0 is the root (the empty prefix).
  const std::vector<TrieNode>& trie() const { return trie_; }

  // Identity of the vocabulary's bytes and end-of-generation set.
  const Hash128& hash() const { return hash_; }

 private:
  int32_t build_node(uint8_t byte, size_t depth, int32_t lo, int32_t hi);

  std::vector<std::string> pieces_;
  std::vector<int32_t> eog_;
  std::vector<uint8_t> eog_flags_;
  std::vector<int32_t> by_rank_;
  std::vector<int32_t> rank_;
  std::vector<TrieNode> trie_;
  Hash128 hash_;
};

}  // namespace llms
