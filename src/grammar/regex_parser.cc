#include "grammar/regex_parser.h"

#include <fmt/format.h>

#include "base/utf8.h"

namespace llms {
namespace {

constexpr int kMaxNesting = 256;

const CodepointRanges& digit_ranges() {
  static const CodepointRanges r = {{'0', '9'}};
  return r;
}
const CodepointRanges& word_ranges() {
  static const CodepointRanges r = normalize_ranges({{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}});
  return r;
}
// ECMA-262 WhiteSpace and LineTerminator.
const CodepointRanges& space_ranges() {
  static const CodepointRanges r = normalize_ranges({{0x09, 0x0D}, {0x20, 0x20}, {0xA0, 0xA0}, {0x1680, 0x1680},
                                                     {0x2000, 0x200A}, {0x2028, 0x2029}, {0x202F, 0x202F},
                                                     {0x205F, 0x205F}, {0x3000, 0x3000}, {0xFEFF, 0xFEFF}});
  return r;
}
// `.`: everything but the line terminators.
const CodepointRanges& dot_ranges() {
  static const CodepointRanges r = complement_ranges(normalize_ranges({{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}}));
  return r;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool contains(const CodepointRanges& r, char32_t c) {
  for (const auto& [lo, hi] : r) {
    if (c >= lo && c <= hi) return true;
  }
  return false;
}

CodepointRanges subtract(const CodepointRanges& a, const CodepointRanges& b) {
  CodepointRanges keep = complement_ranges(b);
  CodepointRanges out;
  for (const auto& [alo, ahi] : a) {
    for (const auto& [klo, khi] : keep) {
      const char32_t lo = std::max(alo, klo);
      const char32_t hi = std::min(ahi, khi);
      if (lo <= hi) out.emplace_back(lo, hi);
    }
  }
  return normalize_ranges(std::move(out));
}

class RegexParser {
 public:
  RegexParser(std::string_view pattern, const RegexOptions& options) : src_(pattern), opt_(options) {}

  Result<GrammarExpr> parse() {
    std::vector<GrammarExpr> alts;
    for (;;) {
      bool start_anchor = false;
      if (peek() == '^') {
        ++pos_;
        start_anchor = true;
      }
      GrammarExpr seq;
      bool end_anchor = false;
      LLMS_RETURN_IF_ERROR(parse_sequence(0, &seq, &end_anchor));
      alts.push_back(frame(std::move(seq), start_anchor, end_anchor));
      if (at_end()) break;
      if (peek() == ')') return error("unmatched ')'");
      ++pos_;  // '|'
    }
    return GrammarExpr::alt(std::move(alts));
  }

 private:
  Status error(std::string_view what) const {
    return invalid_argument(fmt::format("regex: {} at offset {}", what, pos_));
  }
  char peek(size_t ahead = 0) const { return pos_ + ahead < src_.size() ? src_[pos_ + ahead] : '\0'; }
  bool at_end() const { return pos_ >= src_.size(); }

  // A search allows any text around an unanchored side.
  GrammarExpr frame(GrammarExpr body, bool start_anchor, bool end_anchor) const {
    if (opt_.use == RegexUse::kFullMatch) return body;
    std::vector<GrammarExpr> parts;
    if (!start_anchor) parts.push_back(GrammarExpr::star(chars({{0, kMaxCodepoint}})));
    parts.push_back(std::move(body));
    if (!end_anchor) parts.push_back(GrammarExpr::star(chars({{0, kMaxCodepoint}})));
    return GrammarExpr::seq(std::move(parts));
  }

  GrammarExpr chars(const CodepointRanges& ranges) const {
    if (opt_.json_string) return json_string_chars(ranges);
    if (ranges.size() == 1 && ranges[0].first == ranges[0].second) {
      std::string s;
      utf8_append(s, ranges[0].first);
      return GrammarExpr::lit(s);
    }
    return GrammarExpr::char_ranges(ranges);
  }

  Status parse_alternation(int depth, GrammarExpr* out) {
    if (depth > kMaxNesting) return error("groups are nested too deeply");
    std::vector<GrammarExpr> alts;
    for (;;) {
      GrammarExpr seq;
      LLMS_RETURN_IF_ERROR(parse_sequence(depth, &seq, nullptr));
      alts.push_back(std::move(seq));
      if (peek() != '|') break;
      ++pos_;
    }
    *out = GrammarExpr::alt(std::move(alts));
    return ok_status();
  }

  // `end_anchor` is null inside groups, where $ is refused.
  Status parse_sequence(int depth, GrammarExpr* out, bool* end_anchor) {
    std::vector<GrammarExpr> items;
    while (!at_end() && peek() != '|' && peek() != ')') {
      if (peek() == '$') {
        if (end_anchor == nullptr || (pos_ + 1 < src_.size() && src_[pos_ + 1] != '|')) {
          return error("'$' is only supported at the end of the pattern");
        }
        ++pos_;
        *end_anchor = true;
        break;
      }
      if (peek() == '^') return error("'^' is only supported at the start of the pattern");
      if (opt_.meter != nullptr && !opt_.meter->charge()) return compile_stop_status(*opt_.meter);
      GrammarExpr atom;
      LLMS_RETURN_IF_ERROR(parse_atom(depth, &atom));
      LLMS_RETURN_IF_ERROR(parse_quantifiers(&atom));
      // A run of plain characters is one literal, not a node per character (a 4 MB
      // pattern would take ~150 bytes of nodes per character).
      const bool literal = atom.kind == GrammarExpr::Kind::kLiteral;
      if (literal && !items.empty() && items.back().kind == GrammarExpr::Kind::kLiteral) {
        items.back().literal += atom.literal;
        continue;
      }
      items.push_back(std::move(atom));
    }
    *out = items.empty() ? GrammarExpr::empty() : GrammarExpr::seq(std::move(items));
    return ok_status();
  }

  Status parse_atom(int depth, GrammarExpr* out) {
    const char c = peek();
    if (c == '(') return parse_group(depth, out);
    if (c == '[') {
      CodepointRanges r;
      LLMS_RETURN_IF_ERROR(parse_class(&r));
      *out = chars(r);
      return ok_status();
    }
    if (c == '.') {
      ++pos_;
      *out = chars(dot_ranges());
      return ok_status();
    }
    if (c == '*' || c == '+' || c == '?' || (c == '{' && looks_like_braces())) {
      return error(fmt::format("nothing to repeat before '{}'", c));
    }
    CodepointRanges r;
    LLMS_RETURN_IF_ERROR(parse_char_or_escape(false, &r));
    *out = chars(r);
    return ok_status();
  }

  Status parse_group(int depth, GrammarExpr* out) {
    ++pos_;
    if (peek() == '?') {
      if (peek(1) == ':') {
        pos_ += 2;
      } else if (peek(1) == '<' && peek(2) != '=' && peek(2) != '!') {
        pos_ += 2;
        while (!at_end() && peek() != '>') ++pos_;
        if (at_end()) return error("unterminated group name");
        ++pos_;
      } else if (peek(1) == '=' || peek(1) == '!' || peek(1) == '<') {
        return error("lookaround assertions are not supported");
      } else {
        return error("inline flags and other (?...) groups are not supported");
      }
    }
    LLMS_RETURN_IF_ERROR(parse_alternation(depth + 1, out));
    if (peek() != ')') return error("missing ')'");
    ++pos_;
    return ok_status();
  }

  // One quantifier, as ECMA-262: a second one ("a++", possessive in other dialects,
  // "a{2}{3}") is "nothing to repeat".
  Status parse_quantifiers(GrammarExpr* atom) {
    for (bool quantified = false;; quantified = true) {
      const char next = peek();
      if (quantified && (next == '*' || next == '+' || next == '?' || (next == '{' && looks_like_braces()))) {
        return error(fmt::format("nothing to repeat before '{}' (one quantifier per atom)", next));
      }
      int min = 0;
      int max = GrammarExpr::kUnbounded;
      const char c = peek();
      if (simple_quantifier(c, &min, &max)) {
        ++pos_;
      } else if (c == '{' && looks_like_braces()) {
        LLMS_RETURN_IF_ERROR(parse_braces(&min, &max));
      } else {
        return ok_status();
      }
      if (peek() == '?') ++pos_;  // lazy: same language
      *atom = GrammarExpr::repeat(std::move(*atom), min, max);
    }
  }

  // ECMA treats a '{' that does not start a valid quantifier as a literal.
  bool looks_like_braces() const {
    size_t p = pos_ + 1;
    size_t digits = 0;
    while (p < src_.size() && src_[p] >= '0' && src_[p] <= '9') ++p, ++digits;
    if (digits == 0) return false;
    if (p < src_.size() && src_[p] == ',') {
      ++p;
      while (p < src_.size() && src_[p] >= '0' && src_[p] <= '9') ++p;
    }
    return p < src_.size() && src_[p] == '}';
  }

  Status parse_count(int* out) {
    int64_t v = 0;
    while (peek() >= '0' && peek() <= '9') {
      v = v * 10 + (peek() - '0');
      if (v > 1'000'000) return error("repetition count is too large");
      ++pos_;
    }
    *out = static_cast<int>(v);
    return ok_status();
  }

  Status parse_braces(int* min, int* max) {
    ++pos_;
    LLMS_RETURN_IF_ERROR(parse_count(min));
    *max = *min;
    if (peek() == ',') {
      ++pos_;
      *max = GrammarExpr::kUnbounded;
      if (peek() != '}') LLMS_RETURN_IF_ERROR(parse_count(max));
    }
    ++pos_;  // '}', checked by looks_like_braces()
    if (*max != GrammarExpr::kUnbounded && *max < *min) return error("repetition {m,n} needs m <= n");
    return ok_status();
  }

  Status parse_class(CodepointRanges* out) {
    ++pos_;
    const bool negated = peek() == '^';
    if (negated) ++pos_;
    CodepointRanges set;
    while (at_end() || peek() != ']') {
      if (at_end()) return error("unterminated character class");
      CodepointRanges lo;
      LLMS_RETURN_IF_ERROR(parse_char_or_escape(true, &lo));
      const bool single = lo.size() == 1 && lo[0].first == lo[0].second;
      if (single && peek() == '-' && peek(1) != ']' && pos_ + 1 < src_.size()) {
        ++pos_;
        CodepointRanges hi;
        LLMS_RETURN_IF_ERROR(parse_char_or_escape(true, &hi));
        if (hi.size() != 1 || hi[0].first != hi[0].second) return error("a class escape cannot end a range");
        if (hi[0].first < lo[0].first) return error("character range is reversed");
        set.emplace_back(lo[0].first, hi[0].first);
      } else {
        set.insert(set.end(), lo.begin(), lo.end());
      }
    }
    ++pos_;
    set = normalize_ranges(std::move(set));
    *out = negated ? complement_ranges(set) : set;
    return ok_status();
  }

  Status parse_hex(int digits, char32_t* out) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      const int h = hex_value(peek());
      if (h < 0) return error(fmt::format("expected {} hex digits", digits));
      v = v * 16 + static_cast<uint32_t>(h);
      ++pos_;
    }
    *out = v;
    return ok_status();
  }

