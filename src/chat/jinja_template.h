// A Jinja template interpreter for the subset Hugging Face chat templates use, so
// that any GGUF's tokenizer.chat_template renders as transformers renders it:
// {% if/elif/else %}, {% for %} with `loop`, filters and `else`, {% set %} (names,
// tuples, namespace attributes, blocks), {% macro %}, {% filter %}, {% raw %},
// {% generation %}, break/continue, and the expressions, filters, tests and methods
// of jinja_builtins.h. Whitespace control as in jinja_lexer.h.
//
// Not supported (a clear error when a template uses them): {% call %}, recursive
// loops, {% include/import/extends %}, string % formatting.
//
// Rendering is bounded: output size, loop iterations and call depth have limits, so
// a template in a model file cannot run away with the server.
//
// Thread-safety: a parsed JinjaTemplate is immutable; render() may run concurrently.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"
#include "chat/jinja_ast.h"
#include "chat/jinja_value.h"

namespace llms {

class JinjaTemplate {
 public:
  // INVALID_ARGUMENT with the line for a syntax error or an unsupported tag.
  static Result<JinjaTemplate> parse(std::string_view source);

  // `context` is a dict of the template's variables; the globals range, namespace,
  // dict, raise_exception and strftime_now are added. INVALID_ARGUMENT with the
  // template's message for raise_exception() and for type errors.
  Result<std::string> render(const jinja::Value& context) const;

 private:
  std::shared_ptr<const jinja::Body> body_;
};

}  // namespace llms
