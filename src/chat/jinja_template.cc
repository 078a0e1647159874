// The interpreter: walks the statements with a frame per scope, as Jinja scopes
// them: a for loop's body gets a new frame each iteration (what it sets is gone after
// the iteration), `if` none, a macro call a frame over the template's top level.
#include "chat/jinja_template.h"

#include <fmt/format.h>

#include <unordered_map>

#include "chat/jinja_builtins.h"
#include "chat/jinja_parser.h"

namespace llms {

using namespace jinja;  // NOLINT: the interpreter speaks the AST's language

namespace {

constexpr size_t kMaxOutput = size_t{64} << 20;
constexpr int64_t kMaxIterations = 1'000'000;
constexpr int kMaxDepth = 200;

struct Frame {
  std::unordered_map<std::string, Value> vars;
  const Frame* parent = nullptr;

  const Value* find(const std::string& name) const {
    for (const Frame* f = this; f; f = f->parent) {
      auto it = f->vars.find(name);
      if (it != f->vars.end()) return &it->second;
    }
    return nullptr;
  }
};

enum class Flow { kNormal, kBreak, kContinue };

class Interpreter {
 public:
  explicit Interpreter(Frame* root) : root_(root) {}

  Flow exec(const Body& body, Frame& frame, std::string& out) {
    for (const StmtPtr& s : body) {
      const Flow f = exec(*s, frame, out);
      if (f != Flow::kNormal) return f;
      if (out.size() > kMaxOutput) throw TemplateError("the rendered text passed its size limit");
    }
    return Flow::kNormal;
  }

 private:
  [[noreturn]] static void fail(int line, const std::string& what) {
    throw TemplateError(fmt::format("line {}: {}", line, what));
  }

  Flow exec(const Stmt& s, Frame& frame, std::string& out) {
    switch (s.kind) {
      case Stmt::Kind::kText: out += s.text; return Flow::kNormal;
      case Stmt::Kind::kOutput: out += eval(*s.expr, frame).to_string(); return Flow::kNormal;
      case Stmt::Kind::kIf:
        for (const auto& [cond, body] : s.branches) {
          if (eval(*cond, frame).truthy()) return exec(body, frame, out);
        }
        return exec(s.else_body, frame, out);
      case Stmt::Kind::kFor: return exec_for(s, frame, out);
      case Stmt::Kind::kSet: exec_set(s, frame); return Flow::kNormal;
      case Stmt::Kind::kSetBlock: {
        std::string text;
        exec(s.body, frame, text);
        Value v(std::move(text));
        if (s.expr) v = with_body(*s.expr, frame, std::move(v));
        frame.vars[s.targets[0]] = std::move(v);
        return Flow::kNormal;
      }
      case Stmt::Kind::kMacro: frame.vars[s.name] = macro(s); return Flow::kNormal;
      case Stmt::Kind::kFilterBlock: {
        std::string text;
        exec(s.body, frame, text);
        out += with_body(*s.expr, frame, Value(std::move(text))).to_string();
        return Flow::kNormal;
      }
      case Stmt::Kind::kBreak: return Flow::kBreak;
      case Stmt::Kind::kContinue: return Flow::kContinue;
      case Stmt::Kind::kScope: return exec(s.body, frame, out);
    }
    return Flow::kNormal;
  }

  // Evaluates a filter chain over the placeholder " body" bound to `body`.
  Value with_body(const Expr& chain, Frame& frame, Value body) {
    Frame f;
    f.parent = &frame;
    f.vars[" body"] = std::move(body);
    return eval(chain, f);
  }

  void assign(const std::vector<std::string>& targets, const Value& v, Frame& frame, int line) {
    if (targets.size() == 1) {
      frame.vars[targets[0]] = v;
      return;
    }
    if (!v.is_list() || v.items().size() != targets.size()) {
      fail(line, fmt::format("cannot unpack {} into {} names", v.repr(), targets.size()));
    }
    for (size_t i = 0; i < targets.size(); ++i) frame.vars[targets[i]] = v.items()[i];
  }

  void exec_set(const Stmt& s, Frame& frame) {
    Value v = eval(*s.expr, frame);
    if (!s.attr_target) {
      assign(s.targets, v, frame, s.line);
      return;
    }
    const Value obj = eval(*s.attr_target, frame);
    if (!obj.is_namespace()) fail(s.line, "cannot assign attribute on non-namespace object");
    obj.dict_ref().set(Value(s.name), std::move(v));
  }

