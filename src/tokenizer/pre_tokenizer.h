// PreTokenizer: cuts text into the pieces that byte-level BPE merges within, using the
// split patterns of the vocabulary's `tokenizer.ggml.pre` (see pre_tokenizer_specs.h).
//
// Bytes that are not valid UTF-8 cannot go through the Unicode patterns; each such
// byte becomes a piece of its own, so any byte string can be encoded and decoded back.
//
// Thread-safety: immutable after create(); split() may run on many threads at once.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tokenizer/pre_tokenizer_specs.h"
#include "tokenizer/regex.h"

namespace llms {

// One stretch of a text cut by a pattern: a match, or the text between two matches.
// A match may be empty (a pure lookahead); it then only marks a cut point.
struct SplitSpan {
  size_t begin;
  size_t end;
  bool match;
};

// Appends the spans of `text` (valid UTF-8) in order: every match of `re` and the
// non-empty stretches between them, together covering the text. After an empty match
// the search goes on one character later. Where PCRE2 gives up (a resource limit) the
// rest is one unmatched span.
void find_split_spans(const Regex& re, std::string_view text, RegexScratch& scratch, std::vector<SplitSpan>* out);

// Length of the longest prefix of `s` that is valid UTF-8.
size_t valid_utf8_prefix(std::string_view s);

class PreTokenizer {
 public:
  // INVALID_ARGUMENT naming the known names when `name` is not one of them.
  static Result<std::unique_ptr<PreTokenizer>> create(std::string_view name);

  // Every accepted tokenizer.ggml.pre value, sorted.
  static std::vector<std::string> known_names();

  const std::string& name() const { return name_; }
  const PreTokenizerSpec& spec() const { return *spec_; }

  // Appends the pieces of `text`, in order; together they are exactly `text`.
  void split(std::string_view text, std::vector<std::string_view>* pieces) const;

 private:
  PreTokenizer() = default;
  // Splits every piece of `in` with `re` into matches and the text between them.
  void split_all(const Regex& re, const std::vector<std::string_view>& in, std::vector<std::string_view>* out,
                 RegexScratch& scratch) const;

  std::string name_;
  const PreTokenizerSpec* spec_ = nullptr;
  std::vector<Regex> regexes_;
};

}  // namespace llms
