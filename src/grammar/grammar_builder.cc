#include "grammar/grammar_builder.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <optional>

#include "grammar/grammar_checks.h"

namespace llms {

GrammarExpr GrammarExpr::lit(std::string_view bytes) {
  GrammarExpr e;
  e.kind = Kind::kLiteral;
  e.literal = std::string(bytes);
  return e;
}

GrammarExpr GrammarExpr::byte_set(const ByteSet& set) {
  GrammarExpr e;
  e.kind = Kind::kBytes;
  e.bytes = set;
  return e;
}

GrammarExpr GrammarExpr::char_ranges(CodepointRanges ranges) {
  GrammarExpr e;
  e.kind = Kind::kChars;
  e.chars = std::move(ranges);
  return e;
}

GrammarExpr GrammarExpr::ref(int32_t rule) {
  GrammarExpr e;
  e.kind = Kind::kRef;
  e.rule = rule;
  return e;
}

GrammarExpr GrammarExpr::seq(std::vector<GrammarExpr> items) {
  if (items.size() == 1) return std::move(items[0]);
  GrammarExpr e;
  e.kind = Kind::kSeq;
  e.items = std::move(items);
  return e;
}

GrammarExpr GrammarExpr::alt(std::vector<GrammarExpr> items) {
  if (items.size() == 1) return std::move(items[0]);
  GrammarExpr e;
  e.kind = Kind::kAlt;
  e.items = std::move(items);
  return e;
}

GrammarExpr GrammarExpr::repeat(GrammarExpr item, int min, int max) {
  // A repetition of a repetition is one repetition when that keeps the language:
  // (x{a,}){b,} = x{ab,} (b >= 1), (x{0,1}){b,} = x*, (x{a,})* and (x{a,})? = x* for
  // a <= 1, (x?)? = x?. Nested loops ("."+++...) would otherwise each be a rule, and
  // the precomputation's stacks grow with every level.
  while ((item.kind == Kind::kSeq || item.kind == Kind::kAlt) && item.items.size() == 1) {
    GrammarExpr inner = std::move(item.items[0]);
    item = std::move(inner);
  }
  if (item.kind == Kind::kRepeat) {
    const int a = item.min, a_max = item.max;
    const bool inner_open = a_max == kUnbounded, outer_open = max == kUnbounded;
    int new_min = -1, new_max = 0;
    if (inner_open && outer_open && min >= 1 && static_cast<int64_t>(a) * min <= (1 << 20)) {
      new_min = a * min, new_max = kUnbounded;
    } else if (a == 0 && a_max == 1 && outer_open) {
      new_min = 0, new_max = kUnbounded;
    } else if (inner_open && a <= 1 && min == 0 && max != 0) {
      new_min = 0, new_max = kUnbounded;
    } else if (a == 0 && a_max == 1 && min == 0 && max == 1) {
      new_min = 0, new_max = 1;
    }
    if (new_min >= 0) {
      GrammarExpr inner = std::move(item.items[0]);
      return repeat(std::move(inner), new_min, new_max);
    }
  }
  GrammarExpr e;
  e.kind = Kind::kRepeat;
  e.items.push_back(std::move(item));
  e.min = min;
  e.max = max;
  return e;
}

int32_t GrammarBuilder::declare(std::string_view name) {
  std::string unique(name);
  for (int n = 1; by_name_.count(unique); ++n) unique = fmt::format("{}-{}", name, n);
  const auto id = static_cast<int32_t>(names_.size());
  names_.push_back(unique);
  bodies_.emplace_back();
  by_name_.emplace(unique, id);
  return id;
}

int32_t GrammarBuilder::find(std::string_view name) const {
  const auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? -1 : it->second;
}

void GrammarBuilder::define(int32_t rule, GrammarExpr body) {
  bodies_[static_cast<size_t>(rule)] = Body{true, std::move(body)};
}

// Turns expression trees into the flat element array, creating auxiliary rules for
// nested alternations and repetitions.
class GrammarBuilder::Lowering {
 public:
  using Alt = std::vector<Element>;

  Lowering(GrammarBuilder& b, Grammar& g) : b_(b), g_(g) {}

