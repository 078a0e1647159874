// The renderers behind render_chat_template(), one per template family, each written
// from that family's published Jinja template (see chat_template.h). Internal to the
// tokenizer module.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tokenizer/chat_template.h"

namespace llms::chat {

// Special-token texts after the family defaults were filled in.
struct Tokens {
  std::string bos;
  std::string eos;
};

using Messages = std::vector<ChatMessage>;

// Python's str.strip() (Jinja's `trim`): removes Unicode whitespace at both ends.
std::string strip(std::string_view s);

Result<std::string> render_chatml(const Messages& m, bool gen, const Tokens& t);
Result<std::string> render_llama2(const Messages& m, bool gen, const Tokens& t);
Result<std::string> render_llama3(const Messages& m, bool gen, const Tokens& t);
Result<std::string> render_mistral_v1(const Messages& m, bool gen, const Tokens& t);
Result<std::string> render_mistral_v3(const Messages& m, bool gen, const Tokens& t, bool tekken);
Result<std::string> render_mistral_v7(const Messages& m, bool gen, const Tokens& t);
Result<std::string> render_zephyr(const Messages& m, bool gen, const Tokens& t);
Result<std::string> render_phi3(const Messages& m, bool gen, const Tokens& t);
Result<std::string> render_gemma(const Messages& m, bool gen, const Tokens& t);
Result<std::string> render_deepseek(const Messages& m, bool gen, const Tokens& t);
Result<std::string> render_deepseek2(const Messages& m, bool gen, const Tokens& t);
Result<std::string> render_deepseek3(const Messages& m, bool gen, const Tokens& t);

}  // namespace llms::chat
