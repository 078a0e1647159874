#include "chat/formats/template_util.h"

#include "base/utf8.h"

namespace llms::chat {
namespace {

bool is_py_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

}  // namespace

std::string strip(std::string_view s) {
  size_t begin = 0;
  size_t end = s.size();
  while (begin < end) {
    size_t n = 0;
    const char32_t c = utf8_decode(s, begin, &n);
    if (!is_py_space(c)) break;
    begin += n;
  }
  while (end > begin) {
    size_t start = end - 1;  // back up to the first byte of the last character
    while (start > begin && (static_cast<uint8_t>(s[start]) & 0xC0) == 0x80 && end - start < 4) --start;
    size_t n = 0;
    const char32_t c = utf8_decode(s, start, &n);
    if (start + n != end || !is_py_space(c)) break;
    end = start;
  }
  return std::string(s.substr(begin, end - begin));
}

void append(std::string& out, std::initializer_list<std::string_view> parts) {
  for (const std::string_view p : parts) out.append(p);
}

SystemSplit split_system(const Messages& m) {
  SystemSplit s;
  s.rest = m;
  if (!m.empty() && m[0].role == "system") {
    s.has_system = true;
    s.system = m[0].content;
    s.rest = std::span<const ChatMessage>(m).subspan(1);
  }
  return s;
}

Status check_alternation(std::span<const ChatMessage> msgs, std::string_view message, bool skip_tools) {
  size_t index = 0;
  for (const ChatMessage& msg : msgs) {
    if (skip_tools && (msg.role == "tool" || msg.role == "tool_results")) continue;
    if ((msg.role == "user") != (index % 2 == 0)) return invalid_argument(std::string(message));
    ++index;
  }
  return ok_status();
}

}  // namespace llms::chat
