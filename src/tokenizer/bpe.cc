#include "tokenizer/bpe.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <functional>

#include "base/log.h"
#include "base/utf8.h"
#include "tokenizer/byte_level.h"

namespace llms {

namespace {

uint64_t pair_key(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

uint64_t mix(uint64_t k) {
  k ^= k >> 31;
  k *= 0x9E3779B97F4A7C15ull;
  return k ^ (k >> 29);
}

// The token for the alphabet character of byte `b`: a normal token when there is one;
// otherwise any non-control token with that text (some vocabularies add the bytes that
// never occur in UTF-8 as user-defined tokens).
int32_t find_byte_token(const Vocab& vocab, uint8_t b) {
  std::string text;
  utf8_append(text, byte_to_code_point(b));
  int32_t fallback = -1;
  const int32_t last = vocab.find(text);
  if (last < 0) return -1;
  if (vocab.tokens[last].type == TokenType::kNormal) return last;
  // The map keeps the last id of a duplicated text; look for an earlier normal one.
  for (int32_t id = 0; id < vocab.size(); ++id) {
    if (vocab.tokens[id].text != text) continue;
    if (vocab.tokens[id].type == TokenType::kNormal) return id;
    if (vocab.tokens[id].type != TokenType::kControl && fallback < 0) fallback = id;
  }
  return fallback;
}

bool mergeable_result(const Vocab& vocab, int32_t id) {
  const TokenType t = vocab.tokens[id].type;
  return t != TokenType::kControl && t != TokenType::kUnknown;
}

}  // namespace

Result<BpeModel> BpeModel::build(const Vocab& vocab, bool ignore_merges) {
  BpeOptions opts;
  opts.ignore_merges = ignore_merges;
  return build(vocab, opts);
}

Status BpeModel::add_merges(const Vocab& vocab) {
  size_t cap = 16;
  while (cap < vocab.merges.size() * 2) cap <<= 1;
  keys_.assign(cap, kEmptyKey);
  values_.resize(cap);
  mask_ = cap - 1;
  const size_t prefix_len = opts_.continuing_subword_prefix.size();
  int skipped = 0;
  for (size_t i = 0; i < vocab.merges.size(); ++i) {
    const std::string_view line = vocab.merges[i];
    const size_t sp = line.find(' ', 1);
    if (sp == std::string::npos) {
      return data_loss(
          fmt::format("{}[{}] = '{}' is not two tokens separated by a space", opts_.merges_name, i, line));
    }
    const std::string_view left_text = line.substr(0, sp);
    const std::string_view right_text = line.substr(sp + 1);
    const int32_t left = vocab.find(left_text);
    const int32_t right = vocab.find(right_text);
    // With a subword prefix the merged token drops the right side's prefix ("##").
    const std::string merged =
        std::string(left_text) + std::string(right_text.substr(std::min(prefix_len, right_text.size())));
    const int32_t result = vocab.find(merged);
    if (left < 0 || right < 0 || result < 0 || (!opts_.strict_merges && !mergeable_result(vocab, result))) {
      if (opts_.strict_merges) {
        return invalid_argument(fmt::format("{}[{}] = '{}': '{}' is not a token", opts_.merges_name, i, line,
                                            left < 0 ? left_text : right < 0 ? right_text : std::string_view(merged)));
      }
      ++skipped;
      continue;
    }
    if (find_merge(left, right) == nullptr) {  // the first (lowest) rank of a pair wins
      insert_merge(left, right, Merge{static_cast<int32_t>(i), result});
      ++num_merges_;
    }
  }
  if (skipped > 0) log_debug("skipped {} merges whose texts are not tokens", skipped);
  return ok_status();
}

Result<BpeModel> BpeModel::build(const Vocab& vocab, const BpeOptions& opts) {
  BpeModel m;
  m.opts_ = opts;
  m.unk_id_ = vocab.unk_id;
  int missing_bytes = 0;
  for (int b = 0; b < 256; ++b) {
    m.byte_token_[b] = opts.byte_level ? find_byte_token(vocab, static_cast<uint8_t>(b)) : -1;
    if (m.byte_token_[b] < 0) ++missing_bytes;
    m.byte_fallback_[b] = opts.byte_fallback ? vocab.find(fmt::format("<0x{:02X}>", b)) : -1;
  }
  if (opts.byte_level && missing_bytes > 0) {
    log_debug("byte-level vocabulary lacks {} of the 256 byte tokens", missing_bytes);
  }
  if (!opts.byte_level) m.vocab_ = &vocab;
  LLMS_RETURN_IF_ERROR(m.add_merges(vocab));
  if (opts.ignore_merges) {
    for (int32_t id = 0; id < vocab.size(); ++id) {
      if (vocab.tokens[id].type != TokenType::kNormal) continue;
      if (!opts.byte_level) {
        m.raw_to_id_.emplace(vocab.tokens[id].text, id);
        continue;
      }
      std::string raw;
      if (byte_level_decode(vocab.tokens[id].text, &raw)) m.raw_to_id_.emplace(std::move(raw), id);
    }
  }
  return m;
}

const BpeModel::Merge* BpeModel::find_merge(int32_t left, int32_t right) const {
  const uint64_t key = pair_key(left, right);
  for (uint64_t slot = mix(key) & mask_;; slot = (slot + 1) & mask_) {
    if (keys_[slot] == key) return &values_[slot];
    if (keys_[slot] == kEmptyKey) return nullptr;
  }
}

void BpeModel::insert_merge(int32_t left, int32_t right, Merge m) {
  const uint64_t key = pair_key(left, right);
  uint64_t slot = mix(key) & mask_;
  while (keys_[slot] != kEmptyKey) slot = (slot + 1) & mask_;
  keys_[slot] = key;
  values_[slot] = m;
}

void BpeModel::update_pair(BpeScratch& s, int32_t i) const {
  const int32_t j = s.next[i];
  s.rank[i] = INT32_MAX;
  if (j < 0 || s.ids[i] < 0 || s.ids[j] < 0) return;
  const Merge* m = find_merge(s.ids[i], s.ids[j]);
  if (m == nullptr) return;
  s.rank[i] = m->rank;
  s.result[i] = m->result;
}

void BpeModel::merge_at(BpeScratch& s, int32_t i) const {
  const int32_t j = s.next[i];
  s.ids[i] = s.result[i];
  s.next[i] = s.next[j];
  if (s.next[j] >= 0) s.prev[s.next[j]] = i;
  s.rank[j] = INT32_MAX;  // j is gone; stale heap entries for it never match again
  update_pair(s, i);
  if (s.prev[i] >= 0) update_pair(s, s.prev[i]);
}

void BpeModel::merge_by_scan(BpeScratch& s) const {
  for (;;) {
    int32_t best = INT32_MAX;
    int32_t at = -1;
    for (int32_t i = 0; i >= 0; i = s.next[i]) {
      if (s.rank[i] < best) {
        best = s.rank[i];
        at = i;
      }
    }
    if (at < 0) return;
    merge_at(s, at);
  }
}

void BpeModel::merge_by_heap(size_t n, BpeScratch& s) const {
  auto& heap = s.heap;
  heap.clear();
  const auto push = [&](int32_t i) {
    if (s.rank[i] == INT32_MAX) return;
    heap.push_back((static_cast<uint64_t>(s.rank[i]) << 32) | static_cast<uint32_t>(i));
    std::push_heap(heap.begin(), heap.end(), std::greater<>());
  };
  for (size_t i = 0; i < n; ++i) push(static_cast<int32_t>(i));
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), std::greater<>());
    const uint64_t top = heap.back();
    heap.pop_back();
    const auto i = static_cast<int32_t>(top & 0xFFFFFFFFu);
    // Ranks identify merge pairs uniquely, so an entry whose rank is still the rank of
    // the pair at i describes that same pair and is current.
    if (s.rank[i] != static_cast<int32_t>(top >> 32)) continue;
    merge_at(s, i);
    push(i);
    if (s.prev[i] >= 0) push(s.prev[i]);
  }
}

