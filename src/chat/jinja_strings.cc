#include "chat/jinja_strings.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace llms::jinja {
namespace {

bool py_space(char32_t c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' || c == 0x1c || c == 0x1d ||
         c == 0x1e || c == 0x1f || c == 0x85 || c == 0xa0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200a) ||
         c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000;
}

bool starts_or_ends(const std::string& s, const Value& what, bool start) {
  const auto one = [&](const std::string& p) {
    if (p.size() > s.size()) return false;
    return start ? s.compare(0, p.size(), p) == 0 : s.compare(s.size() - p.size(), p.size(), p) == 0;
  };
  if (what.is_string()) return one(what.str());
  if (what.is_list()) {
    return std::any_of(what.items().begin(), what.items().end(), [&](const Value& v) { return one(v.to_string()); });
  }
  throw TemplateError(fmt::format("{}with first arg must be str or a tuple of str", start ? "starts" : "ends"));
}

Value string_list(std::vector<std::string> parts) {
  ValueList out;
  for (auto& p : parts) out.emplace_back(std::move(p));
  return Value::list(std::move(out));
}

}  // namespace

std::string py_strip(std::string_view s, const Value& chars, char which) {
  const std::u32string cps = to_code_points(s);
  const std::u32string set = chars.is_string() ? to_code_points(chars.str()) : std::u32string();
  const auto strip_char = [&](char32_t c) { return chars.is_string() ? set.find(c) != std::u32string::npos : py_space(c); };
  size_t lo = 0, hi = cps.size();
  if (which != 'r') {
    while (lo < hi && strip_char(cps[lo])) ++lo;
  }
  if (which != 'l') {
    while (hi > lo && strip_char(cps[hi - 1])) --hi;
  }
  return from_code_points(std::u32string_view(cps).substr(lo, hi - lo));
}

std::vector<std::string> py_split(const std::string& s, const Value& sep, int64_t maxsplit) {
  std::vector<std::string> out;
  if (sep.is_undefined() || sep.is_none()) {
    // Runs of whitespace separate; leading and trailing whitespace is dropped.
    const std::u32string cps = to_code_points(s);
    size_t i = 0;
    while (i < cps.size()) {
      while (i < cps.size() && py_space(cps[i])) ++i;
      if (i >= cps.size()) break;
      if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
        size_t end = cps.size();
        while (end > i && py_space(cps[end - 1])) --end;
        out.push_back(from_code_points(std::u32string_view(cps).substr(i, end - i)));
        break;
      }
      size_t j = i;
      while (j < cps.size() && !py_space(cps[j])) ++j;
      out.push_back(from_code_points(std::u32string_view(cps).substr(i, j - i)));
      i = j;
    }
    return out;
  }
  const std::string& d = sep.to_string();
  if (d.empty()) throw TemplateError("empty separator");
  size_t start = 0;
  while (true) {
    const size_t at = s.find(d, start);
    if (at == std::string::npos || (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit)) break;
    out.push_back(s.substr(start, at - start));
    start = at + d.size();
  }
  out.push_back(s.substr(start));
  return out;
}

std::string py_upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::string py_lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string py_capitalize(const std::string& s) {
  std::string out = py_lower(s);
  if (!out.empty()) out[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(out[0])));
  return out;
}

std::string py_title(const std::string& s) {
  std::string out = s;
  bool prev_letter = false;
  for (char& c : out) {
    const bool letter = std::isalpha(static_cast<unsigned char>(c)) != 0;
    if (letter) {
      c = static_cast<char>(prev_letter ? std::tolower(static_cast<unsigned char>(c)) : std::toupper(static_cast<unsigned char>(c)));
    }
    prev_letter = letter;
  }
  return out;
}

