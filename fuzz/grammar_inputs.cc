#include "grammar_inputs.h"

#include "grammar/gbnf_parser.h"
#include "grammar/json_schema.h"
#include "grammar/regex_parser.h"

namespace llms::fuzz {

bool split_grammar_input(const uint8_t* data, size_t size, GrammarInput* out) {
  if (size == 0) return false;
  const std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  const size_t nul = rest.find('\0');
  out->front_end = data[0];
  out->text = rest.substr(0, nul);
  out->drive = nul == std::string_view::npos ? std::string_view() : rest.substr(nul + 1);
  return true;
}

Result<Grammar> parse_grammar_input(const GrammarInput& in, const GrammarLimits& limits) {
  switch (in.front_end % 3) {
    case 0: return parse_gbnf(in.text, limits);
    case 1: {
      const auto schema = SchemaJson::parse(in.text, nullptr, false);
      if (schema.is_discarded()) return invalid_argument("not JSON");
      return json_schema_grammar(schema, limits);
    }
    default: return parse_regex(in.text, limits);
  }
}

}  // namespace llms::fuzz
