// tokenizer.json's "normalizer" and "pre_tokenizer" sections → HfTokenizerSpec steps.
#include <fmt/format.h>

#include "tokenizer/hf_components_json.h"
#include "tokenizer/pre_tokenizer_specs.h"

namespace llms {

namespace {

using hfjson::Json;

// Sequences nest; a file that nests deeper than this is not a real tokenizer.
constexpr int kMaxDepth = 8;

// `text` as a PCRE2 pattern that matches it literally.
std::string escape_literal(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (std::string_view("\\^$.|?*+()[]{}-/#&~ ").find(c) != std::string_view::npos) out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

std::string where_of(std::string_view parent, size_t index) { return fmt::format("{}[{}]", parent, index); }

Result<std::string> component_type(const Json& obj, std::string_view where) {
  if (!obj.is_object()) return invalid_argument(fmt::format("{}: expected an object", where));
  return hfjson::get_string(obj, "type", where);
}

Result<HfSplitBehavior> parse_behavior(const Json& obj, std::string_view where, HfSplitBehavior fallback) {
  static constexpr std::pair<std::string_view, HfSplitBehavior> kNames[] = {
      {"Removed", HfSplitBehavior::kRemoved},
      {"Isolated", HfSplitBehavior::kIsolated},
      {"MergedWithPrevious", HfSplitBehavior::kMergedWithPrevious},
      {"MergedWithNext", HfSplitBehavior::kMergedWithNext},
      {"Contiguous", HfSplitBehavior::kContiguous},
  };
  const Json* v = hfjson::member(obj, "behavior");
  if (v == nullptr) return fallback;
  if (!v->is_string()) return hfjson::type_error(where, "behavior", "a string");
  const std::string& name = v->get_ref<const std::string&>();
  for (const auto& [n, b] : kNames) {
    if (n == name) return b;
  }
  return invalid_argument(fmt::format("{}.behavior: unknown split behaviour '{}'", where, name));
}

HfPreTokenizerStep split_step(std::string pattern, HfSplitBehavior behavior, bool invert = false) {
  HfPreTokenizerStep s;
  s.kind = HfPreTokenizerStep::Kind::kSplit;
  s.pattern = std::move(pattern);
  s.behavior = behavior;
  s.invert = invert;
  return s;
}

// Unicode punctuation plus the ASCII symbols Rust's is_ascii_punctuation counts.
constexpr std::string_view kPunctuation = R"([\p{P}!-/:-@\[-`{-~])";

Status parse_pre_tokenizer_at(const Json& obj, std::string_view where, int depth, HfTokenizerSpec* spec);

Status parse_byte_level(const Json& obj, std::string_view where, HfTokenizerSpec* spec) {
  LLMS_ASSIGN_OR_RETURN(const bool prefix, hfjson::get_bool(obj, "add_prefix_space", true, where));
  LLMS_ASSIGN_OR_RETURN(const bool use_regex, hfjson::get_bool(obj, "use_regex", true, where));
  spec->byte_level = true;
  if (prefix) {
    HfPreTokenizerStep s;
    s.kind = HfPreTokenizerStep::Kind::kPrefixSpace;
    spec->pre_tokenizer.push_back(std::move(s));
  }
  if (use_regex) spec->pre_tokenizer.push_back(split_step(std::string(gpt2_split_pattern()), HfSplitBehavior::kIsolated));
  return ok_status();
}

Status parse_metaspace(const Json& obj, std::string_view where, HfTokenizerSpec* spec) {
  HfPreTokenizerStep s;
  s.kind = HfPreTokenizerStep::Kind::kMetaspace;
  LLMS_ASSIGN_OR_RETURN(s.replacement, metaspace_replacement(obj, where));
  LLMS_ASSIGN_OR_RETURN(s.prepend, parse_prepend_scheme(obj, where));
  LLMS_ASSIGN_OR_RETURN(const bool split, hfjson::get_bool(obj, "split", true, where));
  const std::string replacement = s.replacement;
  spec->pre_tokenizer.push_back(std::move(s));
  if (split) spec->pre_tokenizer.push_back(split_step(escape_literal(replacement), HfSplitBehavior::kMergedWithNext));
  return ok_status();
}

Status parse_split(const Json& obj, std::string_view where, HfTokenizerSpec* spec) {
  LLMS_ASSIGN_OR_RETURN(std::string pattern, parse_pattern(obj, where));
  LLMS_ASSIGN_OR_RETURN(const HfSplitBehavior behavior, parse_behavior(obj, where, HfSplitBehavior::kIsolated));
  LLMS_ASSIGN_OR_RETURN(const bool invert, hfjson::get_bool(obj, "invert", false, where));
  if (spec->split_pattern.empty()) {
    const Json* p = hfjson::member(obj, "pattern");
    const Json* r = p != nullptr ? hfjson::member(*p, "Regex") : nullptr;
    if (r != nullptr && r->is_string()) spec->split_pattern = r->get<std::string>();
  }
  spec->pre_tokenizer.push_back(split_step(std::move(pattern), behavior, invert));
  return ok_status();
}

Status parse_pre_tokenizer_at(const Json& obj, std::string_view where, int depth, HfTokenizerSpec* spec) {
  if (depth > kMaxDepth) return invalid_argument(fmt::format("{}: sequences nested too deeply", where));
  LLMS_ASSIGN_OR_RETURN(const std::string type, component_type(obj, where));
  if (type == "Sequence") {
    const Json* list = hfjson::member(obj, "pretokenizers");
    if (list == nullptr || !list->is_array()) return hfjson::type_error(where, "pretokenizers", "an array");
    for (size_t i = 0; i < list->size(); ++i) {
      const std::string w = where_of(fmt::format("{}.pretokenizers", where), i);
      LLMS_RETURN_IF_ERROR(parse_pre_tokenizer_at((*list)[i], w, depth + 1, spec));
    }
    return ok_status();
  }
  if (type == "ByteLevel") return parse_byte_level(obj, where, spec);
  if (type == "Metaspace") return parse_metaspace(obj, where, spec);
  if (type == "Split") return parse_split(obj, where, spec);
  auto& steps = spec->pre_tokenizer;
  if (type == "Digits") {
    LLMS_ASSIGN_OR_RETURN(const bool each, hfjson::get_bool(obj, "individual_digits", false, where));
    steps.push_back(split_step(R"(\p{N})", each ? HfSplitBehavior::kIsolated : HfSplitBehavior::kContiguous));
  } else if (type == "Punctuation") {
    LLMS_ASSIGN_OR_RETURN(const HfSplitBehavior b, parse_behavior(obj, where, HfSplitBehavior::kIsolated));
    steps.push_back(split_step(std::string(kPunctuation), b));
  } else if (type == "Whitespace") {
    steps.push_back(split_step(R"(\w+|[^\w\s]+)", HfSplitBehavior::kRemoved, /*invert=*/true));
  } else if (type == "WhitespaceSplit") {
    steps.push_back(split_step(R"(\s+)", HfSplitBehavior::kRemoved));
  } else if (type == "BertPreTokenizer") {
    steps.push_back(split_step(R"(\s+)", HfSplitBehavior::kRemoved));
    steps.push_back(split_step(std::string(kPunctuation), HfSplitBehavior::kIsolated));
  } else if (type == "CharDelimiterSplit") {
    LLMS_ASSIGN_OR_RETURN(const std::string d, hfjson::get_string(obj, "delimiter", where));
    steps.push_back(split_step(escape_literal(d), HfSplitBehavior::kRemoved));
  } else {
    return unimplemented(fmt::format(
        "{}: pre-tokenizer '{}' is not supported (supported: ByteLevel, Metaspace, Split, Digits, Punctuation, "
        "Whitespace, WhitespaceSplit, BertPreTokenizer, CharDelimiterSplit, Sequence)",
        where, type));
  }
  return ok_status();
}

Result<HfNormalizerStep::Kind> unicode_form(std::string_view type) {
  if (type == "NFC") return HfNormalizerStep::Kind::kNfc;
  if (type == "NFKC") return HfNormalizerStep::Kind::kNfkc;
  if (type == "NFD") return HfNormalizerStep::Kind::kNfd;
  return HfNormalizerStep::Kind::kNfkd;
}

Status parse_normalizer_at(const Json& obj, std::string_view where, int depth, std::vector<HfNormalizerStep>* out) {
  if (depth > kMaxDepth) return invalid_argument(fmt::format("{}: sequences nested too deeply", where));
  LLMS_ASSIGN_OR_RETURN(const std::string type, component_type(obj, where));
  HfNormalizerStep s;
  if (type == "Sequence") {
    const Json* list = hfjson::member(obj, "normalizers");
    if (list == nullptr || !list->is_array()) return hfjson::type_error(where, "normalizers", "an array");
    for (size_t i = 0; i < list->size(); ++i) {
      const std::string w = where_of(fmt::format("{}.normalizers", where), i);
      LLMS_RETURN_IF_ERROR(parse_normalizer_at((*list)[i], w, depth + 1, out));
    }
    return ok_status();
  }
  if (type == "Prepend") {
    s.kind = HfNormalizerStep::Kind::kPrepend;
    LLMS_ASSIGN_OR_RETURN(s.content, hfjson::get_string(obj, "prepend", where));
  } else if (type == "Replace") {
    s.kind = HfNormalizerStep::Kind::kReplace;
    LLMS_ASSIGN_OR_RETURN(s.pattern, parse_pattern(obj, where));
    LLMS_ASSIGN_OR_RETURN(s.content, hfjson::get_string(obj, "content", where));
  } else if (type == "Lowercase") {
    s.kind = HfNormalizerStep::Kind::kLowercase;
  } else if (type == "Strip") {
    s.kind = HfNormalizerStep::Kind::kStrip;
    LLMS_ASSIGN_OR_RETURN(s.strip_left, hfjson::get_bool(obj, "strip_left", false, where));
    LLMS_ASSIGN_OR_RETURN(s.strip_right, hfjson::get_bool(obj, "strip_right", false, where));
  } else if (type == "NFC" || type == "NFKC" || type == "NFD" || type == "NFKD") {
    LLMS_ASSIGN_OR_RETURN(s.kind, unicode_form(type));
  } else {
    return unimplemented(fmt::format(
        "{}: normalizer '{}' is not supported (supported: Prepend, Replace, Lowercase, Strip, NFC, NFKC, NFD, NFKD, "
        "Sequence)",
        where, type));
  }
  out->push_back(std::move(s));
  return ok_status();
}

}  // namespace

Result<HfPreTokenizerStep::Prepend> parse_prepend_scheme(const Json& obj, std::string_view where) {
  LLMS_ASSIGN_OR_RETURN(auto scheme, hfjson::get_opt_string(obj, "prepend_scheme", where));
  if (!scheme) {
    // Files older than prepend_scheme say add_prefix_space instead.
    LLMS_ASSIGN_OR_RETURN(const bool add, hfjson::get_bool(obj, "add_prefix_space", true, where));
    return add ? HfPreTokenizerStep::Prepend::kAlways : HfPreTokenizerStep::Prepend::kNever;
  }
  if (*scheme == "always") return HfPreTokenizerStep::Prepend::kAlways;
  if (*scheme == "first") return HfPreTokenizerStep::Prepend::kFirst;
  if (*scheme == "never") return HfPreTokenizerStep::Prepend::kNever;
  return invalid_argument(fmt::format("{}.prepend_scheme: unknown value '{}'", where, *scheme));
}

Result<std::string> metaspace_replacement(const Json& obj, std::string_view where) {
  LLMS_ASSIGN_OR_RETURN(auto r, hfjson::get_opt_string(obj, "replacement", where));
  const std::string replacement = r.value_or("\xE2\x96\x81");
  if (replacement != "\xE2\x96\x81") {
    return unimplemented(fmt::format("{}.replacement: only U+2581 '\xE2\x96\x81' is supported, not '{}'", where,
                                     replacement));
  }
  return replacement;
}

Result<std::string> parse_pattern(const Json& obj, std::string_view where) {
  const Json* p = hfjson::member(obj, "pattern");
  if (p == nullptr || !p->is_object()) return hfjson::type_error(where, "pattern", "{\"String\": ...} or {\"Regex\": ...}");
  if (const Json* s = hfjson::member(*p, "String"); s != nullptr && s->is_string()) {
    return escape_literal(s->get<std::string>());
  }
  if (const Json* r = hfjson::member(*p, "Regex"); r != nullptr && r->is_string()) return r->get<std::string>();
  return hfjson::type_error(where, "pattern", "{\"String\": ...} or {\"Regex\": ...}");
}

Status parse_normalizer(const Json& obj, std::vector<HfNormalizerStep>* out) {
  return parse_normalizer_at(obj, "normalizer", 0, out);
}

Status parse_pre_tokenizer(const Json& obj, HfTokenizerSpec* spec) {
  return parse_pre_tokenizer_at(obj, "pre_tokenizer", 0, spec);
}

}  // namespace llms
