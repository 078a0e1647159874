// The two lexing levels of a Jinja template: the source split into text, {{ }} and
// {% %} segments (comments dropped, whitespace control applied), and the tokens of
// the expression or statement inside a tag.
//
// Whitespace follows Hugging Face's rendering environment: trim_blocks (the newline
// after a block or comment tag is dropped), lstrip_blocks (spaces and tabs before a
// block tag on its own line are dropped), "-" strips all whitespace on its side, "+"
// turns lstrip/trim off for that tag; newlines are normalised to "\n" and a single
// trailing newline of the source is dropped.
//
// Thread-safety: pure functions; they throw TemplateError on malformed input.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace llms::jinja {

struct Segment {
  enum class Kind { kText, kExpression, kStatement };
  Kind kind;
  std::string text;  // the text, or the tag's inside without its delimiters and modifiers
  int line;          // 1-based line of the segment's start, for errors
};

std::vector<Segment> split_template(std::string_view source);

struct Token {
  enum class Kind { kName, kString, kInt, kFloat, kOperator, kEnd };
  Kind kind;
  std::string text;  // name, decoded string, number text, or operator
  bool is(std::string_view op) const { return kind == Kind::kOperator && text == op; }
  bool is_name(std::string_view name) const { return kind == Kind::kName && text == name; }
};

// The tokens of a tag's inside, ending with one kEnd token.
std::vector<Token> tokenize_expression(std::string_view source, int line);

}  // namespace llms::jinja
