// libFuzzer target for request bodies → validated parameters, for both generation
// endpoints: the body is parsed once (parse_json_object, parse_completion_request as
// /v1/completions and as /v1/chat/completions), then its prompts are built with the
// stories260K vocabulary (completion_prompts; chat_prompt with "plain" and "chatml").
// A structure-aware mutator (json_mutator.h) works on the JSON tree; the corpus is
// seeded with real requests (fuzz/seeds/request).
// Properties, beyond "no crash, no exception, no sanitizer report": every refusal is
// a 400 with a message; every accepted request is within the documented ranges; every
// built prompt holds only ids of the vocabulary.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "json_mutator.h"
#include "server/openai_request.h"
#include "server/prompt_builder.h"

namespace llms::fuzz {
namespace {

void check_ranges(const CompletionRequest& r) {
  const SamplingParams& s = r.params.sampling;
  if (r.n < 1 || r.n > kMaxChoices) fail("n out of range");
  if (r.include_usage && !r.stream) fail("include_usage without stream");
  // max_tokens 0 only with echo: the prompt scored, nothing generated (as vLLM allows).
  if (r.max_tokens && *r.max_tokens < (r.echo ? 0 : 1)) fail("max_tokens below its range");
  if (r.max_tokens == 0 && !r.params.prompt_logprobs) fail("max_tokens 0 without the prompt scored");
  if (!(s.temperature >= 0 && s.temperature <= 2) || !(s.top_p > 0 && s.top_p <= 1)) fail("temperature/top_p");
  if (s.top_k < 0 || !(s.min_p >= 0 && s.min_p <= 1)) fail("top_k/min_p");
  if (!(s.presence_penalty >= -2 && s.presence_penalty <= 2) || !(s.frequency_penalty >= -2 && s.frequency_penalty <= 2)) {
    fail("penalties");
  }
  if (!(s.repetition_penalty >= 0.01f && s.repetition_penalty <= 10)) fail("repetition_penalty");
  if (r.params.stop.size() > static_cast<size_t>(kMaxStopStrings)) fail("too many stop strings");
  for (const auto& stop : r.params.stop) {
    if (stop.empty()) fail("an empty stop string");
  }
  if (r.top_logprobs < 0 || r.top_logprobs > kMaxLogprobs) fail("top_logprobs");
  // The prompt scored (echo) always has its own token's log-probability: at least 0 top.
  const int top = r.logprobs ? r.top_logprobs : -1;
  if (r.params.top_logprobs != (r.params.prompt_logprobs ? std::max(top, 0) : top)) fail("params.top_logprobs");
  if (r.echo && r.logprobs) fail("echo with logprobs");
  if (r.params.timeout_s < 0) fail("negative timeout");
}

void check_tokens(const std::vector<int32_t>& ids, const Tokenizer& tok) {
  for (const int32_t id : ids) {
    if (!tok.is_valid_id(id)) fail("a prompt holds an id outside the vocabulary");
  }
}

void build_prompts(const CompletionRequest& r, const Tokenizer& tok) {
  if (r.kind == ApiKind::kCompletion) {
    if (r.prompts.empty()) fail("a completions request without prompts");
    std::vector<PromptInput> prompts;
    if (completion_prompts(r.prompts, tok, !r.split_special_tokens, &prompts)) return;
    if (prompts.size() != r.prompts.size()) fail("one prompt input per prompt");
    for (const auto& p : prompts) check_tokens(p.tokens, tok);
    return;
  }
  if (r.messages.empty()) fail("a chat request without messages");
  for (const char* tmpl : {kPlainChatTemplate, "chatml"}) {
    PromptInput p;
    if (auto e = chat_prompt(r.messages, tok, tmpl, ChatPromptOptions{.add_generation_prompt = r.add_generation_prompt}, &p)) {
      if (e->status != 400) fail("a chat prompt refusal that is not a 400");
      continue;
    }
    check_tokens(p.tokens, tok);
  }
}

}  // namespace
}  // namespace llms::fuzz

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  llms::fuzz::stories_tokenizer();
  return 0;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  return llms::fuzz::mutate_json(data, size, max_size, seed);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace llms;
  const std::string body(reinterpret_cast<const char*>(data), size);
  Json j;
  if (auto e = parse_json_object(body, &j)) {
    if (e->status != 400 || e->message.empty()) fuzz::fail("a malformed body that is not a 400");
    return 0;
  }
  for (const ApiKind kind : {ApiKind::kCompletion, ApiKind::kChat}) {
    CompletionRequest r;
    if (auto e = parse_completion_request(j, kind, &r)) {
      if (e->status != 400 || e->message.empty()) fuzz::fail("a refusal that is not a 400 with a message");
      continue;
    }
    if (r.kind != kind) fuzz::fail("the parsed kind differs");
    fuzz::check_ranges(r);
    fuzz::build_prompts(r, fuzz::stories_tokenizer());
  }
  return 0;
}