  Value loop_object(const ValueList& items, size_t i) {
    Value loop = Value::dict();
    Dict& d = loop.dict_ref();
    const auto n = static_cast<int64_t>(items.size());
    const auto k = static_cast<int64_t>(i);
    d.set(Value("index"), Value(k + 1));
    d.set(Value("index0"), Value(k));
    d.set(Value("revindex"), Value(n - k));
    d.set(Value("revindex0"), Value(n - k - 1));
    d.set(Value("first"), Value(i == 0));
    d.set(Value("last"), Value(k == n - 1));
    d.set(Value("length"), Value(n));
    d.set(Value("depth"), Value(int64_t{1}));
    d.set(Value("depth0"), Value(int64_t{0}));
    if (i > 0) d.set(Value("previtem"), items[i - 1]);
    if (k + 1 < n) d.set(Value("nextitem"), items[i + 1]);
    d.set(Value("cycle"), Value::function("cycle", [k](Args& a) {
            if (a.positional.empty()) throw TemplateError("no items for cycling given");
            return a.positional[static_cast<size_t>(k) % a.positional.size()];
          }));
    return loop;
  }

  Flow exec_for(const Stmt& s, Frame& frame, std::string& out) {
    const Value seq = eval(*s.expr, frame);
    ValueList items = seq.iterate();
    if (s.cond) {
      ValueList kept;
      for (const Value& item : items) {
        Frame f;
        f.parent = &frame;
        assign(s.targets, item, f, s.line);
        if (eval(*s.cond, f).truthy()) kept.push_back(item);
      }
      items = std::move(kept);
    }
    if (items.empty()) return exec(s.else_body, frame, out);
    for (size_t i = 0; i < items.size(); ++i) {
      if (++iterations_ > kMaxIterations) fail(s.line, "the template ran past its loop limit");
      Frame f;
      f.parent = &frame;
      assign(s.targets, items[i], f, s.line);
      f.vars["loop"] = loop_object(items, i);
      if (exec(s.body, f, out) == Flow::kBreak) break;
    }
    return Flow::kNormal;
  }

  Value macro(const Stmt& s) {
    const Stmt* def = &s;
    return Value::function(s.name, [this, def](Args& a) {
      if (++depth_ > kMaxDepth) fail(def->line, "macro calls nest too deep");
      Frame f;
      f.parent = root_;
      for (size_t i = 0; i < def->params.size(); ++i) {
        const auto& [param, default_expr] = def->params[i];
        Value v = a.get_or(i, param.c_str(), Value::undefined(param));
        if (v.is_undefined() && default_expr) v = eval(*default_expr, f);
        f.vars[param] = std::move(v);
      }
      std::string text;
      exec(def->body, f, text);
      --depth_;
      return Value(std::move(text));
    });
  }

  Args args_of(const Expr& e, Frame& frame) {
    Args a;
    for (size_t i = 1; i < e.children.size(); ++i) a.positional.push_back(eval(*e.children[i], frame));
    for (const auto& [k, v] : e.kwargs) a.keyword.emplace_back(k, eval(*v, frame));
    return a;
  }

  Value call(const Expr& e, Frame& frame) {
    const Expr& callee = *e.children[0];
    Args a = args_of(e, frame);
    if (callee.kind == Expr::Kind::kAttr) {
      const Value obj = eval(*callee.children[0], frame);
      if (obj.is_dict()) {
        const Value* member = obj.dict_ref().find(std::string_view(callee.name));
        if (member && member->is_function()) return member->fn()(a);
      }
      if (obj.is_undefined() || has_method(obj, callee.name)) return call_method(obj, callee.name, a);
      fail(e.line, fmt::format("'{}' object has no attribute '{}'", obj.type_name(), callee.name));
    }
    const Value f = eval(callee, frame);
    if (f.is_function()) return f.fn()(a);
    if (f.is_undefined()) fail(e.line, fmt::format("'{}' is undefined", f.undefined_name()));
    fail(e.line, fmt::format("'{}' object is not callable", f.type_name()));
  }

