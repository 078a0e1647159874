#include "grammar/gbnf_parser.h"

#include <fmt/format.h>

#include "base/utf8.h"

namespace llms {
namespace {

constexpr int kMaxNesting = 256;

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class GbnfParser {
 public:
  GbnfParser(std::string_view text, const GrammarLimits& limits) : src_(text), builder_(limits) {}

  Result<Grammar> parse() {
    skip_space(true);
    while (pos_ < src_.size()) {
      LLMS_RETURN_IF_ERROR(parse_rule());
      skip_space(true);
    }
    const int32_t root = builder_.find("root");
    if (root < 0 || !builder_.defined(root)) return invalid_argument("grammar: there is no 'root' rule");
    for (int32_t r = 0; r < static_cast<int32_t>(used_at_.size()); ++r) {
      if (!builder_.defined(r)) {
        return invalid_argument(fmt::format("grammar: rule '{}' is used at {} but never defined", builder_.name(r),
                                            where(used_at_[static_cast<size_t>(r)])));
      }
    }
    auto g = builder_.build(root);
    if (!g.ok()) return g.status().with_context("grammar");
    return g;
  }

 private:
  Status error(std::string_view what) const {
    return invalid_argument(fmt::format("grammar: {} at {}", what, where(pos_)));
  }

  std::string where(size_t pos) const {
    int line = 1;
    size_t line_start = 0;
    for (size_t i = 0; i < pos && i < src_.size(); ++i) {
      if (src_[i] == '\n') {
        ++line;
        line_start = i + 1;
      }
    }
    return fmt::format("line {}, column {}", line, pos - line_start + 1);
  }

  char peek(size_t ahead = 0) const { return pos_ + ahead < src_.size() ? src_[pos_ + ahead] : '\0'; }
  bool at_end() const { return pos_ >= src_.size(); }

  // Spaces, tabs and # comments; newlines too when `newlines`.
  void skip_space(bool newlines) {
    while (!at_end()) {
      const char c = peek();
      if (c == ' ' || c == '\t' || (newlines && (c == '\n' || c == '\r'))) {
        ++pos_;
      } else if (c == '#') {
        while (!at_end() && peek() != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  // At top level, a line break ends the rule unless the next line starts with |.
  bool continues_on_next_line() {
    size_t p = pos_;
    while (p < src_.size()) {
      const char c = src_[p];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++p;
      } else if (c == '#') {
        while (p < src_.size() && src_[p] != '\n') ++p;
      } else {
        break;
      }
    }
    if (p < src_.size() && src_[p] == '|') {
      pos_ = p;
      return true;
    }
    return false;
  }

  std::string parse_name() {
    const size_t start = pos_;
    while (!at_end() && is_name_char(peek())) ++pos_;
    return std::string(src_.substr(start, pos_ - start));
  }

  int32_t rule_id(const std::string& name) {
    int32_t id = builder_.find(name);
    if (id < 0) id = builder_.declare(name);
    if (used_at_.size() <= static_cast<size_t>(id)) used_at_.resize(static_cast<size_t>(id) + 1, kNotUsed);
    if (used_at_[static_cast<size_t>(id)] == kNotUsed) used_at_[static_cast<size_t>(id)] = pos_;
    return id;
  }

  Status parse_rule() {
    const size_t start = pos_;
    const std::string name = parse_name();
    if (name.empty()) return error(fmt::format("expected a rule name, found '{}'", peek()));
    skip_space(false);
    if (src_.substr(pos_, 3) != "::=") return error("expected '::=' after the rule name");
    pos_ += 3;
    skip_space(true);
    // Declared before its body is read, so that rules keep the order of the text.
    const int32_t id = rule_id(name);
    if (builder_.defined(id)) {
      pos_ = start;
      return error(fmt::format("rule '{}' is defined twice", name));
    }
    GrammarExpr body;
    LLMS_RETURN_IF_ERROR(parse_alternatives(0, &body));
    builder_.define(id, std::move(body));
    if (!at_end() && peek() != '\n' && peek() != '\r') return error(fmt::format("unexpected '{}'", peek()));
    return ok_status();
  }

  Status parse_alternatives(int depth, GrammarExpr* out) {
    if (depth > kMaxNesting) return error("groups are nested too deeply");
    std::vector<GrammarExpr> alts;
    for (;;) {
      GrammarExpr seq;
      LLMS_RETURN_IF_ERROR(parse_sequence(depth, &seq));
      alts.push_back(std::move(seq));
      if (peek() != '|' && !(depth == 0 && continues_on_next_line())) break;
      ++pos_;
      skip_space(true);
    }
    *out = GrammarExpr::alt(std::move(alts));
    return ok_status();
  }

  Status parse_sequence(int depth, GrammarExpr* out) {
    std::vector<GrammarExpr> items;
    while (!at_end()) {
      const char c = peek();
      if (c == '|' || c == ')' || c == '\n' || c == '\r') break;
      if (!builder_.charge()) return builder_.stop_status();
      GrammarExpr item;
      LLMS_RETURN_IF_ERROR(parse_primary(depth, &item));
      LLMS_RETURN_IF_ERROR(parse_postfix(&item));
      items.push_back(std::move(item));
      skip_space(depth > 0);
    }
    *out = items.empty() ? GrammarExpr::empty() : GrammarExpr::seq(std::move(items));
    return ok_status();
  }

  Status parse_primary(int depth, GrammarExpr* out) {
    const char c = peek();
    if (c == '"') return parse_literal(out);
    if (c == '[') return parse_class(out);
    if (c == '.') {
      ++pos_;
      *out = GrammarExpr::char_ranges({{0, kMaxCodepoint}});
      return ok_status();
    }
    if (c == '(') {
      ++pos_;
      skip_space(true);
      LLMS_RETURN_IF_ERROR(parse_alternatives(depth + 1, out));
      if (peek() != ')') return error("expected ')'");
      ++pos_;
      return ok_status();
    }
    if (c == '<' || c == '!') return error("token references (<...>) are not supported");
    if (is_name_char(c)) {
      *out = GrammarExpr::ref(rule_id(parse_name()));
      return ok_status();
    }
    return error(fmt::format("unexpected '{}'", c));
  }

  Status parse_postfix(GrammarExpr* item) {
    for (;;) {
      const char c = peek();
      int min = 0;
      int max = GrammarExpr::kUnbounded;
      if (simple_quantifier(c, &min, &max)) {
        ++pos_;
      } else if (c == '{') {
        LLMS_RETURN_IF_ERROR(parse_braces(&min, &max));
      } else {
        return ok_status();
      }
      *item = GrammarExpr::repeat(std::move(*item), min, max);
    }
  }

  Status parse_count(int* out) {
    const size_t start = pos_;
    int64_t v = 0;
    while (!at_end() && peek() >= '0' && peek() <= '9') {
      v = v * 10 + (peek() - '0');
      if (v > 1'000'000) return error("repetition count is too large");
      ++pos_;
    }
    if (pos_ == start) return error("expected a number in { }");
    *out = static_cast<int>(v);
    return ok_status();
  }

  Status parse_braces(int* min, int* max) {
    const size_t open = pos_;
    ++pos_;
    skip_space(false);
    LLMS_RETURN_IF_ERROR(parse_count(min));
    skip_space(false);
    *max = *min;
    if (peek() == ',') {
      ++pos_;
      skip_space(false);
      *max = GrammarExpr::kUnbounded;
      if (peek() != '}') LLMS_RETURN_IF_ERROR(parse_count(max));
      skip_space(false);
    }
    if (peek() != '}') return error("expected '}'");
    ++pos_;
    if (*max != GrammarExpr::kUnbounded && *max < *min) {
      pos_ = open;
      return error("repetition {m,n} needs m <= n");
    }
    return ok_status();
  }

  // One (possibly escaped) character of a literal or class.
  Status parse_char(char32_t* out) {
    if (at_end()) return error("unexpected end of the grammar");
    if (peek() != '\\') {
      size_t used = 0;
      *out = utf8_decode(src_, pos_, &used);
      pos_ += used;
      return ok_status();
    }
    ++pos_;
    const char e = peek();
    ++pos_;
    switch (e) {
      case 'n': *out = '\n'; return ok_status();
      case 'r': *out = '\r'; return ok_status();
      case 't': *out = '\t'; return ok_status();
      case '\\': case '"': case '[': case ']': case '-': case '^': case '.': case '/':
        *out = static_cast<char32_t>(e);
        return ok_status();
      case 'x': return parse_hex(2, out);
      case 'u': return parse_hex(4, out);
      case 'U': return parse_hex(8, out);
      default: --pos_; return error(fmt::format("unknown escape '\\{}'", e));
    }
  }

  Status parse_hex(int digits, char32_t* out) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      const int h = hex_value(peek());
      if (h < 0) return error(fmt::format("expected {} hex digits", digits));
      v = v * 16 + static_cast<uint32_t>(h);
      ++pos_;
    }
    if (v > kMaxCodepoint) return error("code point beyond U+10FFFF");
    *out = v;
    return ok_status();
  }

  Status parse_literal(GrammarExpr* out) {
    ++pos_;
    std::string bytes;
    while (peek() != '"') {
      if (at_end() || peek() == '\n') return error("unterminated literal");
      char32_t c = 0;
      LLMS_RETURN_IF_ERROR(parse_char(&c));
      utf8_append(bytes, c);
    }
    ++pos_;
    *out = GrammarExpr::lit(bytes);
    return ok_status();
  }

  Status parse_class(GrammarExpr* out) {
    ++pos_;
    const bool negated = peek() == '^';
    if (negated) ++pos_;
    CodepointRanges ranges;
    while (peek() != ']') {
      if (at_end() || peek() == '\n') return error("unterminated character class");
      char32_t lo = 0;
      LLMS_RETURN_IF_ERROR(parse_char(&lo));
      char32_t hi = lo;
      if (peek() == '-' && peek(1) != ']' && pos_ + 1 < src_.size()) {
        ++pos_;
        LLMS_RETURN_IF_ERROR(parse_char(&hi));
        if (hi < lo) return error("character range is reversed");
      }
      ranges.emplace_back(lo, hi);
    }
    ++pos_;
    ranges = normalize_ranges(std::move(ranges));
    *out = GrammarExpr::char_ranges(negated ? complement_ranges(ranges) : ranges);
    return ok_status();
  }

  std::string_view src_;
  size_t pos_ = 0;
  GrammarBuilder builder_;
  // Per rule: the offset of its first use (where() is only worked out for an error:
  // it scans the text).
  static constexpr size_t kNotUsed = ~size_t{0};
  std::vector<size_t> used_at_;
};

}  // namespace

Result<Grammar> parse_gbnf(std::string_view text, const GrammarLimits& limits) {
  GbnfParser parser(text, limits);
  return parser.parse();
}

}  // namespace llms
