// Python's str methods as chat templates call them (.strip(), .split(), ...), shared
// by the method calls and the filters of the same name. Case mapping covers ASCII
// letters; other characters keep their case.
//
// Thread-safety: pure functions; they throw TemplateError.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "chat/jinja_value.h"

namespace llms::jinja {

bool is_string_method(const std::string& name);
Value string_method(const std::string& s, const std::string& name, const Args& args);

// str.strip(chars) with `which` 'l', 'r' or 'b' (both); chars undefined/None = whitespace.
std::string py_strip(std::string_view s, const Value& chars, char which);
std::vector<std::string> py_split(const std::string& s, const Value& sep, int64_t maxsplit);
std::string py_upper(std::string s);
std::string py_lower(std::string s);
std::string py_capitalize(const std::string& s);
std::string py_title(const std::string& s);
std::string py_replace(const std::string& s, const std::string& from, const std::string& to, int64_t count);

}  // namespace llms::jinja
