// The parsed form of a Jinja template: expressions and statements as the parser
// (jinja_parser.h) builds them and the interpreter (jinja_template.h) walks them.
// Immutable after parsing.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/jinja_value.h"

namespace llms::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;
using Kwargs = std::vector<std::pair<std::string, ExprPtr>>;

struct Expr {
  enum class Kind {
    kLiteral,  // value
    kName,     // name
    kList,     // children: items
    kTuple,    // children: items
    kDict,     // children: key, value, key, value, ...
    kAttr,     // children[0].name
    kItem,     // children[0][children[1]]
    kSlice,    // children[0][children[1]:children[2]:children[3]], absent parts null
    kCall,     // children[0](children[1..], kwargs)
    kFilter,   // children[0] | name(children[1..], kwargs)
    kTest,     // children[0] is [not] name(children[1..])
    kNeg,      // -children[0]
    kPos,      // +children[0]
    kNot,      // not children[0]
    kBinary,   // children[0] name children[1]: + - * / // % ** ~ and or
    kCompare,  // children[0] ops[0] children[1] ops[1] children[2] ...
    kCond,     // children[0] if children[1] else children[2] (null: undefined)
  };
  Kind kind;
  int line = 0;
  Value value;
  std::string name;
  std::vector<ExprPtr> children;
  Kwargs kwargs;
  std::vector<std::string> ops;
  bool negated = false;
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Stmt {
  enum class Kind {
    kText,         // text
    kOutput,       // {{ expr }}
    kIf,           // branches, else_body
    kFor,          // for targets in expr [if cond]: body, else_body
    kSet,          // set targets = expr, or set expr.attr = value (attr_target)
    kSetBlock,     // set targets[0]: body rendered to a string (then filtered by expr when present)
    kMacro,        // macro name(params): body
    kFilterBlock,  // filter expr (a kFilter over a placeholder): body
    kBreak,
    kContinue,
    kScope,        // body rendered as it is ({% generation %})
  };
  Kind kind;
  int line = 0;
  std::string text;
  ExprPtr expr;
  ExprPtr cond;
  ExprPtr attr_target;  // set ns.x = ...: the object
  std::string name;     // macro name, or the attribute of attr_target
  std::vector<std::string> targets;
  std::vector<std::pair<ExprPtr, Body>> branches;
  Body body;
  Body else_body;
  std::vector<std::pair<std::string, ExprPtr>> params;  // macro parameters with defaults (null: required)
};

}  // namespace llms::jinja
