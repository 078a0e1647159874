// The string formats of the JSON Schema compiler. Each writes only valid members:
// dates exist in every year (February stops at 28), times are RFC 3339 with a
// zone, and email addresses have bounded parts so that output stays finite.
#include <fmt/format.h>

#include "grammar/json_schema_parts.h"

namespace llms {
namespace {

GrammarExpr lit(std::string_view s) { return GrammarExpr::lit(s); }
GrammarExpr seq(std::vector<GrammarExpr> v) { return GrammarExpr::seq(std::move(v)); }
GrammarExpr alt(std::vector<GrammarExpr> v) { return GrammarExpr::alt(std::move(v)); }
GrammarExpr rep(GrammarExpr e, int lo, int hi) { return GrammarExpr::repeat(std::move(e), lo, hi); }

GrammarExpr chars(std::string_view set) {
  ByteSet b;
  for (const char c : set) b.set(static_cast<uint8_t>(c));
  return GrammarExpr::byte_set(b);
}
GrammarExpr range(char lo, char hi) {
  ByteSet b;
  b.set_range(static_cast<uint8_t>(lo), static_cast<uint8_t>(hi));
  return GrammarExpr::byte_set(b);
}
GrammarExpr digit() { return range('0', '9'); }
GrammarExpr hex(int n) { return rep(chars("0123456789abcdefABCDEF"), n, n); }

GrammarExpr date() {
  const GrammarExpr year = seq({range('1', '9'), digit(), digit(), digit()});
  const GrammarExpr d28 = alt({seq({lit("0"), range('1', '9')}), seq({lit("1"), digit()}), seq({lit("2"), range('0', '8')})});
  const GrammarExpr d30 = alt({d28, lit("29"), lit("30")});
  const GrammarExpr d31 = alt({d30, lit("31")});
  const GrammarExpr long_months = alt({lit("01"), lit("03"), lit("05"), lit("07"), lit("08"), lit("10"), lit("12")});
  const GrammarExpr short_months = alt({lit("04"), lit("06"), lit("09"), lit("11")});
  return seq({year, lit("-"),
              alt({seq({long_months, lit("-"), d31}), seq({short_months, lit("-"), d30}), seq({lit("02-"), d28})})});
}

GrammarExpr time() {
  const GrammarExpr hh = alt({seq({range('0', '1'), digit()}), seq({lit("2"), range('0', '3')})});
  const GrammarExpr mm = seq({range('0', '5'), digit()});
  const GrammarExpr zone = alt({lit("Z"), seq({chars("+-"), hh, lit(":"), mm})});
  return seq({hh, lit(":"), mm, lit(":"), mm, GrammarExpr::optional(seq({lit("."), rep(digit(), 1, 9)})), zone});
}

GrammarExpr email() {
  const GrammarExpr atext = chars("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_%+-");
  const GrammarExpr alnum = chars("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789");
  const GrammarExpr label = seq({alnum, rep(chars("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-"), 0, 19)});
  const GrammarExpr local = seq({rep(atext, 1, 32), rep(seq({lit("."), rep(atext, 1, 32)}), 0, 2)});
  const GrammarExpr tld = rep(range('a', 'z'), 2, 6);
  return seq({local, lit("@"), label, rep(seq({lit("."), label}), 0, 2), lit("."), tld});
}

}  // namespace

Result<GrammarExpr> JsonSchemaParts::format(const std::string& name, const std::string& path) {
  if (name == "date") return shared("date", date);
  if (name == "time") return shared("time", time);
  if (name == "date-time") return shared("date-time", [] { return seq({date(), lit("T"), time()}); });
  if (name == "uuid") {
    return shared("uuid", [] { return seq({hex(8), lit("-"), hex(4), lit("-"), hex(4), lit("-"), hex(4), lit("-"), hex(12)}); });
  }
  if (name == "email") return shared("email", email);
  return error(path, fmt::format("'format' '{}' is not supported (supported: date, time, date-time, uuid, email)", name));
}

}  // namespace llms
