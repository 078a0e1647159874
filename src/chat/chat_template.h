// Chat templates: turn an OpenAI-style list of messages into the prompt text a chat
// model was trained on. A model's tokenizer.chat_template (or a Jinja source given
// with --chat-template) is run by the Jinja interpreter (jinja_template.h) with the
// variables transformers passes: messages, tools, add_generation_prompt, bos_token,
// eos_token. A template that uses Jinja the interpreter does not support is recognised
// as one of the hand-written families below by its distinctive markers (a warning is
// logged once, at load), and that family's published template is rendered by hand
// (including its whitespace and its errors, e.g. roles that must alternate).
//
// Families (names accepted by --chat-template), each rendered in its file of
// chat/formats/ (formats/format.h says how a family is added):
//   chatml             <|im_start|>role\n...<|im_end|>\n (Qwen, OpenHermes, Yi, ...)
//   llama2             Llama-2-chat: <s>[INST] <<SYS>>\n...\n<</SYS>>\n\n... [/INST]
//   llama3             Llama-3 instruct: <|start_header_id|>role<|end_header_id|>\n\n...<|eot_id|>
//   mistral-v1         Mistral/Mixtral v0.1-v0.2: <s> [INST] ... [/INST] ...</s> (alias: mistral)
//   mistral-v3         Mistral v0.3, Mixtral-8x22B: <s>[INST] ...[/INST] ...</s>
//   mistral-v3-tekken  Mistral-Nemo: <s>[INST]...[/INST]...</s>
//   mistral-v7         Mistral-Large-2411: [SYSTEM_PROMPT] ...[/SYSTEM_PROMPT]
//   zephyr             <|user|>\n...</s>\n
//   phi3               <|user|>\n...<|end|>\n
//   gemma              <start_of_turn>user\n...<end_of_turn>\n (system text joins the first turn)
//   deepseek           DeepSeek-Coder instruct: ### Instruction:\n...\n### Response:\n
//   deepseek2          DeepSeek-LLM / V2 chat: User: ...\n\nAssistant:
//   deepseek3          DeepSeek-V3: <｜User｜>...<｜Assistant｜>
// Default system prompts written into a template (Qwen's, DeepSeek-Coder's) are
// reproduced only where listed in docs/tokenizer.md. Tools: the server writes tool
// definitions and assistant calls into the message texts in each family's format
// (tool_calls.h); "tool" messages render as [TOOL_RESULTS] in mistral-v3 and
// -v7, llama3 writes any role's header (tool results come as "ipython").
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "chat/jinja_template.h"
#include "chat/jinja_value.h"
#include "tokenizer/tokenizer.h"

namespace llms {

// A call an assistant message made (OpenAI tool_calls[]): `arguments` is JSON text.
struct ChatToolCall {
  std::string id;
  std::string name;
  std::string arguments;
};

struct ChatMessage {
  ChatMessage() = default;
  ChatMessage(std::string r, std::string c) : role(std::move(r)), content(std::move(c)) {}

  std::string role;  // "system", "user", "assistant", "tool"
  std::string content;
  bool content_null = false;             // the client sent content: null (an assistant turn of calls)
  std::vector<ChatToolCall> tool_calls;  // assistant
  std::string tool_call_id;              // tool: the call this answers
  std::string name;                      // tool (or any role): the optional name
};

enum class ChatTemplateKind {
  kChatMl,
  kLlama2,
  kLlama3,
  kMistralV1,
  kMistralV3,
  kMistralV3Tekken,
  kMistralV7,
  kZephyr,
  kPhi3,
  kGemma,
  kDeepseek,
  kDeepseek2,
  kDeepseek3,
};

// Texts of the special tokens a template writes. Empty fields take the family's usual
// text (e.g. "<s>"/"</s>" for llama2, "<|begin_of_text|>" for llama3).
struct ChatTemplateTokens {
  std::string bos;
  std::string eos;
};

// Whether `name` names a hand-written family (not a Jinja source).
bool is_family_name(std::string_view name);

// The canonical names, in the order of ChatTemplateKind.
std::vector<std::string_view> chat_template_names();
std::string_view chat_template_name(ChatTemplateKind kind);

// A template name (as listed above) or a Jinja template source → its family.
// INVALID_ARGUMENT naming the --chat-template option when nothing matches.
Result<ChatTemplateKind> detect_chat_template(std::string_view name_or_source);

// Renders `msgs`: a family name with that family's renderer, a Jinja source with the
// interpreter (or, when it cannot run the source, with the family its markers name).
// With `add_generation_prompt` the prompt ends with the assistant's turn opening.
// `tools`: the request's tools in the OpenAI shape ([{"type": "function", ...}]),
// given to Jinja templates as `tools`; null for none (the template sees None).
// `kwargs`: more variables for a Jinja template (vLLM's chat_template_kwargs, e.g.
// enable_thinking), an object or null; they never replace the ones above. The
// hand-written families take none.
Result<std::string> apply_chat_template(const std::string& template_name_or_jinja_source,
                                        const std::vector<ChatMessage>& msgs, bool add_generation_prompt,
                                        const ChatTemplateTokens& tokens = {},
                                        const nlohmann::ordered_json& tools = nullptr,
                                        const nlohmann::ordered_json& kwargs = nullptr);
Result<std::string> render_chat_template(ChatTemplateKind kind, const std::vector<ChatMessage>& msgs,
                                         bool add_generation_prompt, const ChatTemplateTokens& tokens = {});

// For a loaded model: `override_name` when not empty, else the file's
// tokenizer.chat_template; BOS/EOS texts come from the vocabulary.
Result<std::string> apply_model_chat_template(const Tokenizer& tok, const std::vector<ChatMessage>& msgs,
                                              bool add_generation_prompt, const std::string& override_name = "",
                                              const nlohmann::ordered_json& tools = nullptr,
                                              const nlohmann::ordered_json& kwargs = nullptr);

// The variables a Jinja chat template sees, as transformers passes them: messages as
// dicts (content None when null; tool_calls with their arguments parsed from JSON
// text, as vLLM passes them; tool_call_id and name where set), tools (None when
// null), add_generation_prompt, bos_token, eos_token; then each of `kwargs` (an
// object, or null) that names none of these.
jinja::Value chat_template_context(const std::vector<ChatMessage>& msgs, bool add_generation_prompt,
                                   const ChatTemplateTokens& tokens, const nlohmann::ordered_json& tools,
                                   const nlohmann::ordered_json& kwargs = nullptr);

// JinjaTemplate::parse(source), once per distinct source: the results (templates or
// errors) of the last 8 sources are kept, so that a server parses its template once,
// not for every request. Thread-safe.
Result<JinjaTemplate> parse_chat_template_cached(const std::string& source);

// Whether the template runs as Jinja and writes the tools it is given (probed by
// rendering a conversation with one tool). Templates that do not get tools and
// calls written into the message texts instead (tool_calls.h).
bool chat_template_renders_tools(const std::string& template_name_or_jinja_source);

// Encodes a rendered prompt: control tokens in it are recognised, and the vocabulary's
// BOS is added only when the prompt does not already start with it.
std::vector<int32_t> encode_chat_prompt(const Tokenizer& tok, std::string_view prompt);

// The template name that joins the message texts by blank lines: what a base model
// without a template of its own uses (a chat then continues the text).
inline constexpr const char* kPlainChatTemplate = "plain";

// The chat template a server uses for `tok`: the configured one (validated), else ""
// (the model's own), else kPlainChatTemplate, with a warning, for a model without one.
Result<std::string> resolve_chat_template(const std::string& configured, const Tokenizer& tok);

}  // namespace llms
