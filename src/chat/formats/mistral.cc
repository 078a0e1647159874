// Mistral's chat templates, and its tool-call format (v3 and later):
//   mistral-v1         Mistral/Mixtral v0.1-v0.2: <s> [INST] ... [/INST] ...</s> (alias: mistral)
//   mistral-v3         Mistral v0.3, Mixtral-8x22B: <s>[INST] ...[/INST] ...</s>
//   mistral-v3-tekken  Mistral-Nemo: <s>[INST]...[/INST]...</s>
//   mistral-v7         Mistral-Large-2411: [SYSTEM_PROMPT] ...[/SYSTEM_PROMPT]
//   tools              [TOOL_CALLS] [{"name": "f", "arguments": {...}}, ...]; results as
//                      [TOOL_RESULTS] {"content": ..., "call_id": ...}[/TOOL_RESULTS]
#include <fmt/format.h>

#include "base/log.h"
#include "chat/formats/format.h"
#include "chat/formats/template_util.h"
#include "chat/formats/tool_util.h"

namespace llms::chat {
namespace {

constexpr std::string_view kMarker = "[TOOL_CALLS]";
constexpr std::string_view kAlternateAfterSystem =
    "After the optional system message, conversation roles must alternate user/assistant/user/assistant/...";
constexpr std::string_view kOnlyUserAssistant =
    "Only user and assistant roles are supported, with the exception of an initial optional system message!";

// A JSON string literal (what tojson writes for a string; non-ASCII kept).
std::string json_quote(std::string_view s) {
  std::string out = "\"";
  out += json_escape(s);
  return out + '"';
}

// A tool result: [TOOL_RESULTS] {"content": ..., "call_id": ...}[/TOOL_RESULTS].
std::string tool_results(const ChatMessage& msg) {
  std::string body = "{\"content\": " + json_quote(msg.content);
  if (!msg.tool_call_id.empty()) body += ", \"call_id\": " + json_quote(msg.tool_call_id);
  return "[TOOL_RESULTS] " + body + "}[/TOOL_RESULTS]";
}

Result<std::string> render_v1(const Messages& m, bool, const Tokens& t) {
  const SystemSplit s = split_system(m);
  LLMS_RETURN_IF_ERROR(check_alternation(s.rest, kAlternateAfterSystem));
  std::string out = t.bos;
  for (size_t i = 0; i < s.rest.size(); ++i) {
    const ChatMessage& msg = s.rest[i];
    if (msg.role == "user") {
      const std::string prefix = (i == 0 && s.has_system) ? std::string(s.system) + "\n\n" : "";
      out += " [INST] " + prefix + msg.content + " [/INST]";
    } else if (msg.role == "assistant") {
      out += " " + msg.content + t.eos;
    } else {
      return invalid_argument(std::string(kOnlyUserAssistant));
    }
  }
  return out;
}

Result<std::string> render_v3(const Messages& m, const Tokens& t, bool tekken) {
  const SystemSplit s = split_system(m);
  LLMS_RETURN_IF_ERROR(check_alternation(s.rest, kAlternateAfterSystem, /*skip_tools=*/true));
  const std::string inst = tekken ? "[INST]" : "[INST] ";
  std::string out = t.bos;
  for (size_t i = 0; i < s.rest.size(); ++i) {
    const ChatMessage& msg = s.rest[i];
    if (msg.role == "user") {
      // The system text joins the last message, and only when that one is the user's.
      const bool last = i + 1 == s.rest.size();
      const std::string prefix = (last && s.has_system) ? std::string(s.system) + "\n\n" : "";
      out += inst + prefix + msg.content + "[/INST]";
    } else if (msg.role == "assistant") {
      if (tekken) {
        append(out, {msg.content, t.eos});
      } else {
        append(out, {" ", strip(msg.content), t.eos});
      }
    } else if (msg.role == "tool" || msg.role == "tool_results") {
      out += tool_results(msg);
    } else {
      return invalid_argument(std::string(kOnlyUserAssistant));
    }
  }
  return out;
}

Result<std::string> render_v7(const Messages& m, bool, const Tokens& t) {
  std::string out = t.bos;
  for (const ChatMessage& msg : m) {
    if (msg.role == "user") {
      out += "[INST] " + msg.content + "[/INST]";
    } else if (msg.role == "system") {
      out += "[SYSTEM_PROMPT] " + msg.content + "[/SYSTEM_PROMPT]";
    } else if (msg.role == "assistant") {
      out += " " + msg.content + t.eos;
    } else if (msg.role == "tool") {
      out += tool_results(msg);
    } else {
      return invalid_argument("Only user, system and assistant roles are supported!");
    }
  }
  return out;
}

// v3's two spellings: Mistral-Nemo's (tekken) writes "[INST]" + text, no space.
bool is_tekken(std::string_view src) { return has(src, "\"[INST]\" +") || has(src, "'[INST]' +"); }

// Calls as [TOOL_CALLS] and a list; results stay tool messages, which the templates
// above write as [TOOL_RESULTS]; the tools join the system text.
Messages render_tools(const Messages& messages, const ToolRequest& r) {
  Messages out;
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

Result<GrammarExpr> grammar(GrammarBuilder& b, JsonSchemaCompiler& c, const ToolRequest& r) {
  const GrammarExpr ws = GrammarExpr::ref(c.whitespace());
  LLMS_ASSIGN_OR_RETURN(GrammarExpr call, any_call(b, c, r, "arguments"));
  std::vector<GrammarExpr> list{GrammarExpr::optional(GrammarExpr::lit(" ")), GrammarExpr::lit("["), ws, call};
  if (r.parallel) list.push_back(GrammarExpr::star(GrammarExpr::seq({ws, GrammarExpr::lit(","), ws, call})));
  list.push_back(ws);
  list.push_back(GrammarExpr::lit("]"));
  return marker_root(b, r, kMarker, GrammarExpr::seq(std::move(list)));
}

std::optional<std::vector<ParsedToolCall>> parse(std::string_view text, std::string* content) {
  const size_t at = text.find(kMarker);
  if (at == std::string_view::npos) return std::nullopt;
  const Json list = Json::parse(trim(text.substr(at + kMarker.size())), nullptr, false);
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

}  // namespace

extern const TemplateFamily kMistralV1Family = {
    ChatTemplateKind::kMistralV1, "mistral-v1", "mistral", "<s>", "</s>",
    [](std::string_view src) { return has(src, "[INST]"); },
    render_v1,
};

extern const TemplateFamily kMistralV3Family = {
    ChatTemplateKind::kMistralV3, "mistral-v3", "", "<s>", "</s>",
    [](std::string_view src) { return has(src, "[INST]") && has(src, "[AVAILABLE_TOOLS]"); },
    [](const Messages& m, bool, const Tokens& t) { return render_v3(m, t, /*tekken=*/false); },
};

extern const TemplateFamily kMistralV3TekkenFamily = {
    ChatTemplateKind::kMistralV3Tekken, "mistral-v3-tekken", "", "<s>", "</s>",
    [](std::string_view src) { return has(src, "[INST]") && has(src, "[AVAILABLE_TOOLS]") && is_tekken(src); },
    [](const Messages& m, bool, const Tokens& t) { return render_v3(m, t, /*tekken=*/true); },
};

extern const TemplateFamily kMistralV7Family = {
    ChatTemplateKind::kMistralV7, "mistral-v7", "", "<s>", "</s>",
    [](std::string_view src) { return has(src, "[INST]") && has(src, "[SYSTEM_PROMPT]"); },
    render_v7,
};

extern const ToolSyntax kMistralTools = {
    ToolCallFormat::kMistral,
    "mistral",
    [](std::string_view t) {
      return has(t, kMarker) || t == "mistral-v3" || t == "mistral-v3-tekken" || t == "mistral-v7";
    },
    render_tools,
    grammar,
    parse,
    [](std::string_view text) { return text.find(kMarker); },
    [](std::string_view text) { return partial_marker(text, kMarker); },
};

}  // namespace llms::chat
