// Terminal sets of the grammar: ByteSet (a set of bytes, one byte consumed) and
// CharClass (a set of Unicode code points, one UTF-8 encoded code point consumed).
//
// A CharClass is matched byte by byte through a small DFA over its UTF-8 encodings,
// so that a token may end in the middle of a character: the matcher then sits in one
// of the DFA's inner states until the next token brings the continuation bytes. Only
// well-formed UTF-8 is accepted (no overlongs, no surrogates, nothing past U+10FFFF).
//
// Thread-safety: plain values, immutable once built.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace llms {

struct ByteSet {
  std::array<uint64_t, 4> words{};

  void set(uint8_t b) { words[b >> 6] |= uint64_t{1} << (b & 63); }
  void set_range(uint8_t lo, uint8_t hi) {
    for (int b = lo; b <= hi; ++b) set(static_cast<uint8_t>(b));
  }
  bool has(uint8_t b) const { return (words[b >> 6] >> (b & 63)) & 1; }
  bool empty() const { return (words[0] | words[1] | words[2] | words[3]) == 0; }
  int count() const;
  friend bool operator==(const ByteSet&, const ByteSet&) = default;
};

// Sorted, disjoint, non-adjacent inclusive ranges of code points.
using CodepointRanges = std::vector<std::pair<char32_t, char32_t>>;

inline constexpr char32_t kMaxCodepoint = 0x10FFFF;

// Sorts, merges overlapping and adjacent ranges, and drops the surrogates
// (U+D800..U+DFFF), which UTF-8 cannot encode.
CodepointRanges normalize_ranges(CodepointRanges ranges);
// Every code point not in `ranges` (which must be normalized), surrogates excluded.
CodepointRanges complement_ranges(const CodepointRanges& ranges);

// The UTF-8 DFA of a code point set. State 0 is the start; next(s, b) is another
// state, kComplete (the code point is complete) or kReject.
class CharClass {
 public:
  static constexpr int16_t kReject = -1;
  static constexpr int16_t kComplete = -2;
  // The most states a class may have (states are packed into 8 bits by the matcher).
  static constexpr int kMaxStates = 256;

  explicit CharClass(CodepointRanges ranges);

  int16_t next(int state, uint8_t byte) const { return next_[static_cast<size_t>(state) * 256 + byte]; }
  int num_states() const { return num_states_; }
  const CodepointRanges& ranges() const { return ranges_; }
  bool empty() const { return ranges_.empty(); }

 private:
  CodepointRanges ranges_;
  std::vector<int16_t> next_;  // [num_states_ * 256]
  int num_states_ = 0;
};

// "[a-z\u00e9]" style text of a range list, for error messages and printing.
std::string ranges_to_string(const CodepointRanges& ranges);

}  // namespace llms
