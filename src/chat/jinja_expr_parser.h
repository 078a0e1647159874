// The expression half of the Jinja parser (jinja_parser.h): recursive descent over
// one tag's tokens, with Jinja's operator precedence: conditional < or < and < not <
// comparisons and `in` < + - < ~ < * / // % < ** < unary minus < filters and tests <
// calls, attributes and subscripts. The statement parser (jinja_parser.cc) reads a
// tag's keyword and clauses through the public methods below.
//
// Thread-safety: one parser per tag, used by one thread; errors throw TemplateError
// naming the line.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "chat/jinja_ast.h"
#include "chat/jinja_lexer.h"

namespace llms::jinja {

class ExprParser {
 public:
  ExprParser(std::vector<Token> tokens, int line) : t_(std::move(tokens)), line_(line) {}

  [[noreturn]] void fail(const std::string& what) const;
  const Token& peek(size_t ahead = 0) const { return t_[std::min(i_ + ahead, t_.size() - 1)]; }
  Token next() { return t_[i_ < t_.size() - 1 ? i_++ : i_]; }
  bool at_end() const { return peek().kind == Token::Kind::kEnd; }
  bool accept(std::string_view op) {
    if (!peek().is(op)) return false;
    ++i_;
    return true;
  }
  bool accept_name(std::string_view name) {
    if (!peek().is_name(name)) return false;
    ++i_;
    return true;
  }
  void expect(std::string_view op);
  std::string name();
  void expect_end();

  // expression with an optional `a if b else c`.
  ExprPtr expression(bool with_condexpr = true);
  // Comma-separated expressions; a tuple when there is a comma.
  ExprPtr tuple(bool with_condexpr = true, bool simple_names = false);
  // Names a for loop or set assigns: `x` or `a, b`.
  std::vector<std::string> targets();
  // Call arguments after '(': positional and name=value.
  void call_args(Expr* e);
  // A literal, a name, or a parenthesised, list or dict expression.
  ExprPtr primary();
  // `| filter(args)` and `is [not] test args`, chained.
  ExprPtr filters(ExprPtr e);

 private:
  ExprPtr or_expr();
  ExprPtr and_expr();
  ExprPtr binary_chain(ExprPtr (ExprParser::*sub)(), std::string_view keyword);
  ExprPtr not_expr();
  ExprPtr compare();
  ExprPtr binary(std::string op, ExprPtr a, ExprPtr b);
  ExprPtr math1();
  ExprPtr concat();
  ExprPtr math2();
  ExprPtr power();
  ExprPtr unary(bool with_filter);
  ExprPtr postfix(ExprPtr e);
  ExprPtr subscript(ExprPtr obj);
  // `x is divisibleby 3`: one argument without parentheses.
  bool test_argument_follows() const;

  std::vector<Token> t_;
  size_t i_ = 0;
  int line_;
};

}  // namespace llms::jinja