  Status lower(int32_t rule) {
    std::vector<Alt> alts;
    LLMS_RETURN_IF_ERROR(alternatives_of(b_.bodies_[static_cast<size_t>(rule)].expr, &alts));
    return commit(rule, alts);
  }

 private:
  Status alternatives_of(const GrammarExpr& e, std::vector<Alt>* alts) {
    if (e.kind == GrammarExpr::Kind::kAlt) {
      for (const GrammarExpr& item : e.items) LLMS_RETURN_IF_ERROR(alternatives_of(item, alts));
      return ok_status();
    }
    Alt alt;
    LLMS_RETURN_IF_ERROR(append(e, &alt));
    alts->push_back(std::move(alt));
    return ok_status();
  }

  Status append(const GrammarExpr& e, Alt* out) {
    if (!charge(1)) return compile_stop_status(*b_.limits_.meter);
    switch (e.kind) {
      case GrammarExpr::Kind::kEmpty: return ok_status();
      case GrammarExpr::Kind::kLiteral:
        for (const char c : e.literal) {
          ByteSet one;
          one.set(static_cast<uint8_t>(c));
          out->push_back({ElementKind::kBytes, intern_bytes(one)});
        }
        return ok_status();
      case GrammarExpr::Kind::kBytes: out->push_back({ElementKind::kBytes, intern_bytes(e.bytes)}); return ok_status();
      case GrammarExpr::Kind::kChars: return append_chars(e.chars, out);
      case GrammarExpr::Kind::kRef:
        if (e.rule < 0 || e.rule >= static_cast<int32_t>(b_.bodies_.size())) return internal_error("bad rule reference");
        if (!b_.defined(e.rule)) return invalid_argument(fmt::format("rule '{}' is used but never defined", b_.name(e.rule)));
        out->push_back({ElementKind::kRule, e.rule});
        return ok_status();
      case GrammarExpr::Kind::kSeq:
        for (const GrammarExpr& item : e.items) LLMS_RETURN_IF_ERROR(append(item, out));
        return ok_status();
      case GrammarExpr::Kind::kAlt: {
        std::vector<Alt> alts;
        LLMS_RETURN_IF_ERROR(alternatives_of(e, &alts));
        LLMS_ASSIGN_OR_RETURN(const int32_t aux, aux_rule("alt", alts));
        out->push_back({ElementKind::kRule, aux});
        return ok_status();
      }
      case GrammarExpr::Kind::kRepeat: return append_repeat(e, out);
    }
    return internal_error("unhandled expression kind");
  }

  Status append_chars(const CodepointRanges& raw, Alt* out) {
    const CodepointRanges ranges = normalize_ranges(raw);
    if (ranges.empty() || ranges.back().second < 0x80) {
      ByteSet set;
      for (const auto& [lo, hi] : ranges) set.set_range(static_cast<uint8_t>(lo), static_cast<uint8_t>(hi));
      out->push_back({ElementKind::kBytes, intern_bytes(set)});
      return ok_status();
    }
    auto it = char_ids_.find(ranges);
    if (it == char_ids_.end()) {
      CharClass cls(ranges);
      if (cls.num_states() > CharClass::kMaxStates) {
        return invalid_argument(fmt::format("the character class {} is too complex", ranges_to_string(ranges)));
      }
      it = char_ids_.emplace(ranges, static_cast<int32_t>(g_.char_classes_.size())).first;
      g_.char_classes_.push_back(std::move(cls));
    }
    out->push_back({ElementKind::kChars, it->second});
    return ok_status();
  }

  // The alternatives one iteration of `item` may take. A reference to a small rule
  // is inlined so that the loop does not open a frame per iteration.
  Status unit_alternatives(const GrammarExpr& item, std::vector<Alt>* alts) {
    if (item.kind == GrammarExpr::Kind::kRef && item.rule >= 0 && item.rule < static_cast<int32_t>(b_.bodies_.size()) &&
        b_.defined(item.rule) && expr_size(b_.bodies_[static_cast<size_t>(item.rule)].expr) <= kInlineLimit &&
        !refers_to(b_.bodies_[static_cast<size_t>(item.rule)].expr, item.rule)) {
      return alternatives_of(b_.bodies_[static_cast<size_t>(item.rule)].expr, alts);
    }
    return alternatives_of(item, alts);
  }

