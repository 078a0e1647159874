// Engine results → OpenAI response objects: whole responses (text_completion,
// chat.completion), streaming chunks (text_completion chunks, chat.completion.chunk),
// usage, and both logprobs shapes (legacy completions and chat).
//
// Thread-safety: pure functions over an immutable Tokenizer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/finish_reason.h"
#include "engine/request.h"
#include "server/json_util.h"
#include "server/openai_request.h"
#include "tokenizer/tokenizer.h"

namespace llms {

struct ResponseMeta {
  ApiKind kind = ApiKind::kCompletion;
  std::string id;       // "cmpl-..." / "chatcmpl-..."
  int64_t created = 0;  // unix seconds
  std::string model;
  std::string fingerprint;  // system_fingerprint: the version that answered
};

struct TokenLogprobs {
  int32_t token = 0;
  float logprob = 0;
  std::vector<TokenLogprob> top;
  int64_t text_offset = 0;  // characters of the choice's text before this token
  bool scored = true;       // false: the prompt's first token (logprob and top_logprobs null)
};

// A tool call of a chat answer, as OpenAI writes it.
struct ToolCallResult {
  std::string id;
  std::string name;
  std::string arguments;  // JSON text
};

struct ChoiceResult {
  int index = 0;
  std::string text;
  bool with_logprobs = false;
  std::vector<TokenLogprobs> logprobs;
  FinishReason finish = FinishReason::kStop;
  // Chat with tools: the calls (finish_reason "tool_calls" when the answer ended
  // normally; content null when there is no text besides them).
  std::vector<ToolCallResult> tool_calls;
  std::string reasoning;  // chat: the thinking split off (reasoning_content when not empty)
};

// An upper bound, in bytes, of one choice of a whole (non-streamed) response, before
// compute: every token taking the vocabulary's longest text (max_piece_bytes) with
// every byte JSON-escaped (6 bytes at most), and with logprobs its chosen and
// top_logprobs alternatives each written in full (chat's "bytes" arrays included).
// `prefix_bytes`: text the choice starts with (echo).
int64_t choice_bytes_bound(int64_t max_tokens, int top_logprobs_or_minus1, size_t max_piece_bytes,
                           size_t prefix_bytes);

struct UsageTotals {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;
};

// "stop", "length", "timeout", "cancelled" (and "error" for kError/kRejected).
const char* api_finish_reason(FinishReason r);
Json usage_json(const UsageTotals& u);

// Logprobs of a run of tokens in the shape of the request's API.
Json logprobs_json(ApiKind kind, const Tokenizer& tok, const std::vector<TokenLogprobs>& entries);

// The whole (non-streaming) response.
Json whole_response(const ResponseMeta& meta, const Tokenizer& tok, const std::vector<ChoiceResult>& choices,
                    const UsageTotals& usage);

// What one streaming chunk of a choice carries.
struct StreamChunk {
  int index = 0;
  std::optional<std::string_view> text = std::nullopt;  // new text (chat: delta.content, left out when absent)
  Json logprobs = nullptr;               // null, or from logprobs_json()
  const char* finish = nullptr;          // a finish reason (api_finish_reason()), or none yet
  bool role = false;                     // chat: the delta names the assistant role
  bool usage_null = false;               // "usage": null (stream_options.include_usage)
  Json tool_calls = nullptr;             // chat: delta.tool_calls, when not null
  std::optional<std::string_view> reasoning = std::nullopt;  // chat: delta.reasoning_content
};

// finish_reason of a chat choice that made tool calls.
inline constexpr const char* kToolCallsFinish = "tool_calls";
// One tool call's OpenAI JSON ({id, type, function: {name, arguments}}).
Json tool_call_json(const ToolCallResult& c);

Json stream_chunk(const ResponseMeta& meta, const StreamChunk& chunk);
// The last chunk of a stream with include_usage: no choices, the usage.
Json usage_chunk(const ResponseMeta& meta, const UsageTotals& usage);

}  // namespace llms
