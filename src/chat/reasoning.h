// ReasoningSplitter: a reasoning model's answer split into its thinking (between
// <think> and </think>) and the answer proper, as llama-server's --reasoning-format
// deepseek and vLLM's reasoning parsers split it into reasoning_content and content.
// Text is pushed piece by piece as it is generated (a stream) or whole; each push
// releases what can no longer change side: a piece that may be the start of <think> or
// </think> is held back until the next push or finish().
//
// The rule: the answer opens a thinking block when it starts with <think> (after
// blank space), or when the prompt opened it (the template ends the generation prompt
// with <think>, as Qwen3's and DeepSeek-R1's do); the block ends at </think>, and the
// blank space after it is dropped. Without </think> (cut by max_tokens) everything
// after the opening is reasoning.
//
// Thread-safety: a plain value; one per answer.
#pragma once

#include <string>
#include <string_view>

namespace llms {

class ReasoningSplitter {
 public:
  struct Split {
    std::string reasoning;
    std::string content;
  };

  // `opened_by_prompt`: the prompt already wrote <think>.
  explicit ReasoningSplitter(bool opened_by_prompt = false)
      : state_(opened_by_prompt ? State::kReasoning : State::kStart) {}

  Split push(std::string_view text);
  Split finish();

  // Whether a rendered prompt ends inside an opened thinking block (<think> and blank
  // space at its end).
  static bool prompt_opens_thinking(std::string_view prompt);

 private:
  enum class State { kStart, kReasoning, kContent };
  State state_;
  bool trim_ = false;  // drop blank space at the start of the content
  std::string held_;
};

}  // namespace llms
