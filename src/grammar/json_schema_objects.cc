// Objects and arrays of the JSON Schema compiler.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>

#include "base/utf8.h"
#include "grammar/json_schema_parts.h"

namespace llms {
namespace {

constexpr int64_t kMaxCount = 4096;

std::string pointer_key(const std::string& key) {
  std::string out;
  for (const char c : key) out += c == '~' ? std::string("~0") : c == '/' ? std::string("~1") : std::string(1, c);
  return out;
}

// Characters an extra (undeclared) key may use: no escapes, so that its text is its
// value and it can be told apart from the declared names.
const CodepointRanges& key_chars() {
  static const CodepointRanges r = complement_ranges(normalize_ranges({{0, 0x1F}, {'"', '"'}, {'\\', '\\'}}));
  return r;
}

struct NameTrie {
  struct Node {
    std::map<char32_t, int> children;
    bool is_name = false;
  };
  std::vector<Node> nodes{1};

  void add(const std::string& name) {
    int n = 0;
    size_t pos = 0;
    while (pos < name.size()) {
      size_t used = 0;
      const char32_t c = utf8_decode(name, pos, &used);
      pos += used;
      auto it = nodes[static_cast<size_t>(n)].children.find(c);
      if (it == nodes[static_cast<size_t>(n)].children.end()) {
        nodes.emplace_back();
        it = nodes[static_cast<size_t>(n)].children.emplace(c, static_cast<int>(nodes.size() - 1)).first;
      }
      n = it->second;
    }
    nodes[static_cast<size_t>(n)].is_name = true;
  }
};

bool in_ranges(const CodepointRanges& r, char32_t c) {
  for (const auto& [lo, hi] : r) {
    if (c >= lo && c <= hi) return true;
  }
  return false;
}

}  // namespace

// An object key that is none of `names`: a rule per node of the names' trie, each
// either ending (when the text so far is not a name), following a name further, or
// leaving every name with another character.
static GrammarExpr key_not_in(JsonSchemaParts& p, GrammarBuilder& b, const std::vector<std::string>& names,
                              const std::string& path) {
  NameTrie trie;
  for (const std::string& n : names) trie.add(n);
  const GrammarExpr free_tail = p.shared("key-chars", [] { return GrammarExpr::star(GrammarExpr::char_ranges(key_chars())); });
  std::vector<int32_t> rules(trie.nodes.size());
  for (size_t i = 0; i < trie.nodes.size(); ++i) rules[i] = b.declare(fmt::format("{}-key-{}", path.size() > 2 ? "extra" : "key", i));
  for (size_t i = 0; i < trie.nodes.size(); ++i) {
    const NameTrie::Node& node = trie.nodes[i];
    std::vector<GrammarExpr> alts;
    if (!node.is_name) alts.push_back(GrammarExpr::empty());
    CodepointRanges taken;
    for (const auto& [c, child] : node.children) {
      if (!in_ranges(key_chars(), c)) continue;  // cannot be written without an escape
      std::string bytes;
      utf8_append(bytes, c);
      alts.push_back(GrammarExpr::seq({GrammarExpr::lit(bytes), GrammarExpr::ref(rules[static_cast<size_t>(child)])}));
      taken.emplace_back(c, c);
    }
    CodepointRanges other = key_chars();
    if (!taken.empty()) {
      const CodepointRanges keep = complement_ranges(normalize_ranges(taken));
      CodepointRanges cut;
      for (const auto& [lo, hi] : other) {
        for (const auto& [klo, khi] : keep) {
          if (std::max(lo, klo) <= std::min(hi, khi)) cut.emplace_back(std::max(lo, klo), std::min(hi, khi));
        }
      }
      other = normalize_ranges(std::move(cut));
    }
    if (!other.empty()) alts.push_back(GrammarExpr::seq({GrammarExpr::char_ranges(other), free_tail}));
    b.define(rules[i], GrammarExpr::alt(std::move(alts)));
  }
  return GrammarExpr::seq({GrammarExpr::lit("\""), GrammarExpr::ref(rules[0]), GrammarExpr::lit("\"")});
}

Result<GrammarExpr> JsonSchemaParts::object(const SchemaJson& s, const std::string& path) {
  struct Prop {
    std::string name;
    bool required = false;
    GrammarExpr value;
  };
  std::vector<Prop> props;
  if (s.contains("properties")) {
    if (!s.at("properties").is_object()) return error(path, "'properties' must be an object");
    for (const auto& [name, sub] : s.at("properties").items()) {
      LLMS_ASSIGN_OR_RETURN(GrammarExpr v, value(sub, path + "/properties/" + pointer_key(name)));
      props.push_back(Prop{name, false, std::move(v)});
    }
  }
  // additionalProperties: absent or true → any value, false → none, else a schema.
  std::optional<GrammarExpr> extra;
  if (!s.contains("additionalProperties") || s.at("additionalProperties") == true) {
    extra = any_value();
  } else if (s.at("additionalProperties") != false) {
    LLMS_ASSIGN_OR_RETURN(GrammarExpr v, value(s.at("additionalProperties"), path + "/additionalProperties"));
    extra = std::move(v);
  }
  if (s.contains("required")) {
    const SchemaJson& req = s.at("required");
    if (!req.is_array()) return error(path, "'required' must be a list of property names");
    for (const SchemaJson& r : req) {
      if (!r.is_string()) return error(path, "'required' must be a list of property names");
      const std::string name = r.get<std::string>();
      auto it = std::find_if(props.begin(), props.end(), [&](const Prop& p) { return p.name == name; });
      if (it == props.end()) {
        if (!extra) {
          return error(path, fmt::format("required property '{}' is not in 'properties' and additionalProperties is "
                                         "false",
                                         name));
        }
        props.push_back(Prop{name, true, *extra});
      } else {
        it->required = true;
      }
    }
  }
  const GrammarExpr sep = GrammarExpr::seq({GrammarExpr::lit(","), ws()});
  auto member = [&](GrammarExpr key, GrammarExpr v) {
    return GrammarExpr::seq({std::move(key), GrammarExpr::lit(":"), colon_space(), std::move(v)});
  };
  std::vector<std::string> names;
  for (const Prop& p : props) names.push_back(p.name);
  std::optional<GrammarExpr> extra_member;
  if (extra) {
    GrammarExpr key = props.empty() ? any_string() : key_not_in(*this, b_, names, path);
    extra_member = named(path + "/extra", member(std::move(key), *extra));
  }
  // after[i]: what may follow once a member was written, from property i on;
  // first[i]: at least one member, the first of them property i or later.
  const size_t n = props.size();
  GrammarExpr after = extra_member ? GrammarExpr::star(GrammarExpr::seq({sep, *extra_member})) : GrammarExpr::empty();
  std::optional<GrammarExpr> first;
  if (extra_member) first = GrammarExpr::seq({*extra_member, after});
  after = named(path + "/after" + std::to_string(n), std::move(after));
  if (first) first = named(path + "/first" + std::to_string(n), std::move(*first));
  bool any_required = false;
  for (size_t k = n; k-- > 0;) {
    const Prop& p = props[k];
    any_required = any_required || p.required;
    GrammarExpr kv = named(path + "/kv" + std::to_string(k), member(GrammarExpr::lit(SchemaJson(p.name).dump()), p.value));
    GrammarExpr with = GrammarExpr::seq({kv, after});
    GrammarExpr next_after = GrammarExpr::seq({sep, kv, after});
    if (!p.required) next_after = GrammarExpr::alt({std::move(next_after), after});
    GrammarExpr next_first = p.required || !first ? std::move(with) : GrammarExpr::alt({std::move(with), *first});
    after = named(path + "/after" + std::to_string(k), std::move(next_after));
    first = named(path + "/first" + std::to_string(k), std::move(next_first));
  }
  std::vector<GrammarExpr> body{GrammarExpr::lit("{"), ws()};
  if (first) {
    GrammarExpr members = GrammarExpr::seq({*first, ws()});
    body.push_back(any_required ? std::move(members) : GrammarExpr::optional(std::move(members)));
  }
  body.push_back(GrammarExpr::lit("}"));
  return named(path, GrammarExpr::seq(std::move(body)));
}

Result<GrammarExpr> JsonSchemaParts::array(const SchemaJson& s, const std::string& path) {
  std::vector<GrammarExpr> prefix;
  if (s.contains("prefixItems")) {
    const SchemaJson& pi = s.at("prefixItems");
    if (!pi.is_array()) return error(path, "'prefixItems' must be a list of schemas");
    for (size_t i = 0; i < pi.size(); ++i) {
      LLMS_ASSIGN_OR_RETURN(GrammarExpr e, value(pi[i], fmt::format("{}/prefixItems/{}", path, i)));
      prefix.push_back(std::move(e));
    }
  }
  std::optional<GrammarExpr> item;
  if (!s.contains("items") || s.at("items") == true) {
    item = any_value();
  } else if (s.at("items").is_array()) {
    return error(path, "'items' as a list (draft 7 tuples) is not supported; use 'prefixItems'");
  } else if (s.at("items") != false) {
    LLMS_ASSIGN_OR_RETURN(GrammarExpr e, value(s.at("items"), path + "/items"));
    item = std::move(e);
  }
  LLMS_ASSIGN_OR_RETURN(const auto min_items, count(s, "minItems", path));
  LLMS_ASSIGN_OR_RETURN(const auto max_items, count(s, "maxItems", path));
  const int64_t lo = min_items.value_or(0);
  const auto p = static_cast<int64_t>(prefix.size());
  int64_t hi = max_items ? std::min(*max_items, kMaxCount) : -1;  // -1: unbounded
  if (!item) hi = hi < 0 ? p : std::min(hi, p);
  if (lo > kMaxCount) return error(path, fmt::format("'minItems' above {} is not supported", kMaxCount));
  if (hi >= 0 && lo > hi) return error(path, "'minItems' is larger than the array may be");
  const GrammarExpr sep = GrammarExpr::seq({GrammarExpr::lit(","), ws()});
  // At least one element: the empty array is the body's other choice.
  const int64_t need = std::max<int64_t>(lo, 1);
  const int64_t fixed = hi < 0 ? p : std::min(p, hi);
  // The items after the prefix.
  GrammarExpr rest = GrammarExpr::empty();
  if (item && (hi < 0 || hi > fixed)) {
    const int64_t t_min = std::max<int64_t>(0, need - fixed);
    const int t_max = hi < 0 ? GrammarExpr::kUnbounded : static_cast<int>(hi - fixed);
    if (fixed > 0) {
      rest = GrammarExpr::repeat(GrammarExpr::seq({sep, *item}), static_cast<int>(t_min), t_max);
    } else {
      GrammarExpr tail = GrammarExpr::repeat(GrammarExpr::seq({sep, *item}), static_cast<int>(std::max<int64_t>(t_min - 1, 0)),
                                             t_max == GrammarExpr::kUnbounded ? t_max : t_max - 1);
      rest = GrammarExpr::seq({*item, std::move(tail)});
    }
  }
  GrammarExpr elems = std::move(rest);
  for (int64_t k = fixed; k-- > 0;) {
    std::vector<GrammarExpr> parts;
    if (k > 0) parts.push_back(sep);
    parts.push_back(prefix[static_cast<size_t>(k)]);
    parts.push_back(std::move(elems));
    elems = GrammarExpr::seq(std::move(parts));
    if (k >= need) elems = GrammarExpr::optional(std::move(elems));
  }
  std::vector<GrammarExpr> body{GrammarExpr::lit("["), ws()};
  if (fixed > 0 || (item && hi != 0)) {
    GrammarExpr filled = GrammarExpr::seq({std::move(elems), ws()});
    body.push_back(lo > 0 ? std::move(filled) : GrammarExpr::optional(std::move(filled)));
  }
  body.push_back(GrammarExpr::lit("]"));
  return named(path, GrammarExpr::seq(std::move(body)));
}

}  // namespace llms
