#include "chat/jinja_lexer.h"

#include <fmt/format.h>

#include <array>
#include <cctype>

#include "chat/jinja_value.h"

namespace llms::jinja {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

std::string normalise_newlines(std::string_view src) {
  std::string out;
  out.reserve(src.size());
  for (size_t i = 0; i < src.size(); ++i) {
    if (src[i] == '\r') {
      out += '\n';
      if (i + 1 < src.size() && src[i + 1] == '\n') ++i;
    } else {
      out += src[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// The end of a tag opened at `from` ("}}" or "%}"), skipping string literals and
// closing only where brackets balance (a dict literal may end in "}}").
size_t find_tag_end(const std::string& src, size_t from, std::string_view close) {
  char quote = 0;
  int depth = 0;
  for (size_t i = from; i + 1 < src.size(); ++i) {
    const char c = src[i];
    if (quote) {
      if (c == '\\') ++i;
      else if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (depth == 0 && src.compare(i, close.size(), close) == 0) {
      return i;
    } else if (c == '{' || c == '(' || c == '[') {
      ++depth;
    } else if ((c == '}' || c == ')' || c == ']') && depth > 0) {
      --depth;
    }
  }
  return std::string::npos;
}

int line_of(const std::string& src, size_t pos) {
  int line = 1;
  for (size_t i = 0; i < pos && i < src.size(); ++i) line += src[i] == '\n';
  return line;
}

std::string_view trim_view(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

class Splitter {
 public:
  explicit Splitter(std::string_view source) : src_(normalise_newlines(source)) {}

  std::vector<Segment> run() {
    while (pos_ < src_.size()) {
      const size_t open = next_open();
      if (open == std::string::npos) {
        emit_text(src_.substr(pos_), pos_);
        break;
      }
      tag(open);
    }
    return std::move(out_);
  }

 private:
  size_t next_open() const {
    for (size_t i = src_.find('{', pos_); i != std::string::npos; i = src_.find('{', i + 1)) {
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    }
    return std::string::npos;
  }

  void emit_text(std::string text, size_t at) {
    if (!text.empty()) out_.push_back({Segment::Kind::kText, std::move(text), line_of(src_, at)});
  }

  // The text before a tag, with the tag's left whitespace control applied.
  void text_before(size_t open, char type, char modifier) {
    std::string text = src_.substr(pos_, open - pos_);
    if (modifier == '-') {
      size_t end = text.size();
      while (end > 0 && is_space(text[end - 1])) --end;
      text.resize(end);
    } else if (modifier != '+' && type != '{') {
      const size_t nl = text.rfind('\n');
      const size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
      if (l_pos > 0 || line_starting_) {
        bool blank = true;
        for (size_t i = l_pos; i < text.size() && blank; ++i) blank = text[i] == ' ' || text[i] == '\t';
        if (blank) text.resize(l_pos);
      }
    }
    emit_text(std::move(text), pos_);
  }

  // Moves past a tag's close, applying its right whitespace control.
  void after_close(size_t close_end, char modifier, bool block) {
    pos_ = close_end;
    const size_t start = pos_;
    if (modifier == '-') {
      while (pos_ < src_.size() && is_space(src_[pos_])) ++pos_;
    } else if (modifier != '+' && block && pos_ < src_.size() && src_[pos_] == '\n') {
      ++pos_;
    }
    line_starting_ = pos_ > start && src_[pos_ - 1] == '\n';
  }

  void tag(size_t open) {
    const char type = src_[open + 1];
    const char left = open + 2 < src_.size() ? src_[open + 2] : 0;
    const char left_mod = left == '-' || left == '+' ? left : 0;
    text_before(open, type, left_mod);
    const size_t inner = open + 2 + (left_mod ? 1 : 0);
    const int line = line_of(src_, open);
    if (type == '#') {
      const size_t close = src_.find("#}", inner);
      if (close == std::string::npos) throw TemplateError(fmt::format("line {}: a comment is not closed", line));
      const char mod = close > inner && (src_[close - 1] == '-' || src_[close - 1] == '+') ? src_[close - 1] : 0;
      after_close(close + 2, mod, true);
      return;
    }
    const std::string_view close_text = type == '{' ? "}}" : "%}";
    const size_t close = find_tag_end(src_, inner, close_text);
    if (close == std::string::npos) {
      throw TemplateError(fmt::format("line {}: a '{{{}' tag is not closed with '{}'", line, type, close_text));
    }
    const char mod = close > inner && (src_[close - 1] == '-' || src_[close - 1] == '+') ? src_[close - 1] : 0;
    std::string body(src_.substr(inner, close - inner - (mod ? 1 : 0)));
    after_close(close + 2, mod, type == '%');
    if (type == '{') {
      out_.push_back({Segment::Kind::kExpression, std::move(body), line});
      return;
    }
    if (trim_view(body) == "raw") {
      raw(line);
      return;
    }
    out_.push_back({Segment::Kind::kStatement, std::move(body), line});
  }

  // {% raw %} ... {% endraw %}: the content is text, tags and all.
  void raw(int line) {
    for (size_t i = src_.find("{%", pos_); i != std::string::npos; i = src_.find("{%", i + 2)) {
      size_t j = i + 2;
      const char left_mod = j < src_.size() && (src_[j] == '-' || src_[j] == '+') ? src_[j] : 0;
      const size_t close = src_.find("%}", j);
      if (close == std::string::npos) break;
      std::string_view inside(src_.data() + j + (left_mod ? 1 : 0), close - j - (left_mod ? 1 : 0));
      const char mod = !inside.empty() && (inside.back() == '-' || inside.back() == '+') ? inside.back() : 0;
      if (mod) inside.remove_suffix(1);
      if (trim_view(inside) != "endraw") continue;
      text_before(i, '%', left_mod);
      after_close(close + 2, mod, true);
      return;
    }
    throw TemplateError(fmt::format("line {}: {{% raw %}} has no {{% endraw %}}", line));
  }

  std::string src_;
  size_t pos_ = 0;
  bool line_starting_ = true;
  std::vector<Segment> out_;
};

// Python string-literal escapes, as Jinja decodes them.
size_t read_string(std::string_view s, size_t i, int line, std::string* out) {
  const char quote = s[i++];
  while (i < s.size() && s[i] != quote) {
    if (s[i] != '\\' || i + 1 >= s.size()) {
      *out += s[i++];
      continue;
    }
    const char e = s[i + 1];
    i += 2;
    switch (e) {
      case 'n': *out += '\n'; break;
      case 't': *out += '\t'; break;
      case 'r': *out += '\r'; break;
      case 'b': *out += '\b'; break;
      case 'f': *out += '\f'; break;
      case 'v': *out += '\v'; break;
      case 'a': *out += '\a'; break;
      case '0': *out += '\0'; break;
      case '\n': break;
      case 'x':
      case 'u':
      case 'U': {
        const size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
        if (i + n > s.size()) throw TemplateError(fmt::format("line {}: a truncated \\{} escape", line, e));
        const char32_t cp = static_cast<char32_t>(std::stoul(std::string(s.substr(i, n)), nullptr, 16));
        *out += from_code_points(std::u32string_view(&cp, 1));
        i += n;
        break;
      }
      case '\\':
      case '\'':
      case '"': *out += e; break;
      default: *out += '\\'; *out += e;
    }
  }
  if (i >= s.size()) throw TemplateError(fmt::format("line {}: a string is not closed", line));
  return i + 1;
}

constexpr std::array<std::string_view, 6> kTwoCharOps = {"**", "//", "==", "!=", "<=", ">="};

}  // namespace

std::vector<Segment> split_template(std::string_view source) { return Splitter(source).run(); }

std::vector<Token> tokenize_expression(std::string_view s, int line) {
  std::vector<Token> out;
  size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (is_space(c)) {
      ++i;
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
      out.push_back({Token::Kind::kName, std::string(s.substr(i, j - i))});
      i = j;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t j = i;
      bool is_float = false;
      while (j < s.size() && (std::isdigit(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
      if (j + 1 < s.size() && s[j] == '.' && std::isdigit(static_cast<unsigned char>(s[j + 1]))) {
        is_float = true;
        for (++j; j < s.size() && std::isdigit(static_cast<unsigned char>(s[j])); ++j) {
        }
      }
      if (j < s.size() && (s[j] == 'e' || s[j] == 'E')) {
        size_t k = j + 1;
        if (k < s.size() && (s[k] == '+' || s[k] == '-')) ++k;
        if (k < s.size() && std::isdigit(static_cast<unsigned char>(s[k]))) {
          is_float = true;
          for (j = k; j < s.size() && std::isdigit(static_cast<unsigned char>(s[j])); ++j) {
          }
        }
      }
      std::string text;
      for (size_t k = i; k < j; ++k) {
        if (s[k] != '_') text += s[k];
      }
      out.push_back({is_float ? Token::Kind::kFloat : Token::Kind::kInt, text});
      i = j;
    } else if (c == '\'' || c == '"') {
      std::string text;
      i = read_string(s, i, line, &text);
      out.push_back({Token::Kind::kString, std::move(text)});
    } else {
      std::string op(1, c);
      for (std::string_view two : kTwoCharOps) {
        if (s.substr(i, 2) == two) op = std::string(two);
      }
      if (op.size() == 1 && std::string_view("+-*/%~()[]{}.,:|=<>!?").find(c) == std::string_view::npos) {
        throw TemplateError(fmt::format("line {}: unexpected character '{}'", line, c));
      }
      out.push_back({Token::Kind::kOperator, op});
      i += op.size();
    }
  }
  out.push_back({Token::Kind::kEnd, ""});
  return out;
}

}  // namespace llms::jinja
