#include "chat/jinja_expr_parser.h"

#include <fmt/format.h>

namespace llms::jinja {
namespace {

ExprPtr make(Expr::Kind kind, int line) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->line = line;
  return e;
}

}  // namespace

void ExprParser::fail(const std::string& what) const {
  throw TemplateError(fmt::format("line {}: {} (at '{}')", line_, what, peek().text));
}

void ExprParser::expect(std::string_view op) {
  if (!accept(op)) fail(fmt::format("expected '{}'", op));
}

std::string ExprParser::name() {
  if (peek().kind != Token::Kind::kName) fail("expected a name");
  return next().text;
}

void ExprParser::expect_end() {
  if (!at_end()) fail("unexpected tokens at the end of the tag");
}

// expression with an optional `a if b else c`.
ExprPtr ExprParser::expression(bool with_condexpr) {
  ExprPtr e = or_expr();
  if (!with_condexpr) return e;
  while (peek().is_name("if")) {
    ++i_;
    auto c = make(Expr::Kind::kCond, line_);
    c->children.push_back(std::move(e));
    c->children.push_back(or_expr());
    c->children.push_back(accept_name("else") ? expression() : nullptr);
    e = std::move(c);
  }
  return e;
}

// Comma-separated expressions; a tuple when there is a comma.
ExprPtr ExprParser::tuple(bool with_condexpr, bool simple_names) {
  std::vector<ExprPtr> items;
  bool comma = false;
  while (true) {
    if (!items.empty()) {
      if (!accept(",")) break;
      comma = true;
      if (at_end() || peek().is(")") || peek().is_name("in") || peek().is("=")) break;
    }
    items.push_back(simple_names ? primary() : expression(with_condexpr));
  }
  if (!comma && items.size() == 1) return std::move(items[0]);
  auto t = make(Expr::Kind::kTuple, line_);
  t->children = std::move(items);
  return t;
}

// Names a for loop or set assigns: `x` or `a, b`.
std::vector<std::string> ExprParser::targets() {
  std::vector<std::string> names{name()};
  while (accept(",")) names.push_back(name());
  return names;
}

// Call arguments after '(': positional and name=value.
void ExprParser::call_args(Expr* e) {
  while (!accept(")")) {
    if (peek().kind == Token::Kind::kName && peek(1).is("=")) {
      std::string key = next().text;
      ++i_;
      e->kwargs.emplace_back(std::move(key), expression());
    } else {
      if (!e->kwargs.empty()) fail("a positional argument follows a keyword argument");
      e->children.push_back(expression());
    }
    if (!accept(",")) {
      expect(")");
      break;
    }
  }
}

ExprPtr ExprParser::or_expr() { return binary_chain(&ExprParser::and_expr, "or"); }
ExprPtr ExprParser::and_expr() { return binary_chain(&ExprParser::not_expr, "and"); }

ExprPtr ExprParser::binary_chain(ExprPtr (ExprParser::*sub)(), std::string_view keyword) {
  ExprPtr left = (this->*sub)();
  while (peek().is_name(keyword)) {
    ++i_;
    auto b = make(Expr::Kind::kBinary, line_);
    b->name = std::string(keyword);
    b->children.push_back(std::move(left));
    b->children.push_back((this->*sub)());
    left = std::move(b);
  }
  return left;
}

ExprPtr ExprParser::not_expr() {
  if (accept_name("not")) {
    auto n = make(Expr::Kind::kNot, line_);
    n->children.push_back(not_expr());
    return n;
  }
  return compare();
}

ExprPtr ExprParser::compare() {
  ExprPtr first = math1();
  ExprPtr cmp;
  while (true) {
    std::string op;
    const Token& t = peek();
    if (t.is("==") || t.is("!=") || t.is("<") || t.is(">") || t.is("<=") || t.is(">=")) {
      op = next().text;
    } else if (t.is_name("in")) {
      ++i_;
      op = "in";
    } else if (t.is_name("not") && peek(1).is_name("in")) {
      i_ += 2;
      op = "notin";
    } else {
      break;
    }
    if (!cmp) {
      cmp = make(Expr::Kind::kCompare, line_);
      cmp->children.push_back(std::move(first));
    }
    cmp->ops.push_back(op);
    cmp->children.push_back(math1());
  }
  return cmp ? std::move(cmp) : std::move(first);
}

ExprPtr ExprParser::binary(std::string op, ExprPtr a, ExprPtr b) {
  auto e = make(Expr::Kind::kBinary, line_);
  e->name = std::move(op);
  e->children.push_back(std::move(a));
  e->children.push_back(std::move(b));
  return e;
}

ExprPtr ExprParser::math1() {
  ExprPtr left = concat();
  while (peek().is("+") || peek().is("-")) {
    std::string op = next().text;
    left = binary(op, std::move(left), concat());
  }
  return left;
}

ExprPtr ExprParser::concat() {
  ExprPtr left = math2();
  while (accept("~")) left = binary("~", std::move(left), math2());
  return left;
}

ExprPtr ExprParser::math2() {
  ExprPtr left = power();
  while (peek().is("*") || peek().is("/") || peek().is("//") || peek().is("%")) {
    std::string op = next().text;
    left = binary(op, std::move(left), power());
  }
  return left;
}

ExprPtr ExprParser::power() {
  ExprPtr left = unary(true);
  while (accept("**")) left = binary("**", std::move(left), unary(true));
  return left;
}

