#include "chat/formats/tool_util.h"

#include <fmt/format.h>

#include <algorithm>

namespace llms::chat {
namespace {

GrammarExpr lit(std::string_view s) { return GrammarExpr::lit(s); }
GrammarExpr seq(std::vector<GrammarExpr> v) { return GrammarExpr::seq(std::move(v)); }

// Any bytes that do not contain `t`: one rule per state of the Knuth-Morris-Pratt
// automaton of `t`, a byte class per state it may move to; reaching the end of `t`
// is the one move left out.
GrammarExpr text_without(GrammarBuilder& b, std::string_view t) {
  const size_t m = t.size();
  std::vector<size_t> fail(m, 0);
  for (size_t i = 1, k = 0; i < m; ++i) {
    while (k > 0 && t[i] != t[k]) k = fail[k - 1];
    if (t[i] == t[k]) ++k;
    fail[i] = k;
  }
  auto next = [&](size_t j, uint8_t c) {
    while (j > 0 && static_cast<uint8_t>(t[j]) != c) j = fail[j - 1];
    return static_cast<uint8_t>(t[j]) == c ? j + 1 : size_t{0};
  };
  std::vector<int32_t> rules(m);
  for (size_t j = 0; j < m; ++j) rules[j] = b.declare(fmt::format("text-{}", j));
  for (size_t j = 0; j < m; ++j) {
    std::vector<ByteSet> to(m);
    for (int c = 0; c < 256; ++c) {
      const size_t k = next(j, static_cast<uint8_t>(c));
      if (k < m) to[k].set(static_cast<uint8_t>(c));
    }
    std::vector<GrammarExpr> alts{GrammarExpr::empty()};
    for (size_t k = 0; k < m; ++k) {
      if (!to[k].empty()) alts.push_back(seq({GrammarExpr::byte_set(to[k]), GrammarExpr::ref(rules[k])}));
    }
    b.define(rules[j], GrammarExpr::alt(std::move(alts)));
  }
  return GrammarExpr::ref(rules[0]);
}

}  // namespace

std::string python_json(const Json& j) {
  if (j.is_object()) {
    std::string out = "{";
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (it != j.begin()) out += ", ";
      out += Json(it.key()).dump() + ": " + python_json(it.value());
    }
    return out + "}";
  }
  if (j.is_array()) {
    std::string out = "[";
    for (size_t i = 0; i < j.size(); ++i) out += (i ? ", " : "") + python_json(j[i]);
    return out + "]";
  }
  return j.dump();
}

std::string tool_json(const ToolDefinition& t) {
  Json f = {{"name", t.name}};
  if (!t.description.empty()) f["description"] = t.description;
  f["parameters"] = t.parameters;
  return python_json(Json{{"type", "function"}, {"function", std::move(f)}});
}

Json arguments_json(const ChatToolCall& c) {
  Json a = Json::parse(c.arguments, nullptr, false);
  return a.is_discarded() ? Json(c.arguments) : a;
}

void add_to_system(Messages& out, const std::string& text) {
  if (!out.empty() && out[0].role == "system") {
    out[0].content += "\n\n" + text;
  } else {
    out.insert(out.begin(), ChatMessage("system", text));
  }
}

Result<GrammarExpr> any_call(GrammarBuilder& b, JsonSchemaCompiler& c, const ToolRequest& r, std::string_view args_key) {
  const GrammarExpr ws = GrammarExpr::ref(c.whitespace());
  std::vector<GrammarExpr> alts;
  for (const ToolDefinition& t : r.tools) {
    if (r.choice == ToolChoice::kNamed && t.name != r.named) continue;
    SchemaJson params = t.parameters;
    if (params.is_object() && !params.contains("type") && !params.contains("$ref") && !params.contains("anyOf") &&
        !params.contains("oneOf") && !params.contains("enum") && !params.contains("const")) {
      params["type"] = "object";  // OpenAI arguments are always an object
    }
    auto args = c.compile(params, "args-" + t.name);
    if (!args.ok()) return invalid_argument(fmt::format("function '{}': {}", t.name, args.status().message()));
    alts.push_back(seq({lit("{"), ws, lit("\"name\""), ws, lit(":"), ws, lit(SchemaJson(t.name).dump()), ws, lit(","), ws,
                        lit(SchemaJson(std::string(args_key)).dump()), ws, lit(":"), ws, GrammarExpr::ref(*args), ws,
                        lit("}")}));
  }
  const int32_t rule = b.declare("call");
  b.define(rule, GrammarExpr::alt(std::move(alts)));
  return GrammarExpr::ref(rule);
}

GrammarExpr marker_root(GrammarBuilder& b, const ToolRequest& r, std::string_view marker, GrammarExpr calls) {
  const GrammarExpr only_calls = seq({lit(marker), std::move(calls)});
  if (r.choice != ToolChoice::kAuto) return only_calls;
  const GrammarExpr text = text_without(b, marker);
  return seq({text, GrammarExpr::optional(only_calls)});
}

std::string_view trim(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

std::optional<ParsedToolCall> call_from_json(const Json& j) {
  if (!j.is_object() || !j.contains("name") || !j.at("name").is_string()) return std::nullopt;
  const char* key = j.contains("arguments") ? "arguments" : j.contains("parameters") ? "parameters" : nullptr;
  Json args = key ? j.at(key) : Json::object();
  if (args.is_string()) args = Json::parse(args.get<std::string>(), nullptr, false);  // some models quote them
  if (!args.is_object()) return std::nullopt;
  // Invalid UTF-8 becomes U+FFFD instead of an exception.
  return ParsedToolCall{j.at("name").get<std::string>(), args.dump(-1, ' ', false, Json::error_handler_t::replace)};
}

std::optional<std::vector<ParsedToolCall>> parse_bare_call(std::string_view text, std::string* content) {
  const std::string_view t = trim(text);
  if (t.empty() || t.front() != '{') return std::nullopt;
  auto call = call_from_json(Json::parse(t, nullptr, false));
  if (!call) return std::nullopt;
  content->clear();
  return std::vector<ParsedToolCall>{std::move(*call)};
}

size_t partial_marker(std::string_view text, std::string_view marker) {
  for (size_t n = std::min(text.size(), marker.size() - 1); n > 0; --n) {
    if (text.substr(text.size() - n) == marker.substr(0, n)) return n;
  }
  return 0;
}

}  // namespace llms::chat
