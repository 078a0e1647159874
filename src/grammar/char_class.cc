#include "grammar/char_class.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <map>

namespace llms {
namespace {

constexpr char32_t kSurrogateLo = 0xD800;
constexpr char32_t kSurrogateHi = 0xDFFF;

// The code points of one UTF-8 length whose encodings are a product of byte ranges:
// byte i of every member lies in [lo[i], hi[i]] and every such byte string is a member.
struct ByteRect {
  int len = 0;
  std::array<uint8_t, 4> lo{};
  std::array<uint8_t, 4> hi{};
};

int encode(char32_t cp, uint8_t* out) {
  if (cp < 0x80) {
    out[0] = static_cast<uint8_t>(cp);
    return 1;
  }
  if (cp < 0x800) {
    out[0] = static_cast<uint8_t>(0xC0 | (cp >> 6));
    out[1] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = static_cast<uint8_t>(0xE0 | (cp >> 12));
    out[1] = static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F));
    out[2] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = static_cast<uint8_t>(0xF0 | (cp >> 18));
  out[1] = static_cast<uint8_t>(0x80 | ((cp >> 12) & 0x3F));
  out[2] = static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F));
  out[3] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
  return 4;
}

// Splits [lo, hi] until every piece is one ByteRect: first at the boundaries of the
// encoded lengths, then wherever the low bits of an end would make the product of
// byte ranges cover code points outside the range.
void split_range(char32_t lo, char32_t hi, std::vector<ByteRect>* out) {
  if (lo > hi) return;
  for (const char32_t limit : {char32_t{0x7F}, char32_t{0x7FF}, char32_t{0xFFFF}}) {
    if (lo <= limit && hi > limit) {
      split_range(lo, limit, out);
      split_range(limit + 1, hi, out);
      return;
    }
  }
  uint8_t a[4];
  const int len = encode(lo, a);
  for (int i = 1; i < len; ++i) {
    const char32_t low_bits = (char32_t{1} << (6 * i)) - 1;
    if ((lo & ~low_bits) == (hi & ~low_bits)) continue;
    if ((lo & low_bits) != 0) {
      split_range(lo, lo | low_bits, out);
      split_range((lo | low_bits) + 1, hi, out);
      return;
    }
    if ((hi & low_bits) != low_bits) {
      split_range(lo, (hi & ~low_bits) - 1, out);
      split_range(hi & ~low_bits, hi, out);
      return;
    }
  }
  uint8_t b[4];
  encode(hi, b);
  ByteRect r;
  r.len = len;
  for (int i = 0; i < len; ++i) {
    r.lo[i] = a[i];
    r.hi[i] = b[i];
  }
  out->push_back(r);
}

}  // namespace

int ByteSet::count() const {
  int n = 0;
  for (const uint64_t w : words) n += std::popcount(w);
  return n;
}

CodepointRanges normalize_ranges(CodepointRanges ranges) {
  CodepointRanges cut;
  for (auto [lo, hi] : ranges) {
    if (lo > hi) std::swap(lo, hi);
    hi = std::min(hi, kMaxCodepoint);
    if (lo > hi) continue;
    // Take the surrogates out.
    if (lo < kSurrogateLo && hi >= kSurrogateLo) {
      cut.emplace_back(lo, kSurrogateLo - 1);
      lo = kSurrogateHi + 1;
    } else if (lo >= kSurrogateLo && lo <= kSurrogateHi) {
      lo = kSurrogateHi + 1;
    }
    if (lo <= hi) cut.emplace_back(lo, hi);
  }
  std::sort(cut.begin(), cut.end());
  CodepointRanges merged;
  for (const auto& r : cut) {
    if (!merged.empty() && r.first <= merged.back().second + 1) {
      merged.back().second = std::max(merged.back().second, r.second);
    } else {
      merged.push_back(r);
    }
  }
  return merged;
}

CodepointRanges complement_ranges(const CodepointRanges& ranges) {
  CodepointRanges out;
  char32_t next = 0;
  for (const auto& [lo, hi] : ranges) {
    if (lo > next) out.emplace_back(next, lo - 1);
    next = hi + 1;
  }
  if (next <= kMaxCodepoint) out.emplace_back(next, kMaxCodepoint);
  return normalize_ranges(std::move(out));
}

CharClass::CharClass(CodepointRanges ranges) : ranges_(normalize_ranges(std::move(ranges))) {
  std::vector<ByteRect> rects;
  for (const auto& [lo, hi] : ranges_) split_range(lo, hi, &rects);
  // Subset construction. Every rectangle alive after a byte string has the same
  // length (the lead byte fixes it), so a state is the depth and the alive set.
  using Key = std::pair<int, std::vector<int>>;
  std::map<Key, int> ids;
  std::vector<Key> states;
  std::vector<int> all(rects.size());
  for (size_t i = 0; i < rects.size(); ++i) all[i] = static_cast<int>(i);
  states.push_back({0, all});
  ids[states[0]] = 0;
  for (size_t s = 0; s < states.size(); ++s) {
    next_.resize((s + 1) * 256, kReject);
    const int depth = states[s].first;
    for (int b = 0; b < 256; ++b) {
      std::vector<int> alive;
      bool complete = false;
      for (const int r : states[s].second) {
        if (b < rects[r].lo[depth] || b > rects[r].hi[depth]) continue;
        alive.push_back(r);
        complete = complete || rects[r].len == depth + 1;
      }
      if (alive.empty()) continue;
      if (complete) {
        next_[s * 256 + b] = kComplete;
        continue;
      }
      Key key{depth + 1, std::move(alive)};
      auto [it, inserted] = ids.try_emplace(key, static_cast<int>(states.size()));
      if (inserted) states.push_back(std::move(key));
      next_[s * 256 + b] = static_cast<int16_t>(std::min(it->second, kMaxStates));
    }
  }
  num_states_ = static_cast<int>(states.size());
}

std::string ranges_to_string(const CodepointRanges& ranges) {
  auto one = [](char32_t c) {
    if (c >= 0x21 && c < 0x7F && c != '-' && c != ']' && c != '\\' && c != '^') return std::string(1, static_cast<char>(c));
    if (c <= 0xFF) return fmt::format("\\x{:02X}", static_cast<uint32_t>(c));
    if (c <= 0xFFFF) return fmt::format("\\u{:04X}", static_cast<uint32_t>(c));
    return fmt::format("\\U{:08X}", static_cast<uint32_t>(c));
  };
  std::string out = "[";
  for (const auto& [lo, hi] : ranges) {
    out += one(lo);
    if (hi != lo) {
      out += '-';
      out += one(hi);
    }
  }
  out += ']';
  return out;
}

}  // namespace llms
