// The public face of the tool-call formats: each call looks its format up in the
// registry (formats/format.h) and runs that format's part.
#include "chat/tool_calls.h"

#include "chat/tool_call_stream.h"

#include "chat/formats/format.h"
#include "chat/formats/tool_util.h"
#include "grammar/json_schema.h"

namespace llms {

ToolCallFormat tool_call_format_for(std::string_view t) {
  for (const chat::ToolSyntax* s : chat::tool_syntaxes()) {
    if (s->detect(t)) return s->format;
  }
  return chat::default_tool_syntax().format;
}

Result<std::shared_ptr<const Grammar>> tool_call_grammar(const ToolRequest& r, ToolCallFormat f,
                                                         const GrammarLimits& limits) {
  GrammarBuilder b(limits);
  const int32_t root = b.declare("root");
  JsonSchemaCompiler c(b);
  LLMS_ASSIGN_OR_RETURN(GrammarExpr body, chat::tool_syntax(f).grammar(b, c, r));
  b.define(root, std::move(body));
  auto g = b.build(root);
  if (!g.ok()) return g.status().with_context("tools");
  return std::make_shared<const Grammar>(std::move(g).value());
}

ParsedOutput parse_tool_calls(ToolCallFormat f, std::string_view text) {
  ParsedOutput out;
  std::optional<std::vector<ParsedToolCall>> calls = chat::tool_syntax(f).parse(text, &out.content);
  for (const chat::ToolSyntax* s : chat::tool_parse_fallbacks()) {
    if (calls) break;
    calls = s->parse(text, &out.content);
  }
  if (!calls) calls = chat::parse_bare_call(text, &out.content);
  if (!calls) {
    out.content = std::string(text);
    return out;
  }
  out.calls = std::move(*calls);
  return out;
}

ParsedOutput parse_cut_tool_calls(ToolCallFormat f, std::string_view text) {
  ParsedOutput out;
  const size_t start = tool_call_start(f, text);
  if (start != std::string_view::npos) {
    ToolCallStreamer streamer;
    for (ToolCallDelta& d : streamer.feed(text.substr(start))) {
      if (d.head) {
        out.calls.push_back(ParsedToolCall{std::move(d.name), ""});
      } else if (!out.calls.empty()) {
        out.calls.back().arguments += d.arguments;
      }
    }
  }
  out.content = std::string(out.calls.empty() ? text : text.substr(0, start));
  return out;
}

size_t tool_call_start(ToolCallFormat f, std::string_view text) { return chat::tool_syntax(f).call_start(text); }

size_t tool_call_hold_back(ToolCallFormat f, std::string_view text) { return chat::tool_syntax(f).hold_back(text); }

std::vector<ChatMessage> tools_as_text(const std::vector<ChatMessage>& messages, const ToolRequest& r, ToolCallFormat f) {
  std::vector<ChatMessage> out = chat::tool_syntax(f).render(messages, r);
  for (ChatMessage& m : out) {
    m.tool_calls.clear();
    m.content_null = false;
  }
  return out;
}

}  // namespace llms