  Status check_bounds(const GrammarExpr& e) const {
    if (e.min < 0 || e.min > b_.limits_.max_repeat || e.max > b_.limits_.max_repeat ||
        (e.max != GrammarExpr::kUnbounded && e.max < e.min)) {
      return invalid_argument(fmt::format("repetition {{{},{}}} is out of range (bounds must be 0..{}, min <= max)", e.min,
                                          e.max, b_.limits_.max_repeat));
    }
    return ok_status();
  }

  // The counts of a repetition; max kOpen when unbounded. or_empty: zero copies too,
  // below a gap (min > 1).
  static constexpr int64_t kOpen = -1;
  struct Counts {
    int64_t min = 0;
    int64_t max = 0;
    bool or_empty = false;
  };

  // The counts of (x{a1,a2}){outer} as one repetition of x, when the counts
  // k*[a1,a2] over the outer's k form one interval (possibly with 0 below a gap);
  // false when they do not. The intervals of k and k+1 touch when
  // a1 <= k*(a2-a1) + 1, which only gets easier as k grows: the smallest k decides.
  static bool merge(const Counts& outer, int64_t a1, int64_t a2, Counts* out) {
    if (outer.or_empty) return false;
    const int64_t b1 = outer.min, b2 = outer.max;
    if (b2 == 0 || a2 == 0) {
      *out = Counts{};
      return true;
    }
    const int64_t k0 = std::max<int64_t>(b1, 1);
    if (b2 != k0 && a2 != kOpen && a1 > k0 * (a2 - a1) + 1) return false;
    const bool gap = b1 == 0 && a1 > 1;  // {0} and [a1, ...] do not touch
    out->min = b1 == 0 && !gap ? 0 : k0 * a1;
    out->max = a2 == kOpen || b2 == kOpen ? kOpen : b2 * a2;
    out->or_empty = gap;
    return true;
  }

  Status append_repeat(const GrammarExpr& e, Alt* out) {
    LLMS_RETURN_IF_ERROR(check_bounds(e));
    Counts c{e.min, e.max == GrammarExpr::kUnbounded ? kOpen : e.max, false};
    const GrammarExpr* item = &e.items[0];
    while (item->kind == GrammarExpr::Kind::kRepeat) {
      LLMS_RETURN_IF_ERROR(check_bounds(*item));
      Counts merged;
      if (!merge(c, item->min, item->max == GrammarExpr::kUnbounded ? kOpen : item->max, &merged)) break;
      if (merged.min > kMaxMergedRepeat || merged.max > kMaxMergedRepeat) {
        return resource_exhausted(fmt::format(
            "the grammar is too complex: nested repetitions allow more than {} copies of an item; lower their bounds",
            kMaxMergedRepeat));
      }
      c = merged;
      item = &item->items[0];
    }
    std::vector<Alt> unit;
    LLMS_RETURN_IF_ERROR(unit_alternatives(*item, &unit));
    if (!c.or_empty) return append_counted(unit, c.min, c.max, out);
    Alt some;
    LLMS_RETURN_IF_ERROR(append_counted(unit, c.min, c.max, &some));
    LLMS_ASSIGN_OR_RETURN(const int32_t aux, aux_rule("opt", {std::move(some), Alt{}}));
    out->push_back({ElementKind::kRule, aux});
    return ok_status();
  }

  // One element for one copy of `unit`: its only element, or a rule of its alternatives.
  Result<Element> once_of(const std::vector<Alt>& unit) {
    if (unit.size() == 1 && unit[0].size() == 1) return unit[0][0];
    LLMS_ASSIGN_OR_RETURN(const int32_t aux, aux_rule("item", unit));
    return Element{ElementKind::kRule, aux};
  }

  // `count` copies of `x`; past max_repeat as blocks of ~sqrt(count) copies.
  Status append_copies(Element x, int64_t count, Alt* out) {
    if (count > b_.limits_.max_repeat) {
      const int64_t a = ceil_sqrt(count);
      LLMS_ASSIGN_OR_RETURN(const int32_t block, aux_rule("block", {Alt(static_cast<size_t>(a), x)}));
      out->insert(out->end(), static_cast<size_t>(count / a), Element{ElementKind::kRule, block});
      count %= a;
    }
    out->insert(out->end(), static_cast<size_t>(count), x);
    return ok_status();
  }

