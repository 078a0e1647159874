// Tool calling: the output format a model family writes its calls in, the grammar
// that constrains the assistant's output under `tools`, the parser that turns the
// output back into OpenAI tool_calls, and a text rendering of tools for chat
// templates that cannot render them.
//
// Formats (by the chat template's markers), each in one file of chat/formats/ with
// its rendering, detection, grammar, parsing and streaming (formats/format.h):
//   hermes   <tool_call>{"name": "f", "arguments": {...}}</tool_call>, one block per
//            call (Qwen 2.5, Hermes 2/3, ChatML templates; also the generic fallback)
//   llama3   {"name": "f", "parameters": {...}}, the whole output (Llama 3.1-3.3)
//   mistral  [TOOL_CALLS] [{"name": "f", "arguments": {...}}, ...] (Mistral v3+)
// Markers are matched as text; a marker that is a control token in the vocabulary is
// written with ordinary tokens under the grammar.
//
// tool_choice: required/named → the output is only calls (named: of that function);
// auto → free text, and once the format's marker appears (llama3: a leading '{') the
// rest is calls; the arguments always follow the function's parameter schema.
// parallel_tool_calls false → exactly one call (llama3 always writes one).
//
// Thread-safety: pure functions.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "chat/chat_template.h"
#include "chat/tool_request.h"
#include "grammar/grammar.h"
#include "grammar/grammar_builder.h"

namespace llms {

enum class ToolCallFormat { kHermes, kLlama3, kMistral };

// From a template name or Jinja source ("" and "plain": hermes).
ToolCallFormat tool_call_format_for(std::string_view template_name_or_source);

// The grammar of the assistant's output under `r` (r.active() must hold). Errors
// (a parameter schema the compiler refuses) name the function; past `limits` (its
// meter included) they are the builder's.
Result<std::shared_ptr<const Grammar>> tool_call_grammar(const ToolRequest& r, ToolCallFormat f,
                                                         const GrammarLimits& limits = {});

struct ParsedToolCall {
  std::string name;
  std::string arguments;  // JSON text of the arguments object
};

struct ParsedOutput {
  std::string content;                // text outside the calls
  std::vector<ParsedToolCall> calls;  // empty: a plain answer
};

// Reads calls in format `f`, falling back to the others and to a bare
// {"name", "arguments"|"parameters"} object. Output that holds no well-formed call is
// all content. Hermes blocks after the last closed one (a cut answer) are dropped.
ParsedOutput parse_tool_calls(ToolCallFormat f, std::string_view text);

// An answer cut short (max_tokens) read as its stream sends it (ToolCallStreamer):
// the text before the first call's marker is content, and every call the marker
// starts is a call — the last one with the arguments written so far, so not always
// whole JSON; with no call whose name is complete, it is all content. A whole answer
// and its stream thus report a cut call alike.
ParsedOutput parse_cut_tool_calls(ToolCallFormat f, std::string_view text);

// Streaming: where the first call starts in `text` (npos: not yet), and how many
// bytes at the end may still turn out to start one (held back from content deltas).
size_t tool_call_start(ToolCallFormat f, std::string_view text);
size_t tool_call_hold_back(ToolCallFormat f, std::string_view text);

// For templates without tool support: the tool list and the call format go into
// the system message, assistant calls become text in the format, tool results
// become user turns wrapped in <tool_response>.
std::vector<ChatMessage> tools_as_text(const std::vector<ChatMessage>& messages, const ToolRequest& r, ToolCallFormat f);

}  // namespace llms