size_t BpeModel::byte_symbols(std::string_view piece, BpeScratch& s) const {
  s.ids.resize(piece.size());
  for (size_t i = 0; i < piece.size(); ++i) s.ids[i] = byte_token_[static_cast<uint8_t>(piece[i])];
  return piece.size();
}

size_t BpeModel::char_symbols(std::string_view piece, BpeScratch& s) const {
  s.ids.clear();
  bool pending_unk = false;
  const auto flush_unk = [&] {
    if (pending_unk) s.ids.push_back(unk_id_);
    pending_unk = false;
  };
  const bool decorate = !opts_.continuing_subword_prefix.empty() || !opts_.end_of_word_suffix.empty();
  std::string text;
  for (size_t pos = 0; pos < piece.size();) {
    size_t n = 0;
    (void)utf8_decode(piece, pos, &n);  // an invalid byte is a one-byte character
    std::string_view ch = piece.substr(pos, n);
    if (decorate) {
      text.assign(pos == 0 ? "" : opts_.continuing_subword_prefix);
      text.append(ch);
      if (pos + n == piece.size()) text.append(opts_.end_of_word_suffix);
      ch = text;
    }
    pos += n;
    const int32_t id = vocab_->find(ch);
    if (id >= 0) {
      flush_unk();
      s.ids.push_back(id);
      continue;
    }
    const bool all_bytes = opts_.byte_fallback && std::all_of(ch.begin(), ch.end(), [&](char c) {
                             return byte_fallback_[static_cast<uint8_t>(c)] >= 0;
                           });
    if (all_bytes) {
      flush_unk();
      for (const char c : ch) s.ids.push_back(byte_fallback_[static_cast<uint8_t>(c)]);
      continue;
    }
    if (unk_id_ < 0) continue;  // no unknown token: the character is dropped, as Hugging Face's BPE does
    if (!opts_.fuse_unk) flush_unk();
    pending_unk = true;
  }
  flush_unk();
  return s.ids.size();
}

