// The prompt half of tool_calls.h: tools, calls and results written into the
// messages the way each format's published chat templates write them.
#include <fmt/format.h>

#include "server/tool_calls.h"

namespace llms {
namespace {

// Python's json.dumps (what Hugging Face templates' tojson writes): ", " and ": "
// separators, non-ASCII kept.
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

// A call's arguments as JSON (they were checked to be a JSON string, not to parse).
Json arguments_json(const ChatToolCall& c) {
  Json a = Json::parse(c.arguments, nullptr, false);
  return a.is_discarded() ? Json(c.arguments) : a;
}

ChatMessage message(std::string role, std::string content) {
  ChatMessage m;
  m.role = std::move(role);
  m.content = std::move(content);
  return m;
}

// Puts `text` into the leading system message, making one when there is none.
void add_to_system(std::vector<ChatMessage>& out, const std::string& text) {
  if (!out.empty() && out[0].role == "system") {
    out[0].content += "\n\n" + text;
  } else {
    out.insert(out.begin(), message("system", text));
  }
}

// Hermes / Qwen 2.5: the tools in the system message inside <tools>, each call a
// <tool_call> block after the assistant's text, each result a <tool_response> block
// in a user turn (one turn for consecutive results).
std::vector<ChatMessage> hermes(const std::vector<ChatMessage>& messages, const ToolRequest& r) {
  std::vector<ChatMessage> out;
  bool last_was_result = false;
  for (const ChatMessage& in : messages) {
    ChatMessage m = in;
    for (const ChatToolCall& c : in.tool_calls) {
      if (!m.content.empty()) m.content += "\n";
      m.content += "<tool_call>\n" + python_json(Json{{"name", c.name}, {"arguments", arguments_json(c)}}) + "\n</tool_call>";
    }
    const bool result = m.role == "tool";
    if (result) {
      m = message("user", "<tool_response>\n" + in.content + "\n</tool_response>");
      if (last_was_result) {
        out.back().content += "\n" + m.content;
        continue;
      }
    }
    last_was_result = result;
    out.push_back(std::move(m));
  }
  if (r.active()) {
    std::string list;
    for (const ToolDefinition& t : r.tools) list += "\n" + tool_json(t);
    add_to_system(out, "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
                       "You are provided with function signatures within <tools></tools> XML tags:\n<tools>" +
                           list +
                           "\n</tools>\n\nFor each function call, return a json object with function name and arguments "
                           "within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, "
                           "\"arguments\": <args-json-object>}\n</tool_call>");
  }
  return out;
}

// Llama 3.1: the tools at the start of the first user message, a call as the
// assistant's whole JSON answer, results in "ipython" turns.
std::vector<ChatMessage> llama3(const std::vector<ChatMessage>& messages, const ToolRequest& r) {
  std::vector<ChatMessage> out;
  bool told = !r.active();
  for (const ChatMessage& in : messages) {
    ChatMessage m = in;
    if (!in.tool_calls.empty()) {
      const ChatToolCall& c = in.tool_calls[0];  // the template writes one call per turn
      m.content = python_json(Json{{"name", c.name}, {"parameters", arguments_json(c)}});
    }
    if (m.role == "tool") m.role = "ipython";
    if (!told && m.role == "user") {
      std::string list;
      for (const ToolDefinition& t : r.tools) list += tool_json(t) + "\n\n";
      m.content = "Given the following functions, please respond with a JSON for a function call with its proper "
                  "arguments that best answers the given prompt.\n\nRespond in the format {\"name\": function name, "
                  "\"parameters\": dictionary of argument name and its value}. Do not use variables.\n\n" +
                  list + m.content;
      told = true;
    }
    out.push_back(std::move(m));
  }
  return out;
}

// Mistral v3+: calls as [TOOL_CALLS] and a list; results stay tool messages, which
// the mistral templates write as [TOOL_RESULTS]; the tools join the system text.
std::vector<ChatMessage> mistral(const std::vector<ChatMessage>& messages, const ToolRequest& r) {
  std::vector<ChatMessage> out;
  for (const ChatMessage& in : messages) {
    ChatMessage m = in;
    if (!in.tool_calls.empty()) {
      Json list = Json::array();
      for (const ChatToolCall& c : in.tool_calls) list.push_back({{"name", c.name}, {"arguments", arguments_json(c)}});
      m.content = "[TOOL_CALLS] " + python_json(list);
    }
    out.push_back(std::move(m));
  }
  if (r.active()) {
    Json tools = Json::array();
    for (const ToolDefinition& t : r.tools) tools.push_back(Json::parse(tool_json(t)));
    add_to_system(out, "[AVAILABLE_TOOLS] " + python_json(tools) + "[/AVAILABLE_TOOLS]");
  }
  return out;
}

}  // namespace

std::vector<ChatMessage> tools_as_text(const std::vector<ChatMessage>& messages, const ToolRequest& r, ToolCallFormat f) {
  std::vector<ChatMessage> out = f == ToolCallFormat::kLlama3    ? llama3(messages, r)
                                 : f == ToolCallFormat::kMistral ? mistral(messages, r)
                                                                 : hermes(messages, r);
  for (ChatMessage& m : out) {
    m.tool_calls.clear();
    m.content_null = false;
  }
  return out;
}

}  // namespace llms
