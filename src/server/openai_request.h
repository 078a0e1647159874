// OpenAI request bodies → validated parameters. parse_completion_request() reads every
// field of POST /v1/completions and /v1/chat/completions except the prompt itself
// (prompt_builder.h turns `prompt` / `messages` into tokens), checking types and ranges
// and naming the parameter in the 400 it returns.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "engine/request.h"
#include "server/json_util.h"

namespace llms {

enum class ApiKind { kCompletion, kChat };

struct CompletionRequest {
  ApiKind kind = ApiKind::kCompletion;
  std::string model;                  // "" when the client did not name one
  int n = 1;                          // choices per prompt
  bool stream = false;
  bool include_usage = false;         // stream_options.include_usage
  bool echo = false;                  // completions only
  bool logprobs = false;              // per-token logprobs wanted
  int top_logprobs = 0;               // alternatives per token (0..20)
  std::optional<int64_t> max_tokens;  // absent: completions 16, chat up to the context
  RequestParams params;               // sampling, stop, priority, lane, timeout, ignore_eos
  bool add_generation_prompt = true;  // chat: end the prompt with the assistant's turn
};

// Limits on what one HTTP request may ask for.
inline constexpr int kMaxChoices = 128;       // n, and prompts x n
inline constexpr int kMaxStopStrings = 16;
inline constexpr int kMaxLogprobs = 20;

std::optional<ApiError> parse_completion_request(const Json& body, ApiKind kind, CompletionRequest* out);

}  // namespace llms
