// The interface every chat format implements, and the registry that lists them. A
// model family lives in one file of chat/formats/ (chatml.cc, llama.cc, mistral.cc,
// ...) that defines what this header declares for it:
//
//   TemplateFamily  a hand-written template: the name --chat-template accepts, the
//                   markers that recognise its published Jinja source, its default
//                   BOS/EOS texts, and its renderer (messages → prompt text);
//   ToolSyntax      a tool-call format: which templates write it (detect), the
//                   tools, calls and results written into the messages (render), the
//                   grammar of the assistant's output, the parser of that output, and
//                   where a call starts in a stream (stream).
//
// chat_template.h and tool_calls.h are the public faces; they look a family or a
// format up here. Adding a family: its file here, its line in registry.cc's tables,
// its enum value (ChatTemplateKind, or ToolCallFormat for a new call format), and its
// file in src/chat/CMakeLists.txt. Internal to the chat module.
//
// Thread-safety: immutable tables of pure functions.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "chat/chat_template.h"
#include "chat/tool_calls.h"
#include "grammar/grammar_builder.h"
#include "grammar/json_schema.h"

namespace llms::chat {

using Messages = std::vector<ChatMessage>;

// Special-token texts after the family defaults were filled in.
struct Tokens {
  std::string bos;
  std::string eos;
};

struct TemplateFamily {
  ChatTemplateKind kind;
  std::string_view name;   // what --chat-template accepts
  std::string_view alias;  // another accepted name, or ""
  std::string_view bos;    // defaults when the caller names no tokens
  std::string_view eos;
  // Whether a Jinja source is this family's published template, by the markers only
  // it writes. Families are tried in the order of registry.cc (several share "[INST]").
  bool (*matches)(std::string_view source);
  // The published template's output, its whitespace and its errors included (e.g.
  // roles that must alternate).
  Result<std::string> (*render)(const Messages& m, bool add_generation_prompt, const Tokens& t);
};

struct ToolSyntax {
  ToolCallFormat format;
  std::string_view name;
  // detect: whether the chat template (a family name or a Jinja source) has the model
  // write its calls this way. Formats are tried in the order of registry.cc.
  bool (*detect)(std::string_view template_name_or_source);
  // render: for templates that cannot render tools, the tool list, the assistant's
  // calls and the tool results written into the messages as this format's published
  // templates write them (tool_calls are cleared afterwards by the caller).
  Messages (*render)(const Messages& messages, const ToolRequest& r);
  // grammar: the root of the assistant's output under `r` (r.active()), its rules
  // declared in `b`, the arguments compiled by `c`.
  Result<GrammarExpr> (*grammar)(GrammarBuilder& b, JsonSchemaCompiler& c, const ToolRequest& r);
  // parse: the calls in `text` and, in *content, the text before them; nullopt when
  // the text holds no well-formed call in this format.
  std::optional<std::vector<ParsedToolCall>> (*parse)(std::string_view text, std::string* content);
  // stream: where the first call starts (npos: not yet), and how many bytes at the
  // end may still turn out to start one.
  size_t (*call_start)(std::string_view text);
  size_t (*hold_back)(std::string_view text);
};

// The registry (registry.cc). Families in the order their markers are tried.
std::span<const TemplateFamily* const> template_families();
const TemplateFamily& template_family(ChatTemplateKind kind);
// Formats in the order templates are matched against them; a template none of them
// claims gets default_tool_syntax().
std::span<const ToolSyntax* const> tool_syntaxes();
const ToolSyntax& default_tool_syntax();
const ToolSyntax& tool_syntax(ToolCallFormat format);
// Output that does not parse in its template's format is tried in these next (then
// as a bare call object).
std::span<const ToolSyntax* const> tool_parse_fallbacks();

}  // namespace llms::chat
