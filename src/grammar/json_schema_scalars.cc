// Strings, numbers, formats and the plain JSON rules of the JSON Schema compiler.
#include <fmt/format.h>

#include <cmath>

#include "grammar/json_schema_parts.h"
#include "grammar/regex_parser.h"

namespace llms {
namespace {

constexpr int kMaxLength = 4096;

GrammarExpr bytes_of(std::string_view chars) {
  ByteSet set;
  for (const char c : chars) set.set(static_cast<uint8_t>(c));
  return GrammarExpr::byte_set(set);
}

GrammarExpr byte_range(char lo, char hi) {
  ByteSet set;
  set.set_range(static_cast<uint8_t>(lo), static_cast<uint8_t>(hi));
  return GrammarExpr::byte_set(set);
}

GrammarExpr digit() { return byte_range('0', '9'); }
GrammarExpr hex_digit() { return bytes_of("0123456789abcdefABCDEF"); }
GrammarExpr lit(std::string_view s) { return GrammarExpr::lit(s); }
GrammarExpr seq(std::vector<GrammarExpr> v) { return GrammarExpr::seq(std::move(v)); }
GrammarExpr alt(std::vector<GrammarExpr> v) { return GrammarExpr::alt(std::move(v)); }
GrammarExpr rep(GrammarExpr e, int lo, int hi) { return GrammarExpr::repeat(std::move(e), lo, hi); }

// Digit strings of one length n between x and y (equal lengths, x <= y).
GrammarExpr same_length_range(const std::string& x, const std::string& y) {
  if (x.empty()) return GrammarExpr::empty();
  if (x == y) return lit(x);
  if (x[0] == y[0]) return seq({lit(x.substr(0, 1)), same_length_range(x.substr(1), y.substr(1))});
  const size_t n = x.size() - 1;
  const bool low_from_zero = x.find_first_not_of('0', 1) == std::string::npos;
  const bool high_to_nine = y.find_first_not_of('9', 1) == std::string::npos;
  std::vector<GrammarExpr> alts;
  if (!low_from_zero) alts.push_back(seq({lit(x.substr(0, 1)), same_length_range(x.substr(1), std::string(n, '9'))}));
  const char from = low_from_zero ? x[0] : static_cast<char>(x[0] + 1);
  const char to = high_to_nine ? y[0] : static_cast<char>(y[0] - 1);
  if (from <= to) alts.push_back(seq({byte_range(from, to), rep(digit(), static_cast<int>(n), static_cast<int>(n))}));
  if (!high_to_nine) alts.push_back(seq({lit(y.substr(0, 1)), same_length_range(std::string(n, '0'), y.substr(1))}));
  return alt(std::move(alts));
}

int64_t pow10(int d) {
  int64_t v = 1;
  for (int i = 0; i < d; ++i) v *= 10;
  return v;
}

// 0 <= a <= b.
GrammarExpr non_negative_range(int64_t a, int64_t b) {
  std::vector<GrammarExpr> alts;
  const int da = static_cast<int>(std::to_string(a).size());
  const int db = static_cast<int>(std::to_string(b).size());
  for (int d = da; d <= db; ++d) {
    const int64_t lo = std::max(a, d == 1 ? int64_t{0} : pow10(d - 1));
    const int64_t hi = std::min(b, pow10(d) - 1);
    if (lo <= hi) alts.push_back(same_length_range(std::to_string(lo), std::to_string(hi)));
  }
  return alt(std::move(alts));
}

GrammarExpr fraction() { return seq({lit("."), rep(digit(), 1, 16)}); }

// The bounds of a number schema, resolved into the integers and the fractions this
// grammar writes (see number()).
struct NumberBounds {
  double lo = -INFINITY;
  double hi = INFINITY;
  bool lo_exclusive = false;
  bool hi_exclusive = false;
};

// The smallest and largest integers within the bounds.
std::pair<int64_t, int64_t> integer_span(const NumberBounds& b) {
  const double lo = b.lo_exclusive ? std::floor(b.lo) + 1 : std::ceil(b.lo);
  const double hi = b.hi_exclusive ? std::ceil(b.hi) - 1 : std::floor(b.hi);
  const auto clamp = [](double v) {
    return static_cast<int64_t>(std::clamp(v, -static_cast<double>(kMaxJsonInteger), static_cast<double>(kMaxJsonInteger)));
  };
  return {clamp(lo), clamp(hi)};
}

// minimum/maximum and their exclusive forms; the tighter of each pair wins.
Status read_bounds(JsonSchemaParts& p, const SchemaJson& s, const std::string& path, NumberBounds* b) {
  LLMS_ASSIGN_OR_RETURN(const auto minimum, p.bound(s, "minimum", path));
  LLMS_ASSIGN_OR_RETURN(const auto maximum, p.bound(s, "maximum", path));
  LLMS_ASSIGN_OR_RETURN(const auto ex_min, p.bound(s, "exclusiveMinimum", path));
  LLMS_ASSIGN_OR_RETURN(const auto ex_max, p.bound(s, "exclusiveMaximum", path));
  if (minimum) b->lo = *minimum;
  if (ex_min && *ex_min >= b->lo) {
    b->lo = *ex_min;
    b->lo_exclusive = true;
  }
  if (maximum) b->hi = *maximum;
  if (ex_max && *ex_max <= b->hi) {
    b->hi = *ex_max;
    b->hi_exclusive = true;
  }
  return ok_status();
}

}  // namespace

GrammarExpr integer_range(int64_t lo, int64_t hi) {
  std::vector<GrammarExpr> alts;
  if (lo < 0) alts.push_back(seq({lit("-"), non_negative_range(std::max<int64_t>(1, -std::min<int64_t>(hi, -1)), -lo)}));
  if (hi >= 0) alts.push_back(non_negative_range(std::max<int64_t>(lo, 0), hi));
  return alt(std::move(alts));
}

GrammarExpr JsonSchemaParts::ws() {
  // llama.cpp's bound (common/json-schema-to-grammar.cpp, SPACE_RULE): a weak model
  // that drifts into whitespace spends at most 22 bytes per gap, not the whole answer.
  const bool compact = c_.whitespace_ == JsonWhitespace::kCompact;
  return shared("ws", [compact] {
    if (compact) return GrammarExpr::empty();
    return alt({GrammarExpr::empty(), lit(" "), seq({rep(lit("\n"), 1, 2), rep(bytes_of(" \t"), 0, 20)})});
  });
}

GrammarExpr JsonSchemaParts::colon_space() {
  const bool compact = c_.whitespace_ == JsonWhitespace::kCompact;
  return shared("colon-ws", [compact] { return compact ? GrammarExpr::empty() : alt({GrammarExpr::empty(), lit(" ")}); });
}

GrammarExpr JsonSchemaParts::string_char() {
  // \u escapes never name a surrogate: each escape is one character.
  const GrammarExpr u = alt({seq({bytes_of("0123456789abcABCefEF"), hex_digit(), hex_digit(), hex_digit()}),
                             seq({bytes_of("dD"), byte_range('0', '7'), hex_digit(), hex_digit()})});
  const GrammarExpr escape = alt({bytes_of("\"\\/bfnrt"), seq({lit("u"), u})});
  return alt({GrammarExpr::char_ranges(complement_ranges(normalize_ranges({{0, 0x1F}, {'"', '"'}, {'\\', '\\'}}))),
              seq({lit("\\"), escape})});
}

GrammarExpr JsonSchemaParts::any_string() {
  return shared("string", [this] { return seq({lit("\""), GrammarExpr::star(string_char()), lit("\"")}); });
}

GrammarExpr JsonSchemaParts::any_object() {
  return shared("object", [this] {
    const GrammarExpr member = seq({any_string(), lit(":"), colon_space(), any_value()});
    const GrammarExpr more = GrammarExpr::star(seq({lit(","), ws(), member}));
    return seq({lit("{"), ws(), GrammarExpr::optional(seq({member, more, ws()})), lit("}")});
  });
}

GrammarExpr JsonSchemaParts::any_value() {
  return shared("value", [this] {
    const GrammarExpr array = shared("array", [this] {
      const GrammarExpr more = GrammarExpr::star(seq({lit(","), ws(), any_value()}));
      return seq({lit("["), ws(), GrammarExpr::optional(seq({any_value(), more, ws()})), lit("]")});
    });
    return alt({any_object(), array, any_string(), any_number(), lit("true"), lit("false"), lit("null")});
  });
}

GrammarExpr JsonSchemaParts::any_number() {
  return shared("number", [] {
    const GrammarExpr integer = alt({lit("0"), seq({byte_range('1', '9'), rep(digit(), 0, 15)})});
    const GrammarExpr exponent = seq({bytes_of("eE"), GrammarExpr::optional(bytes_of("+-")), rep(digit(), 1, 2)});
    return seq({GrammarExpr::optional(lit("-")), integer, GrammarExpr::optional(fraction()), GrammarExpr::optional(exponent)});
  });
}

Result<GrammarExpr> JsonSchemaParts::string(const SchemaJson& s, const std::string& path) {
  LLMS_ASSIGN_OR_RETURN(const auto min_len, count(s, "minLength", path));
  LLMS_ASSIGN_OR_RETURN(const auto max_len, count(s, "maxLength", path));
  const bool lengths = min_len || max_len;
  if (s.contains("pattern")) {
    if (lengths || s.contains("format")) return error(path, "'pattern' together with a length or 'format' is not supported");
    if (!s.at("pattern").is_string()) return error(path, "'pattern' must be a string");
    auto body = regex_to_expr(s.at("pattern").get<std::string>(), RegexOptions{RegexUse::kSearch, true, b_.meter()});
    if (!body.ok() && body.status().code() != StatusCode::kInvalidArgument) return body.status();
    if (!body.ok()) return error(path, "'pattern': " + body.status().message());
    return named(path + "/pattern", seq({lit("\""), std::move(body).value(), lit("\"")}));
  }
  if (s.contains("format")) {
    if (lengths) return error(path, "'format' together with a length is not supported");
    if (!s.at("format").is_string()) return error(path, "'format' must be a string");
    LLMS_ASSIGN_OR_RETURN(GrammarExpr body, format(s.at("format").get<std::string>(), path));
    return seq({lit("\""), std::move(body), lit("\"")});
  }
  if (!lengths) return any_string();
  const int64_t lo = min_len.value_or(0);
  if (lo > kMaxLength) return error(path, fmt::format("'minLength' above {} is not supported", kMaxLength));
  const int64_t hi = max_len ? std::min<int64_t>(*max_len, kMaxLength) : -1;
  if (hi >= 0 && lo > hi) return error(path, "'minLength' is larger than 'maxLength'");
  return seq({lit("\""), rep(string_char(), static_cast<int>(lo), static_cast<int>(hi)), lit("\"")});
}

Result<GrammarExpr> JsonSchemaParts::integer(const SchemaJson& s, const std::string& path) {
  NumberBounds b;
  LLMS_RETURN_IF_ERROR(read_bounds(*this, s, path, &b));
  if (std::isinf(b.lo) && std::isinf(b.hi)) {
    return shared("integer", [] {
      return seq({GrammarExpr::optional(lit("-")), alt({lit("0"), seq({byte_range('1', '9'), rep(digit(), 0, 15)})})});
    });
  }
  const auto [lo, hi] = integer_span(b);
  if (lo > hi) return error(path, "no integer lies within the bounds");
  return integer_range(lo, hi);
}

// With bounds a number is an integer within them, or I.F where every value of that
// form lies within them: I >= 0 covers [I, I+1), -I covers (-(I+1), -I].
Result<GrammarExpr> JsonSchemaParts::number(const SchemaJson& s, const std::string& path) {
  NumberBounds b;
  LLMS_RETURN_IF_ERROR(read_bounds(*this, s, path, &b));
  if (std::isinf(b.lo) && std::isinf(b.hi)) return any_number();
  std::vector<GrammarExpr> alts;
  const auto [ilo, ihi] = integer_span(b);
  if (ilo <= ihi) alts.push_back(integer_range(ilo, ihi));
  const double max = static_cast<double>(kMaxJsonInteger);
  // Non-negative integer part I: I meets the lower bound as an integer does, I+1 <= hi.
  const int64_t pos_lo = std::max<int64_t>(0, ilo);
  const int64_t pos_hi = static_cast<int64_t>(std::min(max, std::floor(b.hi) - 1));
  if (std::isinf(b.hi) || pos_lo <= pos_hi) {
    const int64_t top = std::isinf(b.hi) ? kMaxJsonInteger : pos_hi;
    if (pos_lo <= top) alts.push_back(seq({non_negative_range(pos_lo, top), fraction()}));
  }
  // Negative: "-I.F" with -(I+1) >= lo and -I <= hi (< hi when exclusive).
  const int64_t neg_hi = std::isinf(b.lo) ? kMaxJsonInteger : static_cast<int64_t>(std::min(max, std::floor(-b.lo) - 1));
  const double neg_lo_d = b.hi_exclusive ? std::floor(-b.hi) + 1 : std::ceil(-b.hi);
  const int64_t neg_lo = static_cast<int64_t>(std::max(0.0, std::min(max, neg_lo_d)));
  if (neg_lo <= neg_hi) alts.push_back(seq({lit("-"), non_negative_range(neg_lo, neg_hi), fraction()}));
  if (alts.empty()) {
    return error(path, "the bounds leave no number this grammar can write (an interval narrower than 1 with no "
                       "integer in it is not supported)");
  }
  return alt(std::move(alts));
}

}  // namespace llms
