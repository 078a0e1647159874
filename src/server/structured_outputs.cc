// vLLM's structured-output fields → OutputConstraint: `structured_outputs` ({json,
// regex, choice, grammar, json_object, disable_any_whitespace}) and the older top-level
// `guided_json`, `guided_regex`, `guided_choice`, `guided_grammar`. They map onto the
// grammars response_format, `regex` and `grammar` already use; a choice becomes a GBNF
// alternation of its literal strings.
#include <fmt/format.h>

#include "server/openai_request.h"

namespace llms {
namespace {

// `text` as a GBNF string literal (gbnf_parser.h escapes).
std::string gbnf_literal(const std::string& text) {
  std::string out = "\"";
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7F) {
      out += fmt::format("\\x{:02X}", c);
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

// One source of a constraint: `value` under the name `param`, of `what` kind
// ("json", "regex", "choice", "grammar").
std::optional<ApiError> set_source(const std::string& what, const Json& value, const std::string& param,
                                   OutputConstraint* out) {
  if (out->kind != ConstraintKind::kNone) {
    return bad_request(fmt::format("'{}' cannot be combined with '{}' (one output constraint per request)", param,
                                   out->param),
                       param);
  }
  out->param = param;
  if (what == "json") {
    Json schema = value;
    if (value.is_string()) {
      schema = Json::parse(value.get<std::string>(), nullptr, false);
      if (schema.is_discarded()) return bad_request(fmt::format("'{}' is not valid JSON", param), param);
    }
    if (!schema.is_object() && !schema.is_boolean()) {
      return bad_request(fmt::format("'{}' must be a JSON Schema (an object, or its JSON text)", param), param);
    }
    out->kind = ConstraintKind::kJsonSchema;
    out->schema = schema.is_boolean() && schema.get<bool>() ? Json::object() : schema;
    return std::nullopt;
  }
  if (what == "choice") {
    if (!value.is_array() || value.empty()) return bad_request(fmt::format("'{}' must be a non-empty list of strings", param), param);
    std::string rule = "root ::= ";
    for (size_t i = 0; i < value.size(); ++i) {
      if (!value[i].is_string() || value[i].get<std::string>().empty()) {
        return bad_request(fmt::format("'{}' must be a list of non-empty strings", param), param);
      }
      rule += (i ? " | " : "") + gbnf_literal(value[i].get<std::string>());
    }
    out->kind = ConstraintKind::kGbnf;
    out->text = rule + "\n";
    return std::nullopt;
  }
  if (!value.is_string() || value.get<std::string>().empty()) {
    return bad_request(fmt::format("'{}' must be a non-empty string", param), param);
  }
  out->kind = what == "regex" ? ConstraintKind::kRegex : ConstraintKind::kGbnf;
  out->text = value.get<std::string>();
  return std::nullopt;
}

std::optional<ApiError> read_structured_outputs(const Json& so, OutputConstraint* out) {
  if (!so.is_object()) return bad_request("'structured_outputs' must be an object", "structured_outputs");
  for (const auto& [key, value] : so.items()) {
    if (value.is_null()) continue;
    const std::string param = "structured_outputs." + key;
    if (key == "json" || key == "regex" || key == "choice" || key == "grammar") {
      if (auto e = set_source(key, value, param, out)) return e;
    } else if (key == "json_object") {
      if (!value.is_boolean()) return bad_request(fmt::format("'{}' must be a boolean", param), param);
      if (!value.get<bool>()) continue;
      if (out->kind != ConstraintKind::kNone) {
        return bad_request(fmt::format("'{}' cannot be combined with '{}'", param, out->param), param);
      }
      out->kind = ConstraintKind::kJsonObject;
      out->param = param;
    } else if (key == "disable_any_whitespace") {
      if (!value.is_boolean()) return bad_request(fmt::format("'{}' must be a boolean", param), param);
      if (value.get<bool>()) out->whitespace = JsonWhitespace::kCompact;
    } else if (key == "backend" || key == "disable_fallback") {
      continue;  // how vLLM builds its grammar; the output's meaning does not change here
    } else {
      return bad_request(fmt::format("'{}' is not supported (json, regex, choice, grammar, json_object, "
                                     "disable_any_whitespace)",
                                     param),
                         param);
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> read_vllm_constraint(const Json& b, OutputConstraint* out) {
  if (has_field(b, "structured_outputs")) {
    if (auto e = read_structured_outputs(b.at("structured_outputs"), out)) return e;
  }
  for (const char* what : {"json", "regex", "choice", "grammar"}) {
    const std::string key = std::string("guided_") + what;
    if (!has_field(b, key.c_str())) continue;
    if (auto e = set_source(what, b.at(key), key, out)) return e;
  }
  if (has_field(b, "guided_whitespace_pattern")) {
    return bad_request("'guided_whitespace_pattern' is not supported (structured_outputs.disable_any_whitespace "
                       "gives compact JSON)",
                       "guided_whitespace_pattern");
  }
  return std::nullopt;
}

}  // namespace llms
