#include "tokenizer/chat_formats.h"

#include <fmt/format.h>

#include <initializer_list>
#include <span>

#include "base/utf8.h"

namespace llms::chat {

namespace {

constexpr std::string_view kAlternate = "Conversation roles must alternate user/assistant/user/assistant/...";
constexpr std::string_view kAlternateAfterSystem =
    "After the optional system message, conversation roles must alternate user/assistant/user/assistant/...";
constexpr std::string_view kOnlyUserAssistant =
    "Only user and assistant roles are supported, with the exception of an initial optional system message!";

// The system prompt DeepSeek-Coder's template writes when the messages have none.
constexpr std::string_view kDeepseekCoderSystem =
    "You are an AI programming assistant, utilizing the Deepseek Coder model, developed by Deepseek Company, and "
    "you only answer questions related to computer science. For politically sensitive questions, security and "
    "privacy issues, and other non-computer science questions, you will refuse to answer";

// DeepSeek-V3's turn markers (full-width bars, U+2581 in place of spaces).
constexpr std::string_view kDsUser = "<｜User｜>";
constexpr std::string_view kDsAssistant = "<｜Assistant｜>";
constexpr std::string_view kDsEndOfSentence = "<｜end▁of▁sentence｜>";

// Appends the parts in order (no temporaries; also sidesteps a GCC 12 -Wrestrict
// false positive on chains of std::string operator+).
void append(std::string& out, std::initializer_list<std::string_view> parts) {
  for (const std::string_view p : parts) out.append(p);
}

bool is_py_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

// A leading system message is taken out of the loop by most templates.
struct SystemSplit {
  bool has_system = false;
  std::string_view system;
  std::span<const ChatMessage> rest;
};

SystemSplit split_system(const Messages& m) {
  SystemSplit s;
  s.rest = m;
  if (!m.empty() && m[0].role == "system") {
    s.has_system = true;
    s.system = m[0].content;
    s.rest = std::span<const ChatMessage>(m).subspan(1);
  }
  return s;
}

// The published templates raise an exception unless user and assistant take turns,
// starting with the user. `skip_tools` leaves tool messages out of the count.
Status check_alternation(std::span<const ChatMessage> msgs, std::string_view message, bool skip_tools = false) {
  size_t index = 0;
  for (const ChatMessage& msg : msgs) {
    if (skip_tools && (msg.role == "tool" || msg.role == "tool_results")) continue;
    if ((msg.role == "user") != (index % 2 == 0)) return invalid_argument(std::string(message));
    ++index;
  }
  return ok_status();
}

// A JSON string literal (what tojson writes for a string; non-ASCII kept).
std::string json_quote(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\u{:04x}", static_cast<unsigned char>(c));
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

// Mistral's tool result: [TOOL_RESULTS] {"content": ..., "call_id": ...}[/TOOL_RESULTS].
std::string tool_results(const ChatMessage& msg) {
  std::string body = "{\"content\": " + json_quote(msg.content);
  if (!msg.tool_call_id.empty()) body += ", \"call_id\": " + json_quote(msg.tool_call_id);
  return "[TOOL_RESULTS] " + body + "}[/TOOL_RESULTS]";
}

Status unsupported_role(std::string_view family, std::string_view role) {
  return invalid_argument(fmt::format("the {} chat template does not support the role '{}'", family, role));
}

}  // namespace

std::string strip(std::string_view s) {
  size_t begin = 0;
  size_t end = s.size();
  while (begin < end) {
    size_t n = 0;
    const char32_t c = utf8_decode(s, begin, &n);
    if (!is_py_space(c)) break;
    begin += n;
  }
  while (end > begin) {
    size_t start = end - 1;  // back up to the first byte of the last character
    while (start > begin && (static_cast<uint8_t>(s[start]) & 0xC0) == 0x80 && end - start < 4) --start;
    size_t n = 0;
    const char32_t c = utf8_decode(s, start, &n);
    if (start + n != end || !is_py_space(c)) break;
    end = start;
  }
  return std::string(s.substr(begin, end - begin));
}

Result<std::string> render_chatml(const Messages& m, bool gen, const Tokens&) {
  std::string out;
  for (const ChatMessage& msg : m) out += "<|im_start|>" + msg.role + "\n" + msg.content + "<|im_end|>\n";
  if (gen) out += "<|im_start|>assistant\n";
  return out;
}

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

Result<std::string> render_mistral_v1(const Messages& m, bool, const Tokens& t) {
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

Result<std::string> render_mistral_v3(const Messages& m, bool, const Tokens& t, bool tekken) {
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

Result<std::string> render_mistral_v7(const Messages& m, bool, const Tokens& t) {
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

Result<std::string> render_zephyr(const Messages& m, bool gen, const Tokens& t) {
  std::string out;
  for (size_t i = 0; i < m.size(); ++i) {
    const std::string& role = m[i].role;
    if (role == "user" || role == "system" || role == "assistant") {
      out += "<|" + role + "|>\n" + m[i].content + t.eos + "\n";
    }
    if (i + 1 == m.size() && gen) out += "<|assistant|>\n";
  }
  return out;
}

Result<std::string> render_phi3(const Messages& m, bool gen, const Tokens& t) {
  std::string out;
  for (const ChatMessage& msg : m) {
    if (msg.role == "system" || msg.role == "user" || msg.role == "assistant") {
      out += "<|" + msg.role + "|>\n" + msg.content + "<|end|>\n";
    }
  }
  out += gen ? "<|assistant|>\n" : t.eos;
  return out;
}

Result<std::string> render_gemma(const Messages& m, bool gen, const Tokens& t) {
  const SystemSplit s = split_system(m);
  LLMS_RETURN_IF_ERROR(check_alternation(s.rest, kAlternate));
  std::string out = t.bos;
  for (size_t i = 0; i < s.rest.size(); ++i) {
    const ChatMessage& msg = s.rest[i];
    const std::string role = msg.role == "assistant" ? "model" : msg.role;
    const std::string prefix = (i == 0 && s.has_system) ? std::string(s.system) + "\n\n" : "";
    out += "<start_of_turn>" + role + "\n" + prefix + strip(msg.content) + "<end_of_turn>\n";
  }
  if (gen) out += "<start_of_turn>model\n";
  return out;
}

Result<std::string> render_deepseek(const Messages& m, bool gen, const Tokens& t) {
  std::string out = t.bos;
  bool has_system = false;
  for (const ChatMessage& msg : m) has_system |= msg.role == "system";
  if (!has_system) out += std::string(kDeepseekCoderSystem) + "\n";
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
      out += std::string(kDsUser) + msg.content;
    } else if (msg.role == "assistant") {
      out += std::string(kDsAssistant) + msg.content + std::string(kDsEndOfSentence);
    } else if (msg.role != "system") {
      return unsupported_role("deepseek3", msg.role);
    }
  }
  if (gen) out += kDsAssistant;
  return out;
}

}  // namespace llms::chat
