// Turns the typed prompts of a completions request (text or token ids) and the
// messages of a chat request into token ids, with the text kept for `echo`.
//
// Chat prompts use the model's chat template, the one named by --chat-template, or
// "plain" — the message contents joined by blank lines — which is what the server
// picks for a base model whose file has no template (a chat then continues the text).
//
// Thread-safety: pure functions over an immutable Tokenizer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "server/openai_request.h"
#include "chat/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace llms {

struct PromptInput {
  std::vector<int32_t> tokens;
  std::string text;  // what `echo` repeats
};

// 400 (param "prompt") for a token id outside the vocabulary. Text prompts recognise
// control tokens written in them (<s>, <|im_start|>, ...) when `parse_special`, as
// llama-server and vLLM do (vLLM's split_special_tokens turns it off). `add_eos`: text
// also ends with EOS when the vocabulary asks for it (embeddings, as llama.cpp's
// add_special), even where it starts with no BOS.
std::optional<ApiError> completion_prompts(const std::vector<PromptSpec>& prompts, const Tokenizer& tok,
                                           bool parse_special, std::vector<PromptInput>* out, bool add_eos = false);

struct ChatPromptOptions {
  bool add_generation_prompt = true;  // end with the assistant's turn opening
  // The prompt ends where the last message's text ends (assistant prefill: the answer
  // continues it), found in what the template wrote without a generation prompt.
  bool continue_final_message = false;
  nlohmann::ordered_json tools = nullptr;   // for a Jinja template that writes them (null: none)
  nlohmann::ordered_json kwargs = nullptr;  // chat_template_kwargs: more Jinja variables (null: none)
};

// `chat_template`: "" for the model's own, kPlainChatTemplate, or a name/Jinja source.
std::optional<ApiError> chat_prompt(const std::vector<ChatMessage>& messages, const Tokenizer& tok,
                                    const std::string& chat_template, const ChatPromptOptions& options,
                                    PromptInput* out);

}  // namespace llms