  Status parse_unicode_escape(char32_t* out) {
    if (peek() != '{') return parse_hex(4, out);
    ++pos_;
    uint32_t v = 0;
    int n = 0;
    while (hex_value(peek()) >= 0 && n < 8) {
      v = v * 16 + static_cast<uint32_t>(hex_value(peek()));
      ++pos_;
      ++n;
    }
    if (n == 0 || peek() != '}' || v > kMaxCodepoint) return error("bad \\u{...} escape");
    ++pos_;
    *out = v;
    return ok_status();
  }

  // One character, or the set of a class escape (\d, \w, \s and their negations).
  Status parse_char_or_escape(bool in_class, CodepointRanges* out) {
    if (peek() != '\\') {
      size_t used = 0;
      const char32_t c = utf8_decode(src_, pos_, &used);
      pos_ += used;
      *out = {{c, c}};
      return ok_status();
    }
    ++pos_;
    if (at_end()) return error("the pattern ends with a lone '\\'");
    const char e = peek();
    ++pos_;
    char32_t c = 0;
    switch (e) {
      case 'd': *out = digit_ranges(); return ok_status();
      case 'D': *out = complement_ranges(digit_ranges()); return ok_status();
      case 'w': *out = word_ranges(); return ok_status();
      case 'W': *out = complement_ranges(word_ranges()); return ok_status();
      case 's': *out = space_ranges(); return ok_status();
      case 'S': *out = complement_ranges(space_ranges()); return ok_status();
      case 't': c = '\t'; break;
      case 'n': c = '\n'; break;
      case 'r': c = '\r'; break;
      case 'f': c = '\f'; break;
      case 'v': c = '\v'; break;
      case '0': c = 0; break;
      case 'x': LLMS_RETURN_IF_ERROR(parse_hex(2, &c)); break;
      case 'u': LLMS_RETURN_IF_ERROR(parse_unicode_escape(&c)); break;
      case 'b':
        if (in_class) {
          c = '\b';
          break;
        }
        --pos_;
        return error("word boundaries (\\b) are not supported");
      case 'B': --pos_; return error("word boundaries (\\B) are not supported");
      default:
        if (e >= '1' && e <= '9') {
          --pos_;
          return error("back-references are not supported");
        }
        if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z')) {
          --pos_;
          return error(fmt::format("unknown escape '\\{}'", e));
        }
        c = static_cast<unsigned char>(e);
    }
    *out = {{c, c}};
    return ok_status();
  }

