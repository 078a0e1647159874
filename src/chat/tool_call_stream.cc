#include "chat/tool_call_stream.h"

namespace llms {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

// After `key` (a quoted JSON key) at or after `from`: the position just past the
// colon and any whitespace after it, or npos while the text does not yet hold them.
size_t after_key(std::string_view text, size_t from, std::string_view key) {
  const size_t k = text.find(key, from);
  if (k == std::string_view::npos) return k;
  size_t p = k + key.size();
  while (p < text.size() && is_space(text[p])) ++p;
  if (p >= text.size() || text[p] != ':') return std::string_view::npos;
  ++p;
  while (p < text.size() && is_space(text[p])) ++p;
  return p < text.size() ? p : std::string_view::npos;
}

}  // namespace

std::vector<ToolCallDelta> ToolCallStreamer::feed(std::string_view text) {
  std::vector<ToolCallDelta> out;
  while (pos_ < text.size()) {
    if (state_ == State::kSeekName) {
      // Function names are [A-Za-z0-9_-] (checked when the tools are read), so the
      // string has no escapes and ends at the next quote.
      const size_t v = after_key(text, pos_, "\"name\"");
      if (v == std::string_view::npos || text[v] != '"') break;
      const size_t end = text.find('"', v + 1);
      if (end == std::string_view::npos) break;
      ++index_;
      out.push_back(ToolCallDelta{index_, true, std::string(text.substr(v + 1, end - v - 1)), ""});
      pos_ = end + 1;
      state_ = State::kSeekArguments;
    } else if (state_ == State::kSeekArguments) {
      size_t v = after_key(text, pos_, "\"arguments\"");
      if (v == std::string_view::npos) v = after_key(text, pos_, "\"parameters\"");
      if (v == std::string_view::npos) break;
      pos_ = v;
      state_ = State::kInArguments;
      depth_ = 0;
      in_string_ = escape_ = false;
    } else {
      size_t p = pos_;
      for (; p < text.size(); ++p) {
        const char c = text[p];
        if (in_string_) {
          if (escape_) escape_ = false;
          else if (c == '\\') escape_ = true;
          else if (c == '"') in_string_ = false;
        } else if (c == '"') {
          in_string_ = true;
        } else if (c == '{' || c == '[') {
          ++depth_;
        } else if (c == '}' || c == ']') {
          if (--depth_ == 0) {
            ++p;
            state_ = State::kSeekName;
            break;
          }
        }
      }
      out.push_back(ToolCallDelta{index_, false, "", std::string(text.substr(pos_, p - pos_))});
      pos_ = p;
    }
  }
  return out;
}

}  // namespace llms
