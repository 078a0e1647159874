#include "tokenizer/unigram.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "base/utf8.h"

namespace llms {

namespace {

// What tokenizers subtracts from the lowest score to price an unknown character.
constexpr float kUnkPenalty = 10.0f;

struct Best {
  double score = -std::numeric_limits<double>::infinity();
  size_t start = 0;
  int32_t id = -1;  // -1: the unknown token
  bool reached = false;
};

}  // namespace

UnigramModel::UnigramModel(const Vocab& vocab, bool byte_fallback) : vocab_(vocab), byte_fallback_(byte_fallback) {
  float min_score = std::numeric_limits<float>::max();
  for (const TokenData& t : vocab.tokens) {
    min_score = std::min(min_score, t.score);
    max_piece_bytes_ = std::max(max_piece_bytes_, t.text.size());
  }
  unk_score_ = vocab.tokens.empty() ? 0.0f : min_score - kUnkPenalty;
}

void UnigramModel::emit_unknown(std::string_view text, std::vector<int32_t>* out) const {
  if (byte_fallback_) {
    std::vector<int32_t> bytes;
    for (const char c : text) {
      const int32_t id = vocab_.find(fmt::format("<0x{:02X}>", static_cast<uint8_t>(c)));
      if (id < 0) break;
      bytes.push_back(id);
    }
    if (bytes.size() == text.size()) {
      out->insert(out->end(), bytes.begin(), bytes.end());
      return;
    }
  }
  if (vocab_.unk_id >= 0) out->push_back(vocab_.unk_id);
}

void UnigramModel::encode(std::string_view piece, std::vector<int32_t>* out) const {
  if (piece.empty()) return;
  std::vector<Best> best(piece.size() + 1);
  best[0].score = 0.0;
  best[0].reached = true;
  for (size_t start = 0; start < piece.size();) {
    size_t char_len = 0;
    (void)utf8_decode(piece, start, &char_len);
    if (best[start].reached) {
      bool single_char_piece = false;
      for (size_t len = char_len; len <= max_piece_bytes_ && start + len <= piece.size(); ++len) {
        const int32_t id = vocab_.find(piece.substr(start, len));
        if (id < 0) continue;
        const double s = best[start].score + vocab_.tokens[id].score;
        Best& b = best[start + len];
        if (!b.reached || s > b.score) b = Best{s, start, id, true};
        if (len == char_len) single_char_piece = true;
      }
      if (!single_char_piece) {
        const double s = best[start].score + unk_score_;
        Best& b = best[start + char_len];
        if (!b.reached || s > b.score) b = Best{s, start, -1, true};
      }
    }
    start += char_len;
  }
  // Walk back from the end, then emit in order, fusing unknown stretches.
  std::vector<std::pair<size_t, int32_t>> path;  // (start, id)
  for (size_t end = piece.size(); end > 0; end = best[end].start) path.emplace_back(best[end].start, best[end].id);
  std::reverse(path.begin(), path.end());
  for (size_t i = 0; i < path.size();) {
    if (path[i].second >= 0) {
      out->push_back(path[i++].second);
      continue;
    }
    size_t j = i;
    while (j < path.size() && path[j].second < 0) ++j;
    const size_t end = j < path.size() ? path[j].first : piece.size();
    emit_unknown(piece.substr(path[i].first, end - path[i].first), out);
    i = j;
  }
}

}  // namespace llms
