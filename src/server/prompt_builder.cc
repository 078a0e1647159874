#include "server/prompt_builder.h"

#include <fmt/format.h>

namespace llms {
namespace {

std::optional<ApiError> token_prompt(const std::vector<int64_t>& ids, const Tokenizer& tok, PromptInput* out) {
  out->tokens.clear();
  for (const int64_t id : ids) {
    if (id < 0 || id >= tok.vocab_size()) {
      return bad_request(fmt::format("token id {} is outside the vocabulary (0..{})", id, tok.vocab_size() - 1), "prompt");
    }
    out->tokens.push_back(static_cast<int32_t>(id));
  }
  out->text = tok.decode(out->tokens);
  return std::nullopt;
}

PromptInput text_prompt(const std::string& text, const Tokenizer& tok, bool parse_special, bool add_eos = false) {
  EncodeOptions enc;
  enc.add_bos = tok.add_bos() || add_eos;
  enc.parse_special = parse_special;
  return PromptInput{tok.encode(text, enc), text};
}

}  // namespace

std::optional<ApiError> completion_prompts(const std::vector<PromptSpec>& prompts, const Tokenizer& tok,
                                           bool parse_special, std::vector<PromptInput>* out, bool add_eos) {
  out->clear();
  for (const PromptSpec& p : prompts) {
    if (!p.is_tokens) {
      out->push_back(text_prompt(p.text, tok, parse_special, add_eos));
      continue;
    }
    PromptInput in;
    if (auto e = token_prompt(p.tokens, tok, &in)) return e;
    out->push_back(std::move(in));
  }
  return std::nullopt;
}

std::optional<ApiError> chat_prompt(const std::vector<ChatMessage>& msgs, const Tokenizer& tok,
                                    const std::string& chat_template, const ChatPromptOptions& options,
                                    PromptInput* out) {
  const bool gen = options.add_generation_prompt && !options.continue_final_message;
  std::string rendered;
  if (chat_template == kPlainChatTemplate) {
    for (const auto& m : msgs) {
      if (m.content.empty()) continue;
      if (!rendered.empty()) rendered += "\n\n";
      rendered += m.content;
    }
    if (rendered.empty()) return bad_request("the messages hold no text", "messages");
  } else {
    auto r = apply_model_chat_template(tok, msgs, gen, chat_template, options.tools, options.kwargs);
    if (!r.ok()) return bad_request(r.status().message(), "messages");
    rendered = std::move(r).value();
  }
  if (options.continue_final_message) {
    // The template closes the turn after the text (end-of-turn tokens): cut there.
    const std::string& last = msgs.back().content;
    const size_t at = last.empty() ? std::string::npos : rendered.rfind(last);
    if (at == std::string::npos) {
      return bad_request("continue_final_message: the chat template does not write the final message's text as it is",
                         "continue_final_message");
    }
    rendered.resize(at + last.size());
  }
  if (chat_template == kPlainChatTemplate) {
    *out = text_prompt(rendered, tok, /*parse_special=*/true);
  } else {
    *out = PromptInput{encode_chat_prompt(tok, rendered), rendered};
  }
  return std::nullopt;
}

}  // namespace llms
