#include "tokenizer/spm.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/utf8.h"
#include "tokenizer/piece_memo.h"

namespace llms {

namespace {

constexpr std::string_view kSpace = "\xE2\x96\x81";  // U+2581 '▁'

struct Symbol {
  int32_t prev;
  int32_t next;
  uint32_t start;
  uint32_t len;  // 0 once merged into its left neighbour
  int32_t node;
};

struct Bigram {
  float score;
  int32_t left;
  int32_t right;
  uint32_t len;
  int32_t id;
};

// Max-heap order: higher score first, then the leftmost pair.
struct BigramLess {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

bool is_mergeable_type(TokenType t) {
  return t == TokenType::kNormal || t == TokenType::kUserDefined || t == TokenType::kUnused ||
         t == TokenType::kUndefined;
}

// True when `text` has '▁' at a position other than the start that follows another character.
bool has_inner_word_start(std::string_view text) {
  for (size_t pos = text.find(kSpace, 1); pos != std::string_view::npos; pos = text.find(kSpace, pos + 1)) {
    if (pos < 3 || text.substr(pos - 3, 3) != kSpace) return true;
  }
  return false;
}

}  // namespace

SpmModel::SpmModel(const Vocab& vocab) : vocab_(vocab) {
  for (const auto& t : vocab.tokens) {
    max_piece_bytes_ = std::max(max_piece_bytes_, t.text.size());
    if (is_mergeable_type(t.type) && t.text.size() > 3 && has_inner_word_start(t.text)) split_at_words_ = false;
  }
  for (int b = 0; b < 256; ++b) {
    int32_t id = vocab.find(fmt::format("<0x{:02X}>", b));
    if (id < 0) id = vocab.find(std::string(1, static_cast<char>(b)));
    byte_token_[b] = id >= 0 ? id : vocab.unk_id;
  }
}

int32_t SpmModel::mergeable_piece(std::string_view text) const {
  if (text.size() > max_piece_bytes_) return -1;
  const int32_t id = vocab_.find(text);
  return id >= 0 && is_mergeable_type(vocab_.tokens[id].type) ? id : -1;
}

void SpmModel::emit(std::string_view escaped, const std::vector<Node>& nodes, int32_t node,
                    std::vector<int32_t>* out) const {
  const Node& n = nodes[node];
  if (n.id >= 0) {
    if (vocab_.tokens[n.id].type != TokenType::kUnused) {
      out->push_back(n.id);
      return;
    }
    emit(escaped, nodes, n.left, out);
    emit(escaped, nodes, n.right, out);
    return;
  }
  const std::string_view text = escaped.substr(n.start, n.len);
  const int32_t id = vocab_.find(text);
  if (id >= 0 && vocab_.tokens[id].type != TokenType::kUnused && vocab_.tokens[id].type != TokenType::kControl &&
      vocab_.tokens[id].type != TokenType::kUnknown) {
    out->push_back(id);
    return;
  }
  for (const char c : text) {
    const int32_t b = byte_token_[static_cast<uint8_t>(c)];
    if (b >= 0) out->push_back(b);
  }
}

void SpmModel::encode(std::string_view escaped, std::vector<int32_t>* out, bool allow_word_split) const {
  if (!split_at_words_ || !allow_word_split) {
    encode_run(escaped, out);
    return;
  }
  PieceMemo memo;
  const auto encode_word = [&](std::string_view word) {
    memo.append(word, out, [&](std::string_view w, std::vector<int32_t>* o) { encode_run(w, o); });
  };
  size_t start = 0;
  for (size_t pos = escaped.find(kSpace, 1); pos != std::string_view::npos; pos = escaped.find(kSpace, pos + 3)) {
    if (pos >= 3 && escaped.substr(pos - 3, 3) == kSpace) continue;  // a run of spaces stays together
    encode_word(escaped.substr(start, pos - start));
    start = pos;
  }
  encode_word(escaped.substr(start));
}

void SpmModel::encode_run(std::string_view escaped, std::vector<int32_t>* out) const {
  if (escaped.empty()) return;
  std::vector<Symbol> symbols;
  std::vector<Node> nodes;
  symbols.reserve(escaped.size());
  nodes.reserve(escaped.size() * 2);
  for (size_t pos = 0; pos < escaped.size();) {
    size_t n = 0;
    (void)utf8_decode(escaped, pos, &n);  // invalid bytes become one-byte symbols
    const auto i = static_cast<int32_t>(symbols.size());
    symbols.push_back(Symbol{i - 1, -1, static_cast<uint32_t>(pos), static_cast<uint32_t>(n), i});
    nodes.push_back(Node{static_cast<uint32_t>(pos), static_cast<uint32_t>(n), -1, -1, -1});
    pos += n;
  }
  for (size_t i = 0; i + 1 < symbols.size(); ++i) symbols[i].next = static_cast<int32_t>(i + 1);

  std::vector<Bigram> heap;
  const auto try_add = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const uint32_t len = symbols[left].len + symbols[right].len;
    const int32_t id = mergeable_piece(escaped.substr(symbols[left].start, len));
    if (id < 0) return;
    heap.push_back(Bigram{vocab_.tokens[id].score, left, right, len, id});
    std::push_heap(heap.begin(), heap.end(), BigramLess());
  };
  for (size_t i = 1; i < symbols.size(); ++i) try_add(static_cast<int32_t>(i - 1), static_cast<int32_t>(i));

  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), BigramLess());
    const Bigram b = heap.back();
    heap.pop_back();
    Symbol& l = symbols[b.left];
    Symbol& r = symbols[b.right];
    if (l.len == 0 || r.len == 0 || l.len + r.len != b.len) continue;  // outdated
    nodes.push_back(Node{l.start, b.len, b.id, l.node, r.node});
    l.node = static_cast<int32_t>(nodes.size() - 1);
    l.len = b.len;
    r.len = 0;
    l.next = r.next;
    if (r.next >= 0) symbols[r.next].prev = b.left;
    try_add(l.prev, b.left);
    try_add(b.left, l.next);
  }
  for (int32_t i = 0; i >= 0; i = symbols[i].next) emit(escaped, nodes, symbols[i].node, out);
}

}  // namespace llms