  // unit{lo,hi}, hi kOpen: unbounded.
  Status append_counted(const std::vector<Alt>& unit, int64_t lo, int64_t hi, Alt* out) {
    std::optional<Element> once;
    auto item = [&]() -> Result<Element> {
      if (!once) {
        LLMS_ASSIGN_OR_RETURN(const Element x, once_of(unit));
        once = x;
      }
      return *once;
    };
    if (lo > 0) {
      LLMS_ASSIGN_OR_RETURN(const Element x, item());
      LLMS_RETURN_IF_ERROR(append_copies(x, lo, out));
    }
    if (hi == kOpen) {
      LLMS_ASSIGN_OR_RETURN(const int32_t loop, loop_rule("star", unit, kSelfTail));
      out->push_back({ElementKind::kRule, loop});
      return ok_status();
    }
    const int64_t n = hi - lo;
    // A chain of a large unit refers to it rather than copying it into every rule.
    std::vector<Alt> single;
    if (n > 1 && alts_size(unit) > static_cast<size_t>(kInlineLimit)) {
      LLMS_ASSIGN_OR_RETURN(const Element x, item());
      single = {Alt{x}};
    }
    const std::vector<Alt>& chained = single.empty() ? unit : single;
    std::vector<int32_t> opt;  // opt[k - 1] = O_k, unit{0,k}
    if (n <= b_.limits_.max_repeat) {
      LLMS_RETURN_IF_ERROR(chain(chained, n, &opt));
      if (n > 0) out->push_back({ElementKind::kRule, opt.back()});
      return ok_status();
    }
    // x{0,n} = B{0,q-1} x{0,a-1} | B{q} x{0,r}, B = x^a: the first counts 0..qa-1, the
    // second qa..n. x{0,r} is a link of x{0,a-1}'s chain (r < a).
    const int64_t a = ceil_sqrt(n), q = n / a, r = n % a;
    LLMS_ASSIGN_OR_RETURN(const Element x, item());
    LLMS_ASSIGN_OR_RETURN(const int32_t block, aux_rule("block", {Alt(static_cast<size_t>(a), x)}));
    const Element b{ElementKind::kRule, block};
    std::vector<int32_t> blocks;
    LLMS_RETURN_IF_ERROR(chain({Alt{b}}, q - 1, &blocks));
    LLMS_RETURN_IF_ERROR(chain(chained, a - 1, &opt));
    Alt fewer, most(static_cast<size_t>(q), b);
    if (!blocks.empty()) fewer.push_back({ElementKind::kRule, blocks.back()});
    fewer.push_back({ElementKind::kRule, opt.back()});
    if (r > 0) most.push_back({ElementKind::kRule, opt[static_cast<size_t>(r - 1)]});
    LLMS_ASSIGN_OR_RETURN(const int32_t count, aux_rule("count", {std::move(fewer), std::move(most)}));
    out->push_back({ElementKind::kRule, count});
    return ok_status();
  }

  // unit{0,k} for k = 1..n as a chain: O_1 ::= unit | ε, then O_k ::= unit O_{k-1} | ε.
  Status chain(const std::vector<Alt>& unit, int64_t n, std::vector<int32_t>* rules) {
    int32_t next = kNoTail;
    for (int64_t k = 1; k <= n; ++k) {
      LLMS_ASSIGN_OR_RETURN(next, loop_rule("opt", unit, next));
      rules->push_back(next);
    }
    return ok_status();
  }

  static int64_t ceil_sqrt(int64_t n) {
    auto a = static_cast<int64_t>(std::sqrt(static_cast<double>(n)));
    while (a * a < n) ++a;
    while (a > 1 && (a - 1) * (a - 1) >= n) --a;
    return a;
  }

  static size_t alts_size(const std::vector<Alt>& alts) {
    size_t n = 0;
    for (const Alt& a : alts) n += a.size() + 1;
    return n;
  }

  static constexpr int32_t kSelfTail = -1;
  static constexpr int32_t kNoTail = -2;

