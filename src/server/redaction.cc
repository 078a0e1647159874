#include "server/redaction.h"

#include <fmt/format.h>

#include <cctype>
#include <sstream>

namespace llms {
namespace {

const std::regex& email_pattern() {
  static const std::regex re(R"([A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,})");
  return re;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_joiner(char c) { return c == ' ' || c == '-' || c == '.' || c == '(' || c == ')' || c == '+'; }

bool luhn(const std::string& digits) {
  int sum = 0;
  bool twice = false;
  for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
    int d = *it - '0';
    if (twice && (d *= 2) > 9) d -= 9;
    sum += d;
    twice = !twice;
  }
  return sum % 10 == 0;
}

// Card and phone numbers: a run starts at a digit (or a '+' before one), takes digits
// and single joiners, and ends at its last digit; its digit count says what it is.
std::string redact_numbers(const std::string& s) {
  std::string out;
  size_t i = 0;
  while (i < s.size()) {
    const bool starts = is_digit(s[i]) || (s[i] == '+' && i + 1 < s.size() && is_digit(s[i + 1]));
    const bool word_start = i == 0 || !(is_digit(s[i - 1]) || std::isalpha(static_cast<unsigned char>(s[i - 1])));
    if (!starts || !word_start) {
      out += s[i++];
      continue;
    }
    std::string digits;
    size_t end = i;  // one past the run's last digit
    for (size_t j = i; j < s.size(); ++j) {
      if (is_digit(s[j])) {
        digits += s[j];
        end = j + 1;
      } else if (!is_joiner(s[j]) || (j > i && is_joiner(s[j - 1]) && s[j - 1] != ')' && s[j] != '(')) {
        break;
      }
    }
    const bool glued = end < s.size() && std::isalpha(static_cast<unsigned char>(s[end]));
    const size_t n = digits.size();
    if (!glued && n >= 13 && n <= 19 && luhn(digits)) {
      out += "[card]";
    } else if (!glued && n >= 9 && n <= 15) {
      out += "[phone]";
    } else {
      out.append(s, i, end - i);
    }
    i = end;
  }
  return out;
}

}  // namespace

Result<Redactor> Redactor::make(const std::string& patterns) {
  Redactor r;
  std::istringstream in(patterns);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    try {
      r.custom_.emplace_back(line, std::regex::ECMAScript | std::regex::optimize);
    } catch (const std::regex_error& e) {
      return invalid_argument(fmt::format("review_redact: '{}' is not a regular expression: {}", line, e.what()));
    }
  }
  return r;
}

std::string Redactor::apply(std::string_view text) const {
  std::string s = std::regex_replace(std::string(text), email_pattern(), "[email]");
  s = redact_numbers(s);
  for (const std::regex& re : custom_) s = std::regex_replace(s, re, "[redacted]");
  return s;
}

}  // namespace llms
