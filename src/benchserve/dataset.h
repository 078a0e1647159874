// The prompts of a benchmark run, made once before anything is sent:
//   random         words drawn from a fixed list (input-len words, output-len tokens),
//   shared-prefix  num-prefixes long prefixes (prefix-len words) shared round robin,
//                  each followed by a request's own random words (prefix caching),
//   sonnet         lines of a fixed verse-like text in random order after a fixed
//                  instruction, so that prompts repeat a lot of text (as vLLM's sonnet),
//   PATH           a JSONL file (or a JSON array), one conversation per entry, in the
//                  ShareGPT shape {"conversations":[{"from":"human","value":...},
//                  {"from":"gpt","value":...}]}, OpenAI {"messages":[...]} or
//                  {"prompt":..., "output_len":N}; the reply's word count is the output
//                  length unless --output-len is given.
// Lengths of text prompts are in words: the client knows no tokenizer. The server's own
// count (usage.prompt_tokens) is what reports show.
//
// Thread-safety: pure functions of the options.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "benchserve/bench_options.h"

namespace llms::benchserve {

struct BenchPrompt {
  std::string text;
  int output_len = 0;  // max_tokens
};

// `count` prompts for the options' dataset (warm-up prompts use another seed).
Result<std::vector<BenchPrompt>> make_prompts(const BenchOptions& o, int count, uint64_t seed);

// One JSONL (or JSON array) text parsed into prompts, in file order; `source` names it
// in errors. Entries without a prompt are skipped; none at all is an error.
Result<std::vector<BenchPrompt>> parse_conversations(const std::string& text, const std::string& source,
                                                     int default_output_len);

}  // namespace llms::benchserve
