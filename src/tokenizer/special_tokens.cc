#include "tokenizer/special_tokens.h"

#include <algorithm>

namespace llms {

SpecialTokenMatcher::SpecialTokenMatcher() : nodes_(1) {}

int32_t SpecialTokenMatcher::child(int32_t node, uint8_t byte) const {
  const auto& c = nodes_[node].children;
  const auto it = std::lower_bound(c.begin(), c.end(), std::make_pair(byte, INT32_MIN));
  return (it != c.end() && it->first == byte) ? it->second : -1;
}

void SpecialTokenMatcher::add(std::string_view text, int32_t id) {
  if (text.empty()) return;
  int32_t node = 0;
  for (const char ch : text) {
    const auto b = static_cast<uint8_t>(ch);
    int32_t next = child(node, b);
    if (next < 0) {
      next = static_cast<int32_t>(nodes_.size());
      nodes_.emplace_back();
      auto& c = nodes_[node].children;
      c.insert(std::lower_bound(c.begin(), c.end(), std::make_pair(b, INT32_MIN)), {b, next});
    }
    node = next;
  }
  if (nodes_[node].token < 0) {
    nodes_[node].token = id;
    ++num_texts_;
  }
  first_byte_[static_cast<uint8_t>(text[0])] = true;
}

std::pair<size_t, int32_t> SpecialTokenMatcher::longest_at(std::string_view text, size_t pos) const {
  std::pair<size_t, int32_t> best{0, -1};
  int32_t node = 0;
  for (size_t i = pos; i < text.size(); ++i) {
    node = child(node, static_cast<uint8_t>(text[i]));
    if (node < 0) break;
    if (nodes_[node].token >= 0) best = {i + 1 - pos, nodes_[node].token};
  }
  return best;
}

void SpecialTokenMatcher::split(std::string_view text, std::vector<TextFragment>* out) const {
  size_t plain_start = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    if (!first_byte_[static_cast<uint8_t>(text[pos])]) {
      ++pos;
      continue;
    }
    const auto [len, id] = longest_at(text, pos);
    if (len == 0) {
      ++pos;
      continue;
    }
    if (pos > plain_start) out->push_back(TextFragment{text.substr(plain_start, pos - plain_start), -1});
    out->push_back(TextFragment{text.substr(pos, len), id});
    pos += len;
    plain_start = pos;
  }
  if (plain_start < text.size()) out->push_back(TextFragment{text.substr(plain_start), -1});
}

}  // namespace llms
