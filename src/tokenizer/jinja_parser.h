// Parses a template's segments into statements, with Jinja's operator precedence:
// conditional < or < and < not < comparisons and `in` < + - < ~ < * / // % < ** <
// unary minus < filters and tests < calls, attributes and subscripts.
//
// Thread-safety: a pure function; throws TemplateError naming the line.
#pragma once

#include <string_view>

#include "tokenizer/jinja_ast.h"

namespace llms::jinja {

Body parse_template(std::string_view source);

}  // namespace llms::jinja
