#include "chat/reasoning.h"

#include <algorithm>

namespace llms {
namespace {

constexpr std::string_view kOpen = "<think>";
constexpr std::string_view kClose = "</think>";

bool blank(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

std::string_view trim_left(std::string_view s) {
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  return s;
}

// The length of the longest end of `s` that begins `marker` (and could end in it).
size_t partial_marker(std::string_view s, std::string_view marker) {
  for (size_t n = std::min(s.size(), marker.size() - 1); n > 0; --n) {
    if (s.substr(s.size() - n) == marker.substr(0, n)) return n;
  }
  return 0;
}

}  // namespace

bool ReasoningSplitter::prompt_opens_thinking(std::string_view prompt) {
  while (!prompt.empty() && blank(prompt.back())) prompt.remove_suffix(1);
  return prompt.ends_with(kOpen);
}

ReasoningSplitter::Split ReasoningSplitter::push(std::string_view text) {
  Split out;
  held_ += text;
  if (state_ == State::kStart) {
    const std::string_view rest = trim_left(held_);
    if (rest.size() < kOpen.size() && kOpen.starts_with(rest)) return out;  // may still open: hold on
    if (rest.starts_with(kOpen)) {
      held_ = std::string(rest.substr(kOpen.size()));
      state_ = State::kReasoning;
    } else {
      state_ = State::kContent;
    }
  }
  if (state_ == State::kReasoning) {
    const size_t close = held_.find(kClose);
    if (close == std::string::npos) {
      const size_t keep = partial_marker(held_, kClose);
      out.reasoning = held_.substr(0, held_.size() - keep);
      held_.erase(0, held_.size() - keep);
      return out;
    }
    out.reasoning = held_.substr(0, close);
    held_.erase(0, close + kClose.size());
    state_ = State::kContent;
    trim_ = true;
  }
  std::string_view content = held_;
  if (trim_) {
    content = trim_left(content);
    if (!content.empty()) trim_ = false;
  }
  out.content = std::string(content);
  held_.clear();
  return out;
}

ReasoningSplitter::Split ReasoningSplitter::finish() {
  Split out;
  if (state_ == State::kReasoning) {
    out.reasoning = std::move(held_);
  } else if (!trim_) {
    out.content = std::move(held_);
  }
  held_.clear();
  state_ = State::kContent;
  return out;
}

}  // namespace llms