ExprPtr ExprParser::unary(bool with_filter) {
  ExprPtr e;
  if (peek().is("-") || peek().is("+")) {
    const bool neg = next().text == "-";
    e = make(neg ? Expr::Kind::kNeg : Expr::Kind::kPos, line_);
    e->children.push_back(unary(false));
  } else {
    e = postfix(primary());
  }
  return with_filter ? filters(std::move(e)) : std::move(e);
}

ExprPtr ExprParser::primary() {
  const Token t = next();
  switch (t.kind) {
    case Token::Kind::kName: {
      auto e = make(Expr::Kind::kLiteral, line_);
      if (t.text == "true" || t.text == "True") e->value = Value(true);
      else if (t.text == "false" || t.text == "False") e->value = Value(false);
      else if (t.text == "none" || t.text == "None") e->value = Value::none();
      else {
        e->kind = Expr::Kind::kName;
        e->name = t.text;
      }
      return e;
    }
    case Token::Kind::kString: {
      std::string s = t.text;
      while (peek().kind == Token::Kind::kString) s += next().text;
      auto e = make(Expr::Kind::kLiteral, line_);
      e->value = Value(std::move(s));
      return e;
    }
    case Token::Kind::kInt:
    case Token::Kind::kFloat: {
      auto e = make(Expr::Kind::kLiteral, line_);
      try {
        e->value = t.kind == Token::Kind::kInt ? Value(static_cast<int64_t>(std::stoll(t.text))) : Value(std::stod(t.text));
      } catch (const std::exception&) {
        fail("a number out of range");
      }
      return e;
    }
    case Token::Kind::kOperator: break;
    case Token::Kind::kEnd: fail("unexpected end of expression");
  }
  if (t.is("(")) {
    if (accept(")")) return make(Expr::Kind::kTuple, line_);
    ExprPtr e = tuple();
    expect(")");
    return e;
  }
  if (t.is("[")) {
    auto e = make(Expr::Kind::kList, line_);
    while (!accept("]")) {
      e->children.push_back(expression());
      if (!accept(",")) {
        expect("]");
        break;
      }
    }
    return e;
  }
  if (t.is("{")) {
    auto e = make(Expr::Kind::kDict, line_);
    while (!accept("}")) {
      e->children.push_back(expression());
      expect(":");
      e->children.push_back(expression());
      if (!accept(",")) {
        expect("}");
        break;
      }
    }
    return e;
  }
  --i_;
  fail("unexpected token");
}

ExprPtr ExprParser::postfix(ExprPtr e) {
  while (true) {
    if (accept(".")) {
      auto a = make(Expr::Kind::kAttr, line_);
      const Token t = next();
      if (t.kind != Token::Kind::kName && t.kind != Token::Kind::kInt) fail("expected an attribute name");
      a->name = t.text;
      a->children.push_back(std::move(e));
      e = std::move(a);
    } else if (accept("[")) {
      e = subscript(std::move(e));
    } else if (accept("(")) {
      auto c = make(Expr::Kind::kCall, line_);
      c->children.push_back(std::move(e));
      call_args(c.get());
      e = std::move(c);
    } else {
      return e;
    }
  }
}

ExprPtr ExprParser::subscript(ExprPtr obj) {
  std::vector<ExprPtr> parts;
  bool slice = false;
  for (int k = 0; k < 3; ++k) {
    if (peek().is(":") || peek().is("]")) {
      parts.push_back(nullptr);
    } else {
      parts.push_back(expression());
    }
    if (!accept(":")) break;
    slice = true;
  }
  expect("]");
  if (!slice) {
    auto e = make(Expr::Kind::kItem, line_);
    e->children.push_back(std::move(obj));
    e->children.push_back(std::move(parts[0]));
    return e;
  }
  auto e = make(Expr::Kind::kSlice, line_);
  e->children.push_back(std::move(obj));
  while (parts.size() < 3) parts.push_back(nullptr);
  for (auto& p : parts) e->children.push_back(std::move(p));
  return e;
}

// `| filter(args)` and `is [not] test args`, chained.
ExprPtr ExprParser::filters(ExprPtr e) {
  while (true) {
    if (accept("|")) {
      auto f = make(Expr::Kind::kFilter, line_);
      f->name = name();
      f->children.push_back(std::move(e));
      if (accept("(")) call_args(f.get());
      e = std::move(f);
    } else if (accept_name("is")) {
      auto t = make(Expr::Kind::kTest, line_);
      t->negated = accept_name("not");
      t->name = name();
      t->children.push_back(std::move(e));
      if (accept("(")) {
        call_args(t.get());
      } else if (test_argument_follows()) {
        t->children.push_back(postfix(primary()));
      }
      e = std::move(t);
    } else {
      return e;
    }
  }
}

// `x is divisibleby 3`: one argument without parentheses.
bool ExprParser::test_argument_follows() const {
  const Token& t = peek();
  if (t.kind == Token::Kind::kName) {
    return t.text != "else" && t.text != "or" && t.text != "and" && t.text != "if" && t.text != "in" &&
           t.text != "not" && t.text != "is";
  }
  return t.kind == Token::Kind::kString || t.kind == Token::Kind::kInt || t.kind == Token::Kind::kFloat ||
         t.is("[") || t.is("{");
}

}  // namespace llms::jinja