std::string py_replace(const std::string& s, const std::string& from, const std::string& to, int64_t count) {
  std::string out;
  size_t start = 0;
  int64_t done = 0;
  if (from.empty()) {
    // Python inserts `to` between every character (and at both ends).
    const std::u32string cps = to_code_points(s);
    for (size_t i = 0; i <= cps.size(); ++i) {
      if (count < 0 || done < count) {
        out += to;
        ++done;
      }
      if (i < cps.size()) out += from_code_points(std::u32string_view(&cps[i], 1));
    }
    return out;
  }
  while (count < 0 || done < count) {
    const size_t at = s.find(from, start);
    if (at == std::string::npos) break;
    out += s.substr(start, at - start) + to;
    start = at + from.size();
    ++done;
  }
  return out + s.substr(start);
}

bool is_string_method(const std::string& n) {
  static const char* const kNames[] = {"strip", "lstrip", "rstrip", "split", "rsplit", "splitlines", "startswith",
                                       "endswith", "upper", "lower", "title", "capitalize", "replace", "find",
                                       "rfind", "count", "join", "isdigit", "isalpha", "isspace", "isalnum"};
  return std::any_of(std::begin(kNames), std::end(kNames), [&](const char* k) { return n == k; });
}

Value string_method(const std::string& s, const std::string& name, const Args& a) {
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    return Value(py_strip(s, a.get_or(0, "chars", Value::none()), name[0] == 's' ? 'b' : name[0]));
  }
  if (name == "split" || name == "rsplit") {
    const int64_t maxsplit = a.get_or(1, "maxsplit", Value(int64_t{-1})).as_int();
    if (name == "rsplit" && maxsplit >= 0) throw TemplateError("rsplit with maxsplit is not supported");
    return string_list(py_split(s, a.get_or(0, "sep", Value::none()), maxsplit));
  }
  if (name == "splitlines") {
    std::vector<std::string> lines = py_split(s, Value("\n"), -1);
    if (!lines.empty() && lines.back().empty()) lines.pop_back();
    return string_list(std::move(lines));
  }
  if (name == "startswith" || name == "endswith") {
    return Value(starts_or_ends(s, a.get(name.c_str(), 0, "prefix"), name[0] == 's'));
  }
  if (name == "upper") return Value(py_upper(s));
  if (name == "lower") return Value(py_lower(s));
  if (name == "title") return Value(py_title(s));
  if (name == "capitalize") return Value(py_capitalize(s));
  if (name == "replace") {
    return Value(py_replace(s, a.get("replace", 0, "old").to_string(), a.get("replace", 1, "new").to_string(),
                            a.get_or(2, "count", Value(int64_t{-1})).as_int()));
  }
  if (name == "find" || name == "rfind" || name == "count") {
    const std::string sub = a.get(name.c_str(), 0, "sub").to_string();
    if (name == "count") {
      if (sub.empty()) return Value(static_cast<int64_t>(to_code_points(s).size()) + 1);
      int64_t n = 0;
      for (size_t at = s.find(sub); at != std::string::npos; at = s.find(sub, at + sub.size())) ++n;
      return Value(n);
    }
    const size_t at = name == "find" ? s.find(sub) : s.rfind(sub);
    if (at == std::string::npos) return Value(int64_t{-1});
    return Value(static_cast<int64_t>(to_code_points(s.substr(0, at)).size()));
  }
  if (name == "join") {
    std::string out;
    const ValueList items = a.get("join", 0, "iterable").iterate();
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i].is_string()) throw TemplateError("sequence item: expected str instance");
      out += (i ? s : "") + items[i].str();
    }
    return Value(std::move(out));
  }
  const auto all = [&](int (*pred)(int)) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [&](char c) { return pred(static_cast<unsigned char>(c)) != 0; });
  };
  if (name == "isdigit") return Value(all(&isdigit));
  if (name == "isalpha") return Value(all(&isalpha));
  if (name == "isspace") return Value(all(&isspace));
  if (name == "isalnum") return Value(all(&isalnum));
  throw TemplateError(fmt::format("'str' object has no attribute '{}'", name));
}

}  // namespace llms::jinja