void BpeModel::encode_piece(std::string_view piece, std::vector<int32_t>* out, BpeScratch& s, MergeLoop loop) const {
  if (piece.empty()) return;
  if (opts_.ignore_merges) {
    const auto it = raw_to_id_.find(piece);
    if (it != raw_to_id_.end()) {
      out->push_back(it->second);
      return;
    }
  }
  const size_t n = opts_.byte_level ? byte_symbols(piece, s) : char_symbols(piece, s);
  if (n == 0) return;
  s.prev.resize(n);
  s.next.resize(n);
  s.rank.resize(n);
  s.result.resize(n);
  for (size_t i = 0; i < n; ++i) {
    s.prev[i] = static_cast<int32_t>(i) - 1;
    s.next[i] = i + 1 < n ? static_cast<int32_t>(i + 1) : -1;
  }
  for (size_t i = 0; i < n; ++i) update_pair(s, static_cast<int32_t>(i));
  const bool scan = loop == MergeLoop::kScan || (loop == MergeLoop::kAuto && n < kHeapThreshold);
  if (scan) {
    merge_by_scan(s);
  } else {
    merge_by_heap(n, s);
  }
  for (int32_t i = 0; i >= 0; i = s.next[i]) {
    // A byte without a token (a vocabulary missing part of the alphabet) becomes the
    // unknown token, or is dropped when there is none.
    const int32_t id = s.ids[i] >= 0 ? s.ids[i] : unk_id_;
    if (id >= 0) out->push_back(id);
  }
}

}  // namespace llms
