#include "server/tool_calls.h"

#include <fmt/format.h>

#include "server/json_util.h"

namespace llms {
namespace {

constexpr std::string_view kHermesOpen = "<tool_call>";
constexpr std::string_view kHermesClose = "</tool_call>";
constexpr std::string_view kMistralMarker = "[TOOL_CALLS]";

std::string_view trim(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

// {"name": "f", "arguments"|"parameters": {...}} → a call.
std::optional<ParsedToolCall> call_from_json(const Json& j) {
  if (!j.is_object() || !j.contains("name") || !j.at("name").is_string()) return std::nullopt;
  const char* key = j.contains("arguments") ? "arguments" : j.contains("parameters") ? "parameters" : nullptr;
  Json args = key ? j.at(key) : Json::object();
  if (args.is_string()) args = Json::parse(args.get<std::string>(), nullptr, false);  // some models quote them
  if (!args.is_object()) return std::nullopt;
  return ParsedToolCall{j.at("name").get<std::string>(), dump_json(args)};
}

std::optional<std::vector<ParsedToolCall>> parse_hermes(std::string_view text, std::string* content) {
  const size_t first = text.find(kHermesOpen);
  if (first == std::string_view::npos) return std::nullopt;
  std::vector<ParsedToolCall> calls;
  size_t pos = first;
  while (pos != std::string_view::npos) {
    const size_t body = pos + kHermesOpen.size();
    const size_t close = text.find(kHermesClose, body);
    // An unfinished last block (max_tokens cut it) is dropped after complete ones.
    if (close == std::string_view::npos) {
      if (calls.empty()) return std::nullopt;
      break;
    }
    auto call = call_from_json(Json::parse(trim(text.substr(body, close - body)), nullptr, false));
    if (!call) return std::nullopt;
    calls.push_back(std::move(*call));
    pos = text.find(kHermesOpen, close + kHermesClose.size());
    if (pos == std::string_view::npos && !trim(text.substr(close + kHermesClose.size())).empty()) return std::nullopt;
  }
  *content = std::string(text.substr(0, first));
  return calls;
}

std::optional<std::vector<ParsedToolCall>> parse_mistral(std::string_view text, std::string* content) {
  const size_t at = text.find(kMistralMarker);
  if (at == std::string_view::npos) return std::nullopt;
  const Json list = Json::parse(trim(text.substr(at + kMistralMarker.size())), nullptr, false);
  if (!list.is_array() || list.empty()) return std::nullopt;
  std::vector<ParsedToolCall> calls;
  for (const Json& j : list) {
    auto call = call_from_json(j);
    if (!call) return std::nullopt;
    calls.push_back(std::move(*call));
  }
  *content = std::string(text.substr(0, at));
  return calls;
}

std::optional<std::vector<ParsedToolCall>> parse_bare(std::string_view text, std::string* content) {
  const std::string_view t = trim(text);
  if (t.empty() || t.front() != '{') return std::nullopt;
  auto call = call_from_json(Json::parse(t, nullptr, false));
  if (!call) return std::nullopt;
  content->clear();
  return std::vector<ParsedToolCall>{std::move(*call)};
}

// The longest suffix of `text` that is a proper prefix of `marker`.
size_t partial_marker(std::string_view text, std::string_view marker) {
  for (size_t n = std::min(text.size(), marker.size() - 1); n > 0; --n) {
    if (text.substr(text.size() - n) == marker.substr(0, n)) return n;
  }
  return 0;
}

}  // namespace

const char* tool_call_format_name(ToolCallFormat f) {
  switch (f) {
    case ToolCallFormat::kHermes: return "hermes";
    case ToolCallFormat::kLlama3: return "llama3";
    case ToolCallFormat::kMistral: return "mistral";
  }
  return "hermes";
}

ToolCallFormat tool_call_format_for(std::string_view t) {
  const auto has = [&](std::string_view m) { return t.find(m) != std::string_view::npos; };
  if (has("[TOOL_CALLS]") || t == "mistral-v3" || t == "mistral-v3-tekken" || t == "mistral-v7") return ToolCallFormat::kMistral;
  if (has("<tool_call>")) return ToolCallFormat::kHermes;
  if (has("<|start_header_id|>") || t == "llama3") return ToolCallFormat::kLlama3;
  return ToolCallFormat::kHermes;
}

ParsedOutput parse_tool_calls(ToolCallFormat f, std::string_view text) {
  ParsedOutput out;
  std::optional<std::vector<ParsedToolCall>> calls;
  using Parser = std::optional<std::vector<ParsedToolCall>> (*)(std::string_view, std::string*);
  const Parser order[3] = {f == ToolCallFormat::kMistral  ? parse_mistral
                           : f == ToolCallFormat::kLlama3 ? parse_bare
                                                          : parse_hermes,
                           parse_hermes, parse_mistral};
  for (const Parser p : order) {
    if ((calls = p(text, &out.content))) break;
  }
  if (!calls) calls = parse_bare(text, &out.content);
  if (!calls) {
    out.content = std::string(text);
    return out;
  }
  out.calls = std::move(*calls);
  return out;
}

size_t tool_call_start(ToolCallFormat f, std::string_view text) {
  switch (f) {
    case ToolCallFormat::kHermes: return text.find(kHermesOpen);
    case ToolCallFormat::kMistral: return text.find(kMistralMarker);
    case ToolCallFormat::kLlama3: {
      const size_t b = text.find_first_not_of(" \t\r\n");
      return b != std::string_view::npos && text[b] == '{' ? b : std::string_view::npos;
    }
  }
  return std::string_view::npos;
}

size_t tool_call_hold_back(ToolCallFormat f, std::string_view text) {
  switch (f) {
    case ToolCallFormat::kHermes: return partial_marker(text, kHermesOpen);
    case ToolCallFormat::kMistral: return partial_marker(text, kMistralMarker);
    case ToolCallFormat::kLlama3: return text.find_first_not_of(" \t\r\n") == std::string_view::npos ? text.size() : 0;
  }
  return 0;
}

}  // namespace llms
