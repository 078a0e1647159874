#include "grammar/token_vocabulary.h"

#include <algorithm>

namespace llms {

TokenVocabulary::TokenVocabulary(std::vector<std::string> pieces, std::vector<int32_t> eog)
    : pieces_(std::move(pieces)), eog_flags_(pieces_.size(), 0), rank_(pieces_.size(), -1) {
  for (const int32_t id : eog) {
    if (id < 0 || id >= size() || eog_flags_[static_cast<size_t>(id)]) continue;
    eog_flags_[static_cast<size_t>(id)] = 1;
    eog_.push_back(id);
  }
  std::sort(eog_.begin(), eog_.end());
  for (int32_t id = 0; id < size(); ++id) {
    if (!is_eog(id) && !pieces_[static_cast<size_t>(id)].empty()) by_rank_.push_back(id);
  }
  // std::string compares with char_traits<char>, which orders bytes as unsigned.
  std::stable_sort(by_rank_.begin(), by_rank_.end(),
                   [&](int32_t a, int32_t b) { return pieces_[static_cast<size_t>(a)] < pieces_[static_cast<size_t>(b)]; });
  for (size_t r = 0; r < by_rank_.size(); ++r) rank_[static_cast<size_t>(by_rank_[r])] = static_cast<int32_t>(r);
  build_node(0, 0, 0, num_ranked());

  HashBuilder h;
  h.add_pod(pieces_.size());
  for (const std::string& p : pieces_) h.add(p);
  h.add_span(std::span<const int32_t>(eog_));
  hash_ = h.finish128();
}

// The node for the prefix shared by ranks [lo, hi) at `depth` bytes; its children
// group the longer tokens by their next byte.
int32_t TokenVocabulary::build_node(uint8_t byte, size_t depth, int32_t lo, int32_t hi) {
  const auto index = static_cast<int32_t>(trie_.size());
  trie_.push_back(TrieNode{byte, false, -1, lo, lo, hi});
  int32_t i = lo;
  while (i < hi && bytes(id_at(i)).size() == depth) ++i;
  trie_[static_cast<size_t>(index)].tokens_here_end = i;
  int32_t prev_child = -1;
  while (i < hi) {
    const auto b = static_cast<uint8_t>(bytes(id_at(i))[depth]);
    int32_t j = i;
    while (j < hi && static_cast<uint8_t>(bytes(id_at(j))[depth]) == b) ++j;
    const int32_t child = build_node(b, depth + 1, i, j);
    if (prev_child < 0) {
      trie_[static_cast<size_t>(index)].has_children = true;
    } else {
      trie_[static_cast<size_t>(prev_child)].next_sibling = child;
    }
    prev_child = child;
    i = j;
  }
  return index;
}

TokenVocabulary TokenVocabulary::from_tokenizer(const Tokenizer& tok) {
  std::vector<std::string> pieces(static_cast<size_t>(tok.vocab_size()));
  std::vector<int32_t> eog;
  for (int32_t id = 0; id < tok.vocab_size(); ++id) {
    if (tok.is_end_of_generation(id)) {
      eog.push_back(id);
    } else {
      pieces[static_cast<size_t>(id)] = std::string(tok.piece_view(id));
    }
  }
  return TokenVocabulary(std::move(pieces), std::move(eog));
}

}  // namespace llms
