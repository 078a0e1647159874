#include "engine/request.h"

#include <fmt/format.h>

#include <chrono>

#include "base/check.h"

namespace llms {

std::optional<ParamError> check_prompt(std::span<const int32_t> prompt, int vocab_size, int context_length) {
  if (prompt.empty()) return ParamError{"prompt", "the prompt is empty"};
  for (int32_t t : prompt) {
    if (t < 0 || t >= vocab_size) {
      return ParamError{"prompt", fmt::format("token id {} is outside the vocabulary (0..{})", t, vocab_size - 1)};
    }
  }
  if (static_cast<int64_t>(prompt.size()) >= context_length) {
    return ParamError{"prompt",
                      fmt::format("This model's maximum context length is {} tokens; the prompt has {} tokens and at "
                                  "least one must remain for the completion",
                                  context_length, prompt.size()),
                      true};
  }
  return std::nullopt;
}

std::optional<ParamError> check_request(const RequestParams& p, int vocab_size, int context_length) {
  if (auto e = p.sampling.check(vocab_size)) return e;
  if (auto e = check_prompt(p.prompt, vocab_size, context_length)) return e;
  const int min_tokens = p.computes_whole_prompt() ? 0 : 1;
  if (p.max_tokens < min_tokens) {
    return ParamError{"max_tokens", fmt::format("max_tokens must be >= {}, got {}", min_tokens, p.max_tokens)};
  }
  if (p.pooling != Pooling::kNone && (p.max_tokens != 0 || p.prompt_logprobs)) {
    return ParamError{"max_tokens", "an embedding generates nothing: max_tokens must be 0, without prompt logprobs"};
  }
  if (p.prompt_logprobs && p.top_logprobs < 0) {
    return ParamError{"top_logprobs", "prompt logprobs need top_logprobs >= 0"};
  }
  if (p.top_logprobs > kMaxTopLogprobs) {
    return ParamError{"top_logprobs", fmt::format("top_logprobs must be at most {}", kMaxTopLogprobs)};
  }
  if (p.timeout_s < 0) return ParamError{"timeout", "timeout must be >= 0"};
  return std::nullopt;
}

bool RequestHandle::next(RequestEvent* out, int64_t timeout_ms) {
  std::unique_lock<std::mutex> lock(mu_);
  auto ready = [&] { return !events_.empty(); };
  if (timeout_ms < 0) {
    cv_.wait(lock, ready);
  } else if (!cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), ready)) {
    return false;
  }
  *out = std::move(events_.front());
  events_.pop_front();
  return true;
}

std::vector<RequestEvent> RequestHandle::drain() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<RequestEvent> out(std::make_move_iterator(events_.begin()), std::make_move_iterator(events_.end()));
  events_.clear();
  return out;
}

void RequestHandle::cancel() {
  std::function<void()> hook;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (cancelled_ || finished_) return;
    cancelled_ = true;
    hook = cancel_hook_;
  }
  if (hook) hook();
}

void RequestHandle::set_cancel_hook(std::function<void()> fn) {
  std::lock_guard<std::mutex> lock(mu_);
  cancel_hook_ = std::move(fn);
}

bool RequestHandle::cancelled() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cancelled_;
}

bool RequestHandle::finished() const {
  std::lock_guard<std::mutex> lock(mu_);
  return finished_;
}

void RequestHandle::set_notify(std::function<void()> fn) {
  std::lock_guard<std::mutex> lock(mu_);
  notify_ = std::move(fn);
}

void RequestHandle::push(RequestEvent event) {
  std::function<void()> notify;
  {
    std::lock_guard<std::mutex> lock(mu_);
    LLMS_CHECK(!finished_, "event after a request finished");
    if (std::holds_alternative<FinishEvent>(event)) finished_ = true;
    events_.push_back(std::move(event));
    notify = notify_;
  }
  cv_.notify_all();
  if (notify) notify();
}

}  // namespace llms
