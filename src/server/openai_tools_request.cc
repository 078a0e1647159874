// tools, tool_choice, parallel_tool_calls and messages' tool_calls (openai_request.h).
#include <fmt/format.h>

#include <algorithm>

#include "server/openai_request.h"

namespace llms {
namespace {

bool valid_function_name(const std::string& n) {
  if (n.empty() || n.size() > 64) return false;
  return n.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == std::string::npos;
}

std::optional<ApiError> read_tool(const Json& t, ToolDefinition* out) {
  if (!t.is_object() || string_field(t, "type") != "function" || !t.contains("function") || !t.at("function").is_object()) {
    return bad_request("each tool must be {\"type\": \"function\", \"function\": {...}}", "tools");
  }
  const Json& f = t.at("function");
  for (const auto& [k, v] : f.items()) {
    if (k != "name" && k != "description" && k != "parameters" && k != "strict") {
      return bad_request(fmt::format("'tools[].function.{}' is not supported (fields: name, description, parameters, "
                                     "strict)",
                                     k),
                         "tools");
    }
  }
  if (!f.contains("name") || !f.at("name").is_string() || !valid_function_name(f.at("name").get<std::string>())) {
    return bad_request("'tools[].function.name' must be 1-64 characters of a-z, A-Z, 0-9, _ and -", "tools");
  }
  out->name = f.at("name").get<std::string>();
  if (f.contains("description") && !f.at("description").is_null()) {
    if (!f.at("description").is_string()) return bad_request("'tools[].function.description' must be a string", "tools");
    out->description = f.at("description").get<std::string>();
  }
  out->parameters = Json::object();
  if (f.contains("parameters") && !f.at("parameters").is_null()) {
    if (!f.at("parameters").is_object()) return bad_request("'tools[].function.parameters' must be a JSON Schema object", "tools");
    out->parameters = f.at("parameters");
  }
  out->raw = t;
  return std::nullopt;
}

std::optional<ApiError> read_tool_choice(const Json& b, ToolRequest* r) {
  r->choice = r->tools.empty() ? ToolChoice::kNone : ToolChoice::kAuto;
  if (!has_field(b, "tool_choice")) return std::nullopt;
  const Json& c = b.at("tool_choice");
  if (c.is_string()) {
    const std::string s = c.get<std::string>();
    if (s == "none") {
      r->choice = ToolChoice::kNone;
    } else if (s == "auto") {
      r->choice = ToolChoice::kAuto;
    } else if (s == "required") {
      r->choice = ToolChoice::kRequired;
    } else {
      return bad_request(fmt::format("'tool_choice' must be none, auto, required or a function, got '{}'", s), "tool_choice");
    }
  } else if (c.is_object() && string_field(c, "type") == "function" && c.contains("function") && c.at("function").is_object() &&
             c.at("function").contains("name") && c.at("function").at("name").is_string()) {
    r->choice = ToolChoice::kNamed;
    r->named = c.at("function").at("name").get<std::string>();
    const bool known = std::any_of(r->tools.begin(), r->tools.end(), [&](const ToolDefinition& t) { return t.name == r->named; });
    if (!known) return bad_request(fmt::format("'tool_choice' names the function '{}', which is not in 'tools'", r->named), "tool_choice");
  } else {
    return bad_request("'tool_choice' must be none, auto, required or {\"type\": \"function\", \"function\": {\"name\": ...}}",
                       "tool_choice");
  }
  if (r->choice != ToolChoice::kNone && r->tools.empty()) {
    return bad_request("'tool_choice' other than none needs 'tools'", "tool_choice");
  }
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> parse_tools(const Json& b, ApiKind kind, ToolRequest* r) {
  const bool any = has_field(b, "tools") || has_field(b, "tool_choice") || has_field(b, "parallel_tool_calls");
  if (kind == ApiKind::kCompletion) {
    if (any) return bad_request("'tools' and 'tool_choice' are chat parameters", has_field(b, "tools") ? "tools" : "tool_choice");
    return std::nullopt;
  }
  if (has_field(b, "tools")) {
    const Json& tools = b.at("tools");
    if (!tools.is_array()) return bad_request("'tools' must be a list", "tools");
    if (tools.size() > 128) return bad_request("'tools' holds more than 128 functions", "tools");
    for (const Json& t : tools) {
      ToolDefinition d;
      LLMS_API_TRY(read_tool(t, &d));
      for (const ToolDefinition& o : r->tools) {
        if (o.name == d.name) return bad_request(fmt::format("'tools' defines '{}' twice", d.name), "tools");
      }
      r->tools.push_back(std::move(d));
    }
  }
  LLMS_API_TRY(read_bool(b, "parallel_tool_calls", &r->parallel));
  return read_tool_choice(b, r);
}

std::optional<ApiError> parse_message_tool_calls(const Json& m, ChatMessage* msg) {
  if (!m.contains("tool_calls") || m.at("tool_calls").is_null()) return std::nullopt;
  const Json& calls = m.at("tool_calls");
  if (msg->role != "assistant") return bad_request("only assistant messages carry 'tool_calls'", "messages");
  if (!calls.is_array()) return bad_request("message 'tool_calls' must be a list", "messages");
  for (const Json& c : calls) {
    const bool ok = c.is_object() && c.contains("id") && c.at("id").is_string() && string_field(c, "type", "function") == "function" &&
                    c.contains("function") && c.at("function").is_object() && c.at("function").contains("name") &&
                    c.at("function").at("name").is_string() && c.at("function").contains("arguments") &&
                    c.at("function").at("arguments").is_string();
    if (!ok) {
      return bad_request("each message tool call must be {\"id\", \"type\": \"function\", \"function\": {\"name\", "
                         "\"arguments\": a JSON string}}",
                         "messages");
    }
    msg->tool_calls.push_back(ChatToolCall{c.at("id").get<std::string>(), c.at("function").at("name").get<std::string>(),
                                           c.at("function").at("arguments").get<std::string>()});
  }
  return std::nullopt;
}

}  // namespace llms
