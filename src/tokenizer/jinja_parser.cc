#include "tokenizer/jinja_parser.h"

#include <fmt/format.h>

#include "tokenizer/jinja_lexer.h"

namespace llms::jinja {
namespace {

ExprPtr make(Expr::Kind kind, int line) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->line = line;
  return e;
}

// Recursive descent over one tag's tokens.
class ExprParser {
 public:
  ExprParser(std::vector<Token> tokens, int line) : t_(std::move(tokens)), line_(line) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw TemplateError(fmt::format("line {}: {} (at '{}')", line_, what, peek().text));
  }
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
  void expect(std::string_view op) {
    if (!accept(op)) fail(fmt::format("expected '{}'", op));
  }
  std::string name() {
    if (peek().kind != Token::Kind::kName) fail("expected a name");
    return next().text;
  }
  void expect_end() {
    if (!at_end()) fail("unexpected tokens at the end of the tag");
  }

  // expression with an optional `a if b else c`.
  ExprPtr expression(bool with_condexpr = true) {
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

  // Comma-separated expressions; a tuple when there is a comma (or `force_tuple`).
  ExprPtr tuple(bool with_condexpr = true, bool simple_names = false) {
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
  std::vector<std::string> targets() {
    std::vector<std::string> names{name()};
    while (accept(",")) names.push_back(name());
    return names;
  }

  // Call arguments after '(': positional and name=value.
  void call_args(Expr* e) {
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

 private:
  ExprPtr or_expr() { return binary_chain(&ExprParser::and_expr, "or"); }
  ExprPtr and_expr() { return binary_chain(&ExprParser::not_expr, "and"); }

  ExprPtr binary_chain(ExprPtr (ExprParser::*sub)(), std::string_view keyword) {
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

  ExprPtr not_expr() {
    if (accept_name("not")) {
      auto n = make(Expr::Kind::kNot, line_);
      n->children.push_back(not_expr());
      return n;
    }
    return compare();
  }

  ExprPtr compare() {
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

  ExprPtr binary(std::string op, ExprPtr a, ExprPtr b) {
    auto e = make(Expr::Kind::kBinary, line_);
    e->name = std::move(op);
    e->children.push_back(std::move(a));
    e->children.push_back(std::move(b));
    return e;
  }

  ExprPtr math1() {
    ExprPtr left = concat();
    while (peek().is("+") || peek().is("-")) {
      std::string op = next().text;
      left = binary(op, std::move(left), concat());
    }
    return left;
  }

  ExprPtr concat() {
    ExprPtr left = math2();
    while (accept("~")) left = binary("~", std::move(left), math2());
    return left;
  }

  ExprPtr math2() {
    ExprPtr left = power();
    while (peek().is("*") || peek().is("/") || peek().is("//") || peek().is("%")) {
      std::string op = next().text;
      left = binary(op, std::move(left), power());
    }
    return left;
  }

  ExprPtr power() {
    ExprPtr left = unary(true);
    while (accept("**")) left = binary("**", std::move(left), unary(true));
    return left;
  }

  ExprPtr unary(bool with_filter) {
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

 public:
  ExprPtr primary() {
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

  ExprPtr postfix(ExprPtr e) {
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

  ExprPtr subscript(ExprPtr obj) {
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
  ExprPtr filters(ExprPtr e) {
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

 private:
  // `x is divisibleby 3`: one argument without parentheses.
  bool test_argument_follows() const {
    const Token& t = peek();
    if (t.kind == Token::Kind::kName) {
      return t.text != "else" && t.text != "or" && t.text != "and" && t.text != "if" && t.text != "in" &&
             t.text != "not" && t.text != "is";
    }
    return t.kind == Token::Kind::kString || t.kind == Token::Kind::kInt || t.kind == Token::Kind::kFloat ||
           t.is("[") || t.is("{");
  }

  std::vector<Token> t_;
  size_t i_ = 0;
  int line_;
};

// Statements over the segment list.
class TemplateParser {
 public:
  explicit TemplateParser(std::vector<Segment> segs) : segs_(std::move(segs)) {}

  Body parse() {
    std::string end;
    Body body = block({}, &end);
    return body;
  }

 private:
  // Statements until one of `ends` ({% endif %}, {% else %}, ...); the tag that ended
  // the block goes to *end, with its parser positioned after the keyword.
  Body block(const std::vector<std::string_view>& ends, std::string* end, std::unique_ptr<ExprParser>* end_tag = nullptr) {
    Body body;
    while (pos_ < segs_.size()) {
      const Segment& s = segs_[pos_++];
      if (s.kind == Segment::Kind::kText) {
        auto st = stmt(Stmt::Kind::kText, s.line);
        st->text = s.text;
        body.push_back(std::move(st));
        continue;
      }
      auto p = std::make_unique<ExprParser>(tokenize_expression(s.text, s.line), s.line);
      if (s.kind == Segment::Kind::kExpression) {
        auto st = stmt(Stmt::Kind::kOutput, s.line);
        st->expr = p->tuple();
        p->expect_end();
        body.push_back(std::move(st));
        continue;
      }
      const std::string keyword = p->name();
      for (std::string_view e : ends) {
        if (keyword == e) {
          *end = keyword;
          if (end_tag) *end_tag = std::move(p);
          else p->expect_end();
          return body;
        }
      }
      body.push_back(statement(keyword, *p, s.line));
    }
    if (!ends.empty()) {
      throw TemplateError(fmt::format("the template ended inside a block: expected {{% {} %}}", ends.back()));
    }
    return body;
  }

  static StmtPtr stmt(Stmt::Kind kind, int line) {
    auto s = std::make_unique<Stmt>();
    s->kind = kind;
    s->line = line;
    return s;
  }

  StmtPtr statement(const std::string& keyword, ExprParser& p, int line) {
    if (keyword == "if") return if_stmt(p, line);
    if (keyword == "for") return for_stmt(p, line);
    if (keyword == "set") return set_stmt(p, line);
    if (keyword == "macro") return macro_stmt(p, line);
    if (keyword == "filter") return filter_stmt(p, line);
    if (keyword == "break" || keyword == "continue") {
      p.expect_end();
      return stmt(keyword == "break" ? Stmt::Kind::kBreak : Stmt::Kind::kContinue, line);
    }
    if (keyword == "generation") {
      p.expect_end();
      auto s = stmt(Stmt::Kind::kScope, line);
      std::string end;
      s->body = block({"endgeneration"}, &end);
      return s;
    }
    throw TemplateError(fmt::format("line {}: unsupported tag '{{% {} %}}'", line, keyword));
  }

  StmtPtr if_stmt(ExprParser& p, int line) {
    auto s = stmt(Stmt::Kind::kIf, line);
    ExprPtr cond = p.tuple();
    p.expect_end();
    while (true) {
      std::string end;
      std::unique_ptr<ExprParser> tag;
      Body body = block({"elif", "else", "endif"}, &end, &tag);
      s->branches.emplace_back(std::move(cond), std::move(body));
      if (end == "elif") {
        cond = tag->tuple();
        tag->expect_end();
        continue;
      }
      tag->expect_end();
      if (end == "else") s->else_body = block({"endif"}, &end);
      return s;
    }
  }

  StmtPtr for_stmt(ExprParser& p, int line) {
    auto s = stmt(Stmt::Kind::kFor, line);
    s->targets = p.targets();
    if (!p.accept_name("in")) p.fail("expected 'in'");
    s->expr = p.tuple(/*with_condexpr=*/false);
    if (p.accept_name("if")) s->cond = p.expression();
    if (p.accept_name("recursive")) p.fail("recursive loops are not supported");
    p.expect_end();
    std::string end;
    std::unique_ptr<ExprParser> tag;
    s->body = block({"else", "endfor"}, &end, &tag);
    tag->expect_end();
    if (end == "else") s->else_body = block({"endfor"}, &end);
    return s;
  }

  StmtPtr set_stmt(ExprParser& p, int line) {
    const std::string first = p.name();
    if (p.accept(".")) {
      auto s = stmt(Stmt::Kind::kSet, line);
      auto obj = std::make_unique<Expr>();
      obj->kind = Expr::Kind::kName;
      obj->name = first;
      obj->line = line;
      s->attr_target = std::move(obj);
      s->name = p.name();
      p.expect("=");
      s->expr = p.tuple();
      p.expect_end();
      return s;
    }
    std::vector<std::string> names{first};
    while (p.accept(",")) names.push_back(p.name());
    if (p.accept("=")) {
      auto s = stmt(Stmt::Kind::kSet, line);
      s->targets = std::move(names);
      s->expr = p.tuple();
      p.expect_end();
      return s;
    }
    // {% set x %}...{% endset %}, optionally {% set x | filter %}.
    auto s = stmt(Stmt::Kind::kSetBlock, line);
    if (names.size() != 1) p.fail("a block set assigns one name");
    s->targets = std::move(names);
    if (p.peek().is("|")) s->expr = filter_chain(p, line);
    p.expect_end();
    std::string end;
    s->body = block({"endset"}, &end);
    return s;
  }

  StmtPtr macro_stmt(ExprParser& p, int line) {
    auto s = stmt(Stmt::Kind::kMacro, line);
    s->name = p.name();
    p.expect("(");
    while (!p.accept(")")) {
      std::string param = p.name();
      ExprPtr def;
      if (p.accept("=")) def = p.expression();
      s->params.emplace_back(std::move(param), std::move(def));
      if (!p.accept(",")) {
        p.expect(")");
        break;
      }
    }
    p.expect_end();
    std::string end;
    s->body = block({"endmacro"}, &end);
    return s;
  }

  // A filter chain applied to a placeholder name the interpreter binds to the body.
  static ExprPtr filter_chain(ExprParser& p, int line) {
    auto placeholder = std::make_unique<Expr>();
    placeholder->kind = Expr::Kind::kName;
    placeholder->name = " body";
    placeholder->line = line;
    if (!p.peek().is("|")) p.fail("expected a filter");
    return p.filters(std::move(placeholder));
  }

  StmtPtr filter_stmt(ExprParser& p, int line) {
    auto s = stmt(Stmt::Kind::kFilterBlock, line);
    auto placeholder = std::make_unique<Expr>();
    placeholder->kind = Expr::Kind::kName;
    placeholder->name = " body";
    auto f = std::make_unique<Expr>();
    f->kind = Expr::Kind::kFilter;
    f->line = line;
    f->name = p.name();
    f->children.push_back(std::move(placeholder));
    if (p.accept("(")) p.call_args(f.get());
    s->expr = p.filters(std::move(f));
    p.expect_end();
    std::string end;
    s->body = block({"endfilter"}, &end);
    return s;
  }

  std::vector<Segment> segs_;
  size_t pos_ = 0;
};

}  // namespace

Body parse_template(std::string_view source) { return TemplateParser(split_template(source)).parse(); }

}  // namespace llms::jinja