  // L ::= u1 T | u2 T | ... | ε, where T is L itself (kSelfTail), nothing (kNoTail)
  // or the rule `tail`.
  Result<int32_t> loop_rule(std::string_view base, const std::vector<Alt>& unit, int32_t tail) {
    const int32_t id = new_rule(base);
    std::vector<Alt> alts;
    for (const Alt& u : unit) {
      Alt a = u;
      if (tail != kNoTail) a.push_back({ElementKind::kRule, tail == kSelfTail ? id : tail});
      alts.push_back(std::move(a));
    }
    alts.emplace_back();
    LLMS_RETURN_IF_ERROR(commit(id, alts));
    return id;
  }

  Result<int32_t> aux_rule(std::string_view base, const std::vector<Alt>& alts) {
    const int32_t id = new_rule(base);
    LLMS_RETURN_IF_ERROR(commit(id, alts));
    return id;
  }

  int32_t new_rule(std::string_view base) {
    const auto id = static_cast<int32_t>(g_.rules_.size());
    g_.rules_.push_back(GrammarRule{fmt::format("{}-{}", base, ++aux_count_), {}});
    return id;
  }

  Status commit(int32_t rule, const std::vector<Alt>& alts) {
    std::vector<int32_t> starts;
    for (const Alt& a : alts) {
      if (!charge(static_cast<int64_t>(a.size()) + 1)) return compile_stop_status(*b_.limits_.meter);
      starts.push_back(static_cast<int32_t>(g_.elements_.size()));
      g_.elements_.insert(g_.elements_.end(), a.begin(), a.end());
      g_.elements_.push_back({ElementKind::kEnd, 0});
    }
    if (static_cast<int64_t>(g_.elements_.size()) > b_.limits_.max_elements ||
        static_cast<int64_t>(g_.rules_.size()) > b_.limits_.max_rules) {
      return invalid_argument(fmt::format("the grammar is too large (more than {} elements or {} rules)",
                                          b_.limits_.max_elements, b_.limits_.max_rules));
    }
    g_.rules_[static_cast<size_t>(rule)].alternatives = std::move(starts);
    return ok_status();
  }

  // False once the limits' meter (if any) has stopped.
  bool charge(int64_t units) { return b_.limits_.meter == nullptr || b_.limits_.meter->charge(units); }

  int32_t intern_bytes(const ByteSet& set) {
    auto [it, inserted] = byte_ids_.try_emplace(set.words, static_cast<int32_t>(g_.byte_sets_.size()));
    if (inserted) g_.byte_sets_.push_back(set);
    return it->second;
  }

  static constexpr int kInlineLimit = 48;

  static int expr_size(const GrammarExpr& e) {
    int n = 1;
    for (const GrammarExpr& i : e.items) n += expr_size(i);
    return n;
  }
  static bool refers_to(const GrammarExpr& e, int32_t rule) {
    if (e.kind == GrammarExpr::Kind::kRef && e.rule == rule) return true;
    for (const GrammarExpr& i : e.items) {
      if (refers_to(i, rule)) return true;
    }
    return false;
  }

  GrammarBuilder& b_;
  Grammar& g_;
  std::map<std::array<uint64_t, 4>, int32_t> byte_ids_;
  std::map<CodepointRanges, int32_t> char_ids_;
  int aux_count_ = 0;
};

Result<Grammar> GrammarBuilder::build(int32_t root) {
  if (root < 0 || root >= static_cast<int32_t>(names_.size())) return invalid_argument("the grammar has no root rule");
  if (!defined(root)) return invalid_argument(fmt::format("rule '{}' is used but never defined", names_[root]));
  Grammar g;
  g.root_ = root;
  for (const std::string& n : names_) g.rules_.push_back(GrammarRule{n, {}});
  Lowering lowering(*this, g);
  for (int32_t r = 0; r < static_cast<int32_t>(names_.size()); ++r) {
    if (defined(r)) LLMS_RETURN_IF_ERROR(lowering.lower(r));
  }
  LLMS_RETURN_IF_ERROR(check_grammar(g, limits_.meter));
  if (limits_.meter != nullptr && !limits_.meter->charge(g.num_elements())) return compile_stop_status(*limits_.meter);
  g.finish_hash();
  return g;
}

}  // namespace llms
