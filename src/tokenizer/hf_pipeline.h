// HfTextPipeline: the normalizer and pre-tokenizer of a tokenizer.json, run on text:
// normalize() rewrites a fragment (what lies between added tokens), pre_tokenize()
// cuts it into the pieces the model encodes one by one.
//
// Bytes that are not valid UTF-8 (which Hugging Face's Rust strings cannot hold but
// our encode() accepts) pass through the Unicode rewrites unchanged and become pieces
// of their own, so any byte string can still be encoded.
//
// Thread-safety: immutable after create(); both calls may run on many threads.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tokenizer/hf_tokenizer_spec.h"
#include "tokenizer/regex.h"

namespace llms {

// Bytes of Unicode whitespace (the White_Space property) at the start / end of `s`.
size_t leading_whitespace(std::string_view s);
size_t trailing_whitespace(std::string_view s);

// `text` with every ' ' written as `replacement`, which is also put first when `prefix`.
std::string replace_spaces(std::string_view text, std::string_view replacement, bool prefix = false);

class HfTextPipeline {
 public:
  // Compiles the patterns; an error names a pattern PCRE2 rejects.
  static Result<std::unique_ptr<HfTextPipeline>> create(const HfTokenizerSpec& spec);
  ~HfTextPipeline();

  bool has_normalizer() const { return !normalizer_.empty(); }
  std::string normalize(std::string_view text) const;

  // Appends the pieces of `text`. `at_start`: the text begins the whole input (what
  // Metaspace's prepend_scheme "first" asks).
  void pre_tokenize(std::string_view text, bool at_start, std::vector<std::string>* pieces) const;

 private:
  struct Step {
    HfNormalizerStep normalizer;
    HfPreTokenizerStep pre;
    std::unique_ptr<Regex> regex;  // Replace and Split
  };
  HfTextPipeline() = default;
  void split(const Step& step, std::string_view piece, std::vector<std::string>* out) const;

  std::vector<Step> normalizer_;
  std::vector<Step> pre_tokenizer_;
};

}  // namespace llms
