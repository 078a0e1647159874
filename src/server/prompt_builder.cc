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

PromptInput text_prompt(const std::string& text, const Tokenizer& tok, bool parse_special) {
  EncodeOptions enc;
  enc.add_bos = tok.add_bos();
  enc.parse_special = parse_special;
  return PromptInput{tok.encode(text, enc), text};
}

}  // namespace

std::optional<ApiError> completion_prompts(const std::vector<PromptSpec>& prompts, const Tokenizer& tok,
                                           bool parse_special, std::vector<PromptInput>* out) {
  out->clear();
  for (const PromptSpec& p : prompts) {
    if (!p.is_tokens) {
      out->push_back(text_prompt(p.text, tok, parse_special));
      continue;
    }
    PromptInput in;
    if (auto e = token_prompt(p.tokens, tok, &in)) return e;
    out->push_back(std::move(in));
  }
  return std::nullopt;
}

std::optional<ApiError> chat_prompt(const std::vector<ChatMessage>& msgs, const Tokenizer& tok,
                                    const std::string& chat_template, bool add_generation_prompt, PromptInput* out,
                                    const nlohmann::ordered_json& tools) {
  if (chat_template == kPlainChatTemplate) {
    std::string text;
    for (const auto& m : msgs) {
      if (m.content.empty()) continue;
      if (!text.empty()) text += "\n\n";
      text += m.content;
    }
    if (text.empty()) return bad_request("the messages hold no text", "messages");
    *out = text_prompt(text, tok, /*parse_special=*/true);
    return std::nullopt;
  }
  auto rendered = apply_model_chat_template(tok, msgs, add_generation_prompt, chat_template, tools);
  if (!rendered.ok()) return bad_request(rendered.status().message(), "messages");
  *out = PromptInput{encode_chat_prompt(tok, rendered.value()), rendered.value()};
  return std::nullopt;
}

}  // namespace llms
