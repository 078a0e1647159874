// What a Jinja template can call: filters (x | trim), tests (x is defined), the
// methods of strings and dicts that chat templates use (.strip(), .items(), ...),
// attribute and item access, and the arithmetic operators, each with Python's
// semantics. Hugging Face's additions: tojson with ensure_ascii=False and an indent,
// raise_exception(), strftime_now().
//
// Thread-safety: pure functions; they throw TemplateError.
#pragma once

#include <string>

#include "chat/jinja_value.h"

namespace llms::jinja {

Value apply_filter(const std::string& name, const Value& v, const Args& args);
bool apply_test(const std::string& name, const Value& v, const Args& args);
// obj.name(args), for the built-in types' methods.
Value call_method(const Value& obj, const std::string& name, const Args& args);
bool has_method(const Value& obj, const std::string& name);

// obj.name: a dict's key (a namespace's attribute), else undefined; an undefined obj
// is an error, as in Jinja.
Value get_attribute(const Value& obj, const std::string& name);
// obj[key]: dict key, list index (negative from the end), string character.
Value get_item(const Value& obj, const Value& key);
// obj[start:stop:step] on lists and strings (absent parts undefined).
Value get_slice(const Value& obj, const Value& start, const Value& stop, const Value& step);

// a op b for + - * / // % ** ~.
Value binary_op(const std::string& op, const Value& a, const Value& b);
// a in b.
bool contains(const Value& container, const Value& item);

// The global functions: range, namespace, dict, raise_exception, strftime_now.
Value global_function(const std::string& name);

}  // namespace llms::jinja
