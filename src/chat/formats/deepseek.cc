// DeepSeek's chat templates:
//   deepseek   DeepSeek-Coder instruct: ### Instruction:\n...\n### Response:\n (with the
//              template's default system prompt when the messages have none)
//   deepseek2  DeepSeek-LLM / V2 chat: User: ...\n\nAssistant:
//   deepseek3  DeepSeek-V3: <｜User｜>...<｜Assistant｜>
#include <fmt/format.h>

#include "chat/formats/format.h"
#include "chat/formats/template_util.h"

namespace llms::chat {
namespace {

// The system prompt DeepSeek-Coder's template writes when the messages have none.
constexpr std::string_view kCoderSystem =
    "You are an AI programming assistant, utilizing the Deepseek Coder model, developed by Deepseek Company, and "
    "you only answer questions related to computer science. For politically sensitive questions, security and "
    "privacy issues, and other non-computer science questions, you will refuse to answer";

// DeepSeek-V3's turn markers (full-width bars, U+2581 in place of spaces).
constexpr std::string_view kUser = "<｜User｜>";
constexpr std::string_view kAssistant = "<｜Assistant｜>";
constexpr std::string_view kEndOfSentence = "<｜end▁of▁sentence｜>";

Result<std::string> render_deepseek(const Messages& m, bool gen, const Tokens& t) {
  std::string out = t.bos;
  bool has_system = false;
  for (const ChatMessage& msg : m) has_system |= msg.role == "system";
  if (!has_system) out += std::string(kCoderSystem) + "\n";
  for (const ChatMessage& msg : m) {
    if (msg.role == "system") {
      out += msg.content;
    } else if (msg.role == "user") {
      out += "### Instruction:\n" + msg.content + "\n";
    } else {
      out += "### Response:\n" + msg.content + "\n<|EOT|>\n";
    }
  }
  if (gen) out += "### Response:\n";
  return out;
}

Result<std::string> render_deepseek2(const Messages& m, bool gen, const Tokens& t) {
  std::string out = t.bos;
  for (const ChatMessage& msg : m) {
    if (msg.role == "user") {
      out += "User: " + msg.content + "\n\n";
    } else if (msg.role == "assistant") {
      out += "Assistant: " + msg.content + t.eos;
    } else if (msg.role == "system") {
      out += msg.content + "\n\n";
    }
  }
  if (gen) out += "Assistant:";
  return out;
}

Result<std::string> render_deepseek3(const Messages& m, bool gen, const Tokens& t) {
  std::string system;
  bool first = true;
  for (const ChatMessage& msg : m) {
    if (msg.role != "system") continue;
    system += (first ? "" : "\n\n") + msg.content;
    first = false;
  }
  std::string out = t.bos + system;
  for (const ChatMessage& msg : m) {
    if (msg.role == "user") {
      out += std::string(kUser) + msg.content;
    } else if (msg.role == "assistant") {
      out += std::string(kAssistant) + msg.content + std::string(kEndOfSentence);
    } else if (msg.role != "system") {
      return invalid_argument(fmt::format("the deepseek3 chat template does not support the role '{}'", msg.role));
    }
  }
  if (gen) out += kAssistant;
  return out;
}

}  // namespace

extern const TemplateFamily kDeepseekFamily = {
    ChatTemplateKind::kDeepseek, "deepseek", "", "<｜begin▁of▁sentence｜>", "<|EOT|>",
    [](std::string_view src) { return has(src, "### Instruction:") && has(src, "<|EOT|>"); },
    render_deepseek,
};

extern const TemplateFamily kDeepseek2Family = {
    ChatTemplateKind::kDeepseek2, "deepseek2", "", "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>",
    [](std::string_view src) { return has(src, "'User: '") && has(src, "'Assistant: '"); },
    render_deepseek2,
};

extern const TemplateFamily kDeepseek3Family = {
    ChatTemplateKind::kDeepseek3, "deepseek3", "", "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>",
    [](std::string_view src) { return has(src, kUser) && has(src, kAssistant); },
    render_deepseek3,
};

}  // namespace llms::chat
