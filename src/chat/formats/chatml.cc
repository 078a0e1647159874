// ChatML (Qwen, OpenHermes, Yi, ...): <|im_start|>role\n...<|im_end|>\n, and the
// Hermes tool-call format Qwen 2.5 and Hermes 2/3 write in it (also the format of
// templates that name none):
//   <tool_call>{"name": "f", "arguments": {...}}</tool_call>, one block per call.
#include "chat/formats/format.h"
#include "chat/formats/template_util.h"
#include "chat/formats/tool_util.h"

namespace llms::chat {
namespace {

constexpr std::string_view kOpen = "<tool_call>";
constexpr std::string_view kClose = "</tool_call>";

Result<std::string> render_chatml(const Messages& m, bool gen, const Tokens&) {
  std::string out;
  for (const ChatMessage& msg : m) out += "<|im_start|>" + msg.role + "\n" + msg.content + "<|im_end|>\n";
  if (gen) out += "<|im_start|>assistant\n";
  return out;
}

// The tools in the system message inside <tools>, each call a <tool_call> block after
// the assistant's text, each result a <tool_response> block in a user turn (one turn
// for consecutive results).
Messages render_tools(const Messages& messages, const ToolRequest& r) {
  Messages out;
  bool last_was_result = false;
  for (const ChatMessage& in : messages) {
    ChatMessage m = in;
    for (const ChatToolCall& c : in.tool_calls) {
      if (!m.content.empty()) m.content += "\n";
      m.content += "<tool_call>\n" + python_json(Json{{"name", c.name}, {"arguments", arguments_json(c)}}) + "\n</tool_call>";
    }
    const bool result = m.role == "tool";
    if (result) {
      m = ChatMessage("user", "<tool_response>\n" + in.content + "\n</tool_response>");
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
    for (const ToolDefinition& t : r.tools) append(list, {"\n", tool_json(t)});
    add_to_system(out, "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
                       "You are provided with function signatures within <tools></tools> XML tags:\n<tools>" +
                           list +
                           "\n</tools>\n\nFor each function call, return a json object with function name and arguments "
                           "within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, "
                           "\"arguments\": <args-json-object>}\n</tool_call>");
  }
  return out;
}

Result<GrammarExpr> grammar(GrammarBuilder& b, JsonSchemaCompiler& c, const ToolRequest& r) {
  const GrammarExpr ws = GrammarExpr::ref(c.whitespace());
  LLMS_ASSIGN_OR_RETURN(GrammarExpr call, any_call(b, c, r, "arguments"));
  const GrammarExpr body = GrammarExpr::seq({ws, call, ws, GrammarExpr::lit(kClose)});
  if (!r.parallel) return marker_root(b, r, kOpen, body);
  const GrammarExpr more = GrammarExpr::star(GrammarExpr::seq({ws, GrammarExpr::lit(kOpen), body}));
  return marker_root(b, r, kOpen, GrammarExpr::seq({body, more}));
}

// Blocks after the last closed one (a cut answer) are dropped.
std::optional<std::vector<ParsedToolCall>> parse(std::string_view text, std::string* content) {
  const size_t first = text.find(kOpen);
  if (first == std::string_view::npos) return std::nullopt;
  std::vector<ParsedToolCall> calls;
  size_t pos = first;
  while (pos != std::string_view::npos) {
    const size_t body = pos + kOpen.size();
    const size_t close = text.find(kClose, body);
    // An unfinished last block (max_tokens cut it) is dropped after complete ones.
    if (close == std::string_view::npos) {
      if (calls.empty()) return std::nullopt;
      break;
    }
    auto call = call_from_json(Json::parse(trim(text.substr(body, close - body)), nullptr, false));
    if (!call) return std::nullopt;
    calls.push_back(std::move(*call));
    pos = text.find(kOpen, close + kClose.size());
    if (pos == std::string_view::npos && !trim(text.substr(close + kClose.size())).empty()) return std::nullopt;
  }
  *content = std::string(text.substr(0, first));
  return calls;
}

}  // namespace

extern const TemplateFamily kChatMlFamily = {
    ChatTemplateKind::kChatMl, "chatml", "", "", "<|im_end|>",
    [](std::string_view src) { return has(src, "<|im_start|>"); },
    render_chatml,
};

extern const ToolSyntax kHermesTools = {
    ToolCallFormat::kHermes,
    "hermes",
    [](std::string_view t) { return has(t, kOpen); },
    render_tools,
    grammar,
    parse,
    [](std::string_view text) { return text.find(kOpen); },
    [](std::string_view text) { return partial_marker(text, kOpen); },
};

}  // namespace llms::chat