  bool compare(const std::string& op, const Value& a, const Value& b) {
    if (op == "==") return a.equals(b);
    if (op == "!=") return !a.equals(b);
    if (op == "<") return a.less_than(b);
    if (op == ">") return b.less_than(a);
    if (op == "<=") return !b.less_than(a);
    if (op == ">=") return !a.less_than(b);
    if (op == "in") return contains(b, a);
    return !contains(b, a);  // notin
  }

  Value eval(const Expr& e, Frame& frame) {
    switch (e.kind) {
      case Expr::Kind::kLiteral: return e.value;
      case Expr::Kind::kName: {
        if (const Value* v = frame.find(e.name)) return *v;
        return global_function(e.name);
      }
      case Expr::Kind::kList:
      case Expr::Kind::kTuple: {
        ValueList items;
        for (const ExprPtr& c : e.children) items.push_back(eval(*c, frame));
        return e.kind == Expr::Kind::kList ? Value::list(std::move(items)) : Value::tuple(std::move(items));
      }
      case Expr::Kind::kDict: {
        Value d = Value::dict();
        for (size_t i = 0; i + 1 < e.children.size(); i += 2) {
          d.dict_ref().set(eval(*e.children[i], frame), eval(*e.children[i + 1], frame));
        }
        return d;
      }
      case Expr::Kind::kAttr: return get_attribute(eval(*e.children[0], frame), e.name);
      case Expr::Kind::kItem: return get_item(eval(*e.children[0], frame), eval(*e.children[1], frame));
      case Expr::Kind::kSlice: {
        const auto part = [&](size_t i) { return e.children[i] ? eval(*e.children[i], frame) : Value(); };
        return get_slice(eval(*e.children[0], frame), part(1), part(2), part(3));
      }
      case Expr::Kind::kCall: return call(e, frame);
      case Expr::Kind::kFilter: return apply_filter(e.name, eval(*e.children[0], frame), args_of(e, frame));
      case Expr::Kind::kTest: return Value(apply_test(e.name, eval(*e.children[0], frame), args_of(e, frame)) != e.negated);
      case Expr::Kind::kNeg:
      case Expr::Kind::kPos: {
        const Value v = eval(*e.children[0], frame);
        if (!v.is_number()) fail(e.line, fmt::format("bad operand type for unary -: '{}'", v.type_name()));
        if (e.kind == Expr::Kind::kPos) return v;
        return v.is_float() ? Value(-v.as_number()) : Value(-v.as_int());
      }
      case Expr::Kind::kNot: return Value(!eval(*e.children[0], frame).truthy());
      case Expr::Kind::kBinary: {
        Value a = eval(*e.children[0], frame);
        if (e.name == "and") return a.truthy() ? eval(*e.children[1], frame) : a;
        if (e.name == "or") return a.truthy() ? a : eval(*e.children[1], frame);
        return binary_op(e.name, a, eval(*e.children[1], frame));
      }
      case Expr::Kind::kCompare: {
        Value left = eval(*e.children[0], frame);
        for (size_t i = 0; i < e.ops.size(); ++i) {
          Value right = eval(*e.children[i + 1], frame);
          if (!compare(e.ops[i], left, right)) return Value(false);
          left = std::move(right);
        }
        return Value(true);
      }
      case Expr::Kind::kCond:
        if (eval(*e.children[1], frame).truthy()) return eval(*e.children[0], frame);
        return e.children[2] ? eval(*e.children[2], frame) : Value();
    }
    return Value();
  }

  Frame* root_;
  int64_t iterations_ = 0;
  int depth_ = 0;
};

}  // namespace

Result<JinjaTemplate> JinjaTemplate::parse(std::string_view source) {
  try {
    JinjaTemplate t;
    t.body_ = std::make_shared<const Body>(parse_template(source));
    return t;
  } catch (const TemplateError& e) {
    return invalid_argument(fmt::format("chat template: {}", e.what()));
  }
}

Result<std::string> JinjaTemplate::render(const Value& context) const {
  Frame root;
  if (context.is_dict()) {
    for (const auto& [k, v] : context.dict_ref().entries) root.vars[k.to_string()] = v;
  }
  Interpreter interp(&root);
  std::string out;
  try {
    interp.exec(*body_, root, out);
  } catch (const TemplateError& e) {
    return invalid_argument(fmt::format("chat template: {}", e.what()));
  } catch (const std::exception& e) {
    return invalid_argument(fmt::format("chat template: {}", e.what()));
  }
  return out;
}

}  // namespace llms
