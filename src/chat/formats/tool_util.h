// What the tool-call formats share: the JSON text their templates write (Python's
// json.dumps), a call read from {"name", "arguments"|"parameters"}, the grammar of
// one call and of free text around a marker, and the partial-marker check of
// streaming. Internal to chat/formats.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/formats/format.h"

namespace llms::chat {

using Json = nlohmann::ordered_json;

// --- render ---
// Python's json.dumps (what Hugging Face templates' tojson writes): ", " and ": "
// separators, non-ASCII kept.
std::string python_json(const Json& j);
// {"type": "function", "function": {"name", "description"?, "parameters"}} as python_json.
std::string tool_json(const ToolDefinition& t);
// A call's arguments as JSON (they were checked to be a JSON string, not to parse).
Json arguments_json(const ChatToolCall& c);
// Puts `text` into the leading system message, making one when there is none.
void add_to_system(Messages& out, const std::string& text);

// --- grammar ---
// {"name": "f", "<args_key>": <arguments>} for each function `r` allows.
Result<GrammarExpr> any_call(GrammarBuilder& b, JsonSchemaCompiler& c, const ToolRequest& r, std::string_view args_key);
// The root for a format whose calls follow `marker`: only the calls under
// required/named; under auto, text without the marker, then optionally the calls.
GrammarExpr marker_root(GrammarBuilder& b, const ToolRequest& r, std::string_view marker, GrammarExpr calls);

// --- parse ---
// ASCII whitespace trimmed at both ends.
std::string_view trim(std::string_view s);
// {"name": "f", "arguments"|"parameters": {...}} → a call.
std::optional<ParsedToolCall> call_from_json(const Json& j);
// The whole text (trimmed) as one such object: a call and no content.
std::optional<std::vector<ParsedToolCall>> parse_bare_call(std::string_view text, std::string* content);

// --- stream ---
// The longest suffix of `text` that is a proper prefix of `marker`.
size_t partial_marker(std::string_view text, std::string_view marker);

}  // namespace llms::chat
