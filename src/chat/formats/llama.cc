// Meta's Llama chat templates, and the Llama 3.1-3.3 tool-call format:
//   llama2  Llama-2-chat: <s>[INST] <<SYS>>\n...\n<</SYS>>\n\n... [/INST]
//   llama3  Llama-3 instruct: <|start_header_id|>role<|end_header_id|>\n\n...<|eot_id|>
//           (any role's header is written: tool results come as "ipython")
//   tools   {"name": "f", "parameters": {...}}, the assistant's whole output.
#include "chat/formats/format.h"
#include "chat/formats/template_util.h"
#include "chat/formats/tool_util.h"

namespace llms::chat {
namespace {

Result<std::string> render_llama2(const Messages& m, bool, const Tokens& t) {
  const SystemSplit s = split_system(m);
  LLMS_RETURN_IF_ERROR(check_alternation(s.rest, kAlternate));
  std::string out;
  for (size_t i = 0; i < s.rest.size(); ++i) {
    const ChatMessage& msg = s.rest[i];
    std::string content = msg.content;
    if (i == 0 && s.has_system) content = "<<SYS>>\n" + std::string(s.system) + "\n<</SYS>>\n\n" + content;
    if (msg.role == "user") {
      append(out, {t.bos, "[INST] ", strip(content), " [/INST]"});
    } else if (msg.role == "assistant") {
      append(out, {" ", strip(content), " ", t.eos});
    }
  }
  return out;
}

Result<std::string> render_llama3(const Messages& m, bool gen, const Tokens& t) {
  std::string out;
  for (size_t i = 0; i < m.size(); ++i) {
    if (i == 0) out += t.bos;
    out += "<|start_header_id|>" + m[i].role + "<|end_header_id|>\n\n" + strip(m[i].content) + "<|eot_id|>";
  }
  if (gen) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
  return out;
}

// Llama 3.1: the tools at the start of the first user message, a call as the
// assistant's whole JSON answer, results in "ipython" turns.
Messages render_tools(const Messages& messages, const ToolRequest& r) {
  Messages out;
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

// One call, the whole output; under auto, free text that does not start with '{'.
Result<GrammarExpr> grammar(GrammarBuilder& b, JsonSchemaCompiler& c, const ToolRequest& r) {
  LLMS_ASSIGN_OR_RETURN(GrammarExpr call, any_call(b, c, r, "parameters"));
  const GrammarExpr only_calls = GrammarExpr::seq({GrammarExpr::lit(""), std::move(call)});
  if (r.choice != ToolChoice::kAuto) return only_calls;
  ByteSet not_brace;
  ByteSet any;
  any.set_range(0, 255);
  for (int x = 0; x < 256; ++x) {
    if (x != '{') not_brace.set(static_cast<uint8_t>(x));
  }
  const GrammarExpr text = GrammarExpr::seq({GrammarExpr::byte_set(not_brace), GrammarExpr::star(GrammarExpr::byte_set(any))});
  return GrammarExpr::alt({GrammarExpr::empty(), text, only_calls});
}

size_t call_start(std::string_view text) {
  const size_t b = text.find_first_not_of(" \t\r\n");
  return b != std::string_view::npos && text[b] == '{' ? b : std::string_view::npos;
}

size_t hold_back(std::string_view text) {
  return text.find_first_not_of(" \t\r\n") == std::string_view::npos ? text.size() : 0;
}

}  // namespace

extern const TemplateFamily kLlama2Family = {
    ChatTemplateKind::kLlama2, "llama2", "", "<s>", "</s>",
    [](std::string_view src) { return has(src, "[INST]") && has(src, "<<SYS>>"); },
    render_llama2,
};

extern const TemplateFamily kLlama3Family = {
    ChatTemplateKind::kLlama3, "llama3", "", "<|begin_of_text|>", "<|eot_id|>",
    [](std::string_view src) { return has(src, "<|start_header_id|>") && has(src, "<|end_header_id|>"); },
    render_llama3,
};

extern const ToolSyntax kLlama3Tools = {
    ToolCallFormat::kLlama3,
    "llama3",
    [](std::string_view t) { return has(t, "<|start_header_id|>") || t == "llama3"; },
    render_tools,
    grammar,
    parse_bare_call,
    call_start,
    hold_back,
};

}  // namespace llms::chat
