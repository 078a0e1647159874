// Parses a template's segments into statements: {% if %}, {% for %}, {% set %},
// {% macro %}, {% filter %} and their blocks (jinja_parser.cc); each tag's expressions
// go to the expression parser (jinja_expr_parser.h, Jinja's operator precedence).
//
// Thread-safety: a pure function; throws TemplateError naming the line.
#pragma once

#include <string_view>

#include "chat/jinja_ast.h"

namespace llms::jinja {

Body parse_template(std::string_view source);

}  // namespace llms::jinja