  std::string_view src_;
  RegexOptions opt_;
  size_t pos_ = 0;
};

}  // namespace

GrammarExpr json_string_chars(const CodepointRanges& ranges) {
  static const CodepointRanges kNeedEscape = normalize_ranges({{0, 0x1F}, {'"', '"'}, {'\\', '\\'}});
  std::vector<GrammarExpr> alts;
  const CodepointRanges raw = subtract(ranges, kNeedEscape);
  if (!raw.empty()) alts.push_back(GrammarExpr::char_ranges(raw));
  if (contains(ranges, '"')) alts.push_back(GrammarExpr::lit("\\\""));
  if (contains(ranges, '\\')) alts.push_back(GrammarExpr::lit("\\\\"));
  if (contains(ranges, '/')) alts.push_back(GrammarExpr::lit("\\/"));
  for (const auto& [c, e] : {std::pair<char32_t, const char*>{'\b', "\\b"}, {'\f', "\\f"}, {'\n', "\\n"},
                             {'\r', "\\r"}, {'\t', "\\t"}}) {
    if (contains(ranges, c)) alts.push_back(GrammarExpr::lit(e));
  }
  bool all_controls = true;
  for (char32_t c = 0; c < 0x20; ++c) all_controls = all_controls && contains(ranges, c);
  if (all_controls) {
    ByteSet hi;
    hi.set_range('0', '1');
    ByteSet hex;
    hex.set_range('0', '9');
    hex.set_range('a', 'f');
    hex.set_range('A', 'F');
    alts.push_back(GrammarExpr::seq({GrammarExpr::lit("\\u00"), GrammarExpr::byte_set(hi), GrammarExpr::byte_set(hex)}));
  } else {
    for (char32_t c = 0; c < 0x20; ++c) {
      if (contains(ranges, c)) alts.push_back(GrammarExpr::lit(fmt::format("\\u{:04x}", static_cast<uint32_t>(c))));
    }
  }
  if (alts.empty()) return GrammarExpr::char_ranges({});  // matches nothing
  return GrammarExpr::alt(std::move(alts));
}

Result<GrammarExpr> regex_to_expr(std::string_view pattern, const RegexOptions& options) {
  RegexParser parser(pattern, options);
  return parser.parse();
}

Result<Grammar> parse_regex(std::string_view pattern, const GrammarLimits& limits) {
  LLMS_ASSIGN_OR_RETURN(GrammarExpr body, regex_to_expr(pattern, RegexOptions{.meter = limits.meter}));
  GrammarBuilder b(limits);
  const int32_t root = b.declare("root");
  b.define(root, std::move(body));
  auto g = b.build(root);
  if (!g.ok()) return g.status().with_context("regex");
  return g;
}

}  // namespace llms
