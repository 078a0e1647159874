#include "grammar/grammar.h"

#include <fmt/format.h>

namespace llms {
namespace {

std::string byte_text(const ByteSet& set) {
  if (set.count() == 1) {
    for (int b = 0; b < 256; ++b) {
      if (!set.has(static_cast<uint8_t>(b))) continue;
      if (b >= 0x20 && b < 0x7F && b != '"' && b != '\\') return fmt::format("\"{}\"", static_cast<char>(b));
      return fmt::format("\"\\x{:02X}\"", b);
    }
  }
  CodepointRanges ranges;
  for (int b = 0; b < 256; ++b) {
    if (!set.has(static_cast<uint8_t>(b))) continue;
    if (!ranges.empty() && ranges.back().second + 1 == static_cast<char32_t>(b)) {
      ranges.back().second = static_cast<char32_t>(b);
    } else {
      ranges.emplace_back(b, b);
    }
  }
  return ranges_to_string(ranges);
}

}  // namespace

std::vector<int32_t> Grammar::terminal_points() const {
  std::vector<int32_t> points;
  for (int32_t i = 0; i < num_elements(); ++i) {
    const Element& e = elements_[static_cast<size_t>(i)];
    if (e.kind == ElementKind::kBytes) {
      points.push_back(make_point(i, 0));
    } else if (e.kind == ElementKind::kChars) {
      for (int s = 0; s < char_class(e.value).num_states(); ++s) points.push_back(make_point(i, s));
    }
  }
  return points;
}

void Grammar::finish_hash() {
  HashBuilder h;
  h.add_pod(root_).add_pod(elements_.size());
  for (const Element& e : elements_) h.add_pod(e.kind).add_pod(e.value);
  h.add_pod(rules_.size());
  for (const GrammarRule& r : rules_) h.add_span(std::span<const int32_t>(r.alternatives));
  h.add_pod(byte_sets_.size());
  for (const ByteSet& b : byte_sets_) h.add_pod(b.words);
  h.add_pod(char_classes_.size());
  for (const CharClass& c : char_classes_) {
    h.add_pod(c.ranges().size());
    for (const auto& [lo, hi] : c.ranges()) h.add_pod(lo).add_pod(hi);
  }
  hash_ = h.finish128();
}

std::string Grammar::to_gbnf() const {
  std::string out;
  for (size_t r = 0; r < rules_.size(); ++r) {
    const GrammarRule& rule = rules_[r];
    out += rule.name + " ::=";
    for (size_t a = 0; a < rule.alternatives.size(); ++a) {
      if (a > 0) out += " |";
      int32_t i = rule.alternatives[a];
      if (elements_[static_cast<size_t>(i)].kind == ElementKind::kEnd) out += " \"\"";
      for (; elements_[static_cast<size_t>(i)].kind != ElementKind::kEnd; ++i) {
        const Element& e = elements_[static_cast<size_t>(i)];
        out += " ";
        switch (e.kind) {
          case ElementKind::kBytes: out += byte_text(byte_set(e.value)); break;
          case ElementKind::kChars: out += ranges_to_string(char_class(e.value).ranges()); break;
          case ElementKind::kRule: out += rules_[static_cast<size_t>(e.value)].name; break;
          case ElementKind::kEnd: break;
        }
      }
    }
    out += "\n";
  }
  return out;
}

}  // namespace llms
