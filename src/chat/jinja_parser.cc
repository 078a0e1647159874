#include "chat/jinja_parser.h"

#include <fmt/format.h>

#include "chat/jinja_expr_parser.h"
#include "chat/jinja_lexer.h"

namespace llms::jinja {
namespace {

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
