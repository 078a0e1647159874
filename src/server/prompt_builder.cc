#include "server/prompt_builder.h"

#include <fmt/format.h>

namespace llms {
namespace {

std::optional<ApiError> token_list(const Json& arr, const Tokenizer& tok, PromptInput* out) {
  out->tokens.clear();
  for (const Json& t : arr) {
    if (!t.is_number_integer()) return bad_request("'prompt' token lists must hold integers", "prompt");
    const int64_t id = t.get<int64_t>();
    if (id < 0 || id >= tok.vocab_size()) {
      return bad_request(fmt::format("token id {} is outside the vocabulary (0..{})", id, tok.vocab_size() - 1), "prompt");
    }
    out->tokens.push_back(static_cast<int32_t>(id));
  }
  if (out->tokens.empty()) return bad_request("'prompt' must not be empty", "prompt");
  out->text = tok.decode(out->tokens);
  return std::nullopt;
}

PromptInput text_prompt(const std::string& text, const Tokenizer& tok) {
  EncodeOptions enc;
  enc.add_bos = tok.add_bos();
  return PromptInput{tok.encode(text, enc), text};
}

std::optional<ApiError> message_content(const Json& content, std::string* out) {
  if (content.is_null()) return std::nullopt;
  if (content.is_string()) {
    *out = content.get<std::string>();
    return std::nullopt;
  }
  if (!content.is_array()) return bad_request("message 'content' must be a string or a list of parts", "messages");
  for (const Json& part : content) {
    if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") || !part.at("text").is_string()) {
      return bad_request("only text content parts ({\"type\": \"text\", \"text\": ...}) are supported", "messages");
    }
    *out += part.at("text").get<std::string>();
  }
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> completion_prompts(const Json& body, const Tokenizer& tok, std::vector<PromptInput>* out) {
  if (!has_field(body, "prompt")) return bad_request("'prompt' is required", "prompt");
  const Json& p = body.at("prompt");
  out->clear();
  if (p.is_string()) {
    out->push_back(text_prompt(p.get<std::string>(), tok));
    return std::nullopt;
  }
  if (!p.is_array() || p.empty()) {
    return bad_request("'prompt' must be a string, a list of strings, or token ids", "prompt");
  }
  if (p.front().is_number_integer()) {
    PromptInput in;
    if (auto e = token_list(p, tok, &in)) return e;
    out->push_back(std::move(in));
    return std::nullopt;
  }
  for (const Json& item : p) {
    if (item.is_string()) {
      out->push_back(text_prompt(item.get<std::string>(), tok));
    } else if (item.is_array()) {
      PromptInput in;
      if (auto e = token_list(item, tok, &in)) return e;
      out->push_back(std::move(in));
    } else {
      return bad_request("'prompt' lists must hold strings or token id lists", "prompt");
    }
  }
  return std::nullopt;
}

std::optional<ApiError> parse_messages(const Json& messages, std::vector<ChatMessage>* out) {
  if (!messages.is_array() || messages.empty()) return bad_request("'messages' must be a non-empty list", "messages");
  out->clear();
  for (const Json& m : messages) {
    if (!m.is_object() || !m.contains("role") || !m.at("role").is_string()) {
      return bad_request("each message must be an object with a string 'role'", "messages");
    }
    ChatMessage msg;
    msg.role = m.at("role").get<std::string>();
    if (msg.role == "developer") msg.role = "system";
    if (msg.role != "system" && msg.role != "user" && msg.role != "assistant" && msg.role != "tool") {
      return bad_request(fmt::format("unknown message role '{}'", msg.role), "messages");
    }
    if (auto e = message_content(m.contains("content") ? m.at("content") : Json(nullptr), &msg.content)) return e;
    out->push_back(std::move(msg));
  }
  return std::nullopt;
}

std::optional<ApiError> chat_prompt(const Json& body, const Tokenizer& tok, const std::string& chat_template,
                                    bool add_generation_prompt, PromptInput* out) {
  if (!has_field(body, "messages")) return bad_request("'messages' is required", "messages");
  std::vector<ChatMessage> msgs;
  if (auto e = parse_messages(body.at("messages"), &msgs)) return e;
  if (chat_template == kPlainChatTemplate) {
    std::string text;
    for (const auto& m : msgs) {
      if (m.content.empty()) continue;
      if (!text.empty()) text += "\n\n";
      text += m.content;
    }
    if (text.empty()) return bad_request("the messages hold no text", "messages");
    EncodeOptions enc;
    enc.add_bos = tok.add_bos();
    *out = PromptInput{tok.encode(text, enc), text};
    return std::nullopt;
  }
  auto rendered = apply_model_chat_template(tok, msgs, add_generation_prompt, chat_template);
  if (!rendered.ok()) return bad_request(rendered.status().message(), "messages");
  *out = PromptInput{encode_chat_prompt(tok, rendered.value()), rendered.value()};
  return std::nullopt;
}

}  // namespace llms
