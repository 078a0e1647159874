// Regex: one compiled PCRE2 pattern in UTF + UCP mode (\p{L}, \s, \d follow Unicode
// properties, as the Hugging Face tokenizers' Oniguruma patterns do), JIT-compiled
// where the platform allows. `$` matches only at the very end of the subject.
//
// Thread-safety: a compiled Regex is immutable and may be shared by threads; each
// thread (each call chain) brings its own RegexScratch.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"

namespace llms {

// Per-call match state: PCRE2 match data and, when a long match needs it, a larger
// JIT stack. Not thread-safe; create one per call that matches.
class RegexScratch {
 public:
  RegexScratch();
  ~RegexScratch();
  RegexScratch(const RegexScratch&) = delete;
  RegexScratch& operator=(const RegexScratch&) = delete;

 private:
  friend class Regex;
  void* match_data_ = nullptr;     // pcre2_match_data_8*
  void* match_context_ = nullptr;  // pcre2_match_context_8*, created on demand
  void* jit_stack_ = nullptr;      // pcre2_jit_stack_8*, created on demand
};

struct RegexMatch {
  enum class Kind { kFound, kNone, kError };
  Kind kind = Kind::kNone;
  size_t begin = 0;
  size_t end = 0;
};

class Regex {
 public:
  // Compiles `pattern`; the error names the pattern and the offset PCRE2 rejected.
  static Result<Regex> compile(std::string_view pattern);

  Regex(Regex&&) noexcept;
  Regex& operator=(Regex&&) noexcept;
  ~Regex();

  // Finds the first match in subject[start..]. The subject must be valid UTF-8 and
  // `start` a character boundary (it is not re-checked, for speed). Lookarounds see
  // only `subject`. kError means PCRE2 gave up (resource limits): the caller decides.
  RegexMatch find(std::string_view subject, size_t start, RegexScratch& scratch) const;

  const std::string& pattern() const { return pattern_; }

 private:
  Regex() = default;
  std::string pattern_;
  void* code_ = nullptr;  // pcre2_code_8*
};

}  // namespace llms
