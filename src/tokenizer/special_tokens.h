// SpecialTokenMatcher: finds literal occurrences of special token texts (control and
// user-defined tokens such as "<|im_start|>") in input text, so that they become one
// token each instead of being spelled out by the encoder. Matching is leftmost, then
// longest, like the added-token matching of Hugging Face tokenizers.
//
// Thread-safety: immutable after the last add(); split() may run on many threads.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

namespace llms {

// A piece of input: either plain text to encode, or one special token.
struct TextFragment {
  std::string_view text;
  int32_t token = -1;  // >= 0: the fragment is this special token
};

class SpecialTokenMatcher {
 public:
  SpecialTokenMatcher();

  // Registers a token text; empty texts are ignored. A text added twice keeps the
  // first id.
  void add(std::string_view text, int32_t id);
  bool empty() const { return num_texts_ == 0; }

  // Appends the fragments of `text` in order; the text fragments are never empty.
  void split(std::string_view text, std::vector<TextFragment>* out) const;

 private:
  struct Node {
    std::vector<std::pair<uint8_t, int32_t>> children;  // sorted by byte
    int32_t token = -1;
  };
  int32_t child(int32_t node, uint8_t byte) const;
  // Length and id of the longest token text starting at text[pos], or {0, -1}.
  std::pair<size_t, int32_t> longest_at(std::string_view text, size_t pos) const;

  std::vector<Node> nodes_;
  std::array<bool, 256> first_byte_{};
  size_t num_texts_ = 0;
};

}  // namespace llms
