// OpenAI request bodies → one typed, validated request. parse_completion_request()
// reads every field of POST /v1/completions and /v1/chat/completions, the prompts or
// messages included, checking types and ranges and naming the parameter in the 400 it
// returns; nothing reads the JSON body after it. The ranges of the sampling values are
// the engine's rule (SamplingParams::check, engine/request.h), applied here. prompt_builder.h
// turns the typed prompts or messages into tokens.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "engine/request.h"
#include "server/json_util.h"
#include "chat/chat_template.h"
#include "chat/tool_request.h"
#include "grammar/json_schema.h"

namespace llms {

enum class ApiKind { kCompletion, kChat };

// One prompt of a completions request as the client sent it: text, or token ids
// (checked against the vocabulary when the prompt is built).
struct PromptSpec {
  bool is_tokens = false;
  std::string text;
  std::vector<int64_t> tokens;
};

// What the output must match (response_format, or the grammar/regex extensions);
// output_constraints.h turns it into a grammar.
enum class ConstraintKind { kNone, kJsonObject, kJsonSchema, kGbnf, kRegex };

struct OutputConstraint {
  ConstraintKind kind = ConstraintKind::kNone;
  std::string text;          // kGbnf, kRegex: the source
  Json schema;               // kJsonSchema
  std::string param;         // the request parameter it came from, for errors
  // kJsonObject, kJsonSchema: bounded whitespace (llama.cpp's rule), or none
  // (structured_outputs.disable_any_whitespace, "json_whitespace": "compact").
  JsonWhitespace whitespace = JsonWhitespace::kBounded;
};

struct CompletionRequest {
  ApiKind kind = ApiKind::kCompletion;
  std::string model;                  // "" when the client did not name one
  int n = 1;                          // choices per prompt
  bool stream = false;
  bool include_usage = false;         // stream_options.include_usage
  bool echo = false;                  // completions only
  bool split_special_tokens = false;  // completions: control tokens in the prompt text stay plain text
  bool logprobs = false;              // per-token logprobs wanted
  int top_logprobs = 0;               // alternatives per token (0..20)
  std::optional<int64_t> max_tokens;  // absent: completions 16, chat up to the context
  RequestParams params;               // sampling, stop, priority, lane, timeout, ignore_eos (no prompt yet)
  std::vector<PromptSpec> prompts;    // completions: at least one
  std::vector<ChatMessage> messages;  // chat: at least one
  bool add_generation_prompt = true;  // chat: end the prompt with the assistant's turn
  bool continue_final_message = false;  // chat: the answer continues the last (assistant) message
  Json chat_template_kwargs = nullptr;  // chat: more variables for a Jinja template (an object)
  OutputConstraint constraint;
  ToolRequest tools;                  // chat only
  std::string precision;              // "" or "auto": the router's choice; else a precision variant's name
  bool review = true;                 // "review": false keeps it out of the review log
  std::string rater;                  // who asked: a digest of the Authorization header (feedback)
  std::string cache_salt;             // vLLM's: prefix-cache blocks shared only with the same salt ("": none)
};

// Limits on what one HTTP request may ask for.
inline constexpr int kMaxChoices = 128;       // n, and prompts x n
inline constexpr int kMaxStopStrings = 16;
inline constexpr int kMaxLogprobs = kMaxTopLogprobs;  // the engine's bound
inline constexpr int kMaxLogitBias = 1024;  // entries of logit_bias

std::optional<ApiError> parse_completion_request(const Json& body, ApiKind kind, CompletionRequest* out);

// vLLM's structured-output fields (structured_outputs.{json, regex, choice, grammar,
// json_object, disable_any_whitespace}; guided_json, guided_regex, guided_choice,
// guided_grammar) into `out`; a second constraint (these or one already in `out`) is a
// 400 naming it (structured_outputs.cc).
std::optional<ApiError> read_vllm_constraint(const Json& body, OutputConstraint* out);

// `prompt` (or `field`: embeddings' `input`): a string, a list of strings, a list of
// token ids, or a list of such lists.
std::optional<ApiError> parse_prompts(const Json& body, std::vector<PromptSpec>* out, const char* field = "prompt");
// `tools`, `tool_choice`, `parallel_tool_calls` (chat only; on completions a 400).
std::optional<ApiError> parse_tools(const Json& body, ApiKind kind, ToolRequest* out);
// A message's `tool_calls` (assistant messages only).
std::optional<ApiError> parse_message_tool_calls(const Json& message, ChatMessage* out);
// `messages`: a non-empty list of {role, content} with text content; assistant
// messages may carry tool_calls (content null), tool messages a tool_call_id.
std::optional<ApiError> parse_messages(const Json& body, std::vector<ChatMessage>* out);

}  // namespace llms
