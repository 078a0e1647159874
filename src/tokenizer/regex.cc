#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/regex.h"

#include <fmt/format.h>
#include <pcre2.h>

#include <utility>

namespace llms {

namespace {

// A match whose backtracking outgrows PCRE2's default 32 KiB JIT stack (very long runs
// of one character class) is retried once with a stack this large.
constexpr size_t kLargeJitStack = 64u << 20;

pcre2_code* as_code(void* p) { return static_cast<pcre2_code*>(p); }

}  // namespace

RegexScratch::RegexScratch() {
  // Enough ovector pairs for every pattern in pre_tokenizer_specs.cc (the largest has 5 groups).
  match_data_ = pcre2_match_data_create(16, nullptr);
}

RegexScratch::~RegexScratch() {
  if (jit_stack_ != nullptr) pcre2_jit_stack_free(static_cast<pcre2_jit_stack*>(jit_stack_));
  if (match_context_ != nullptr) pcre2_match_context_free(static_cast<pcre2_match_context*>(match_context_));
  pcre2_match_data_free(static_cast<pcre2_match_data*>(match_data_));
}

Result<Regex> Regex::compile(std::string_view pattern) {
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  const uint32_t options = PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY | PCRE2_NEVER_BACKSLASH_C;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), options, &error_code,
                                   &error_offset, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error_code, message, sizeof(message));
    return invalid_argument(fmt::format("regular expression '{}' does not compile at offset {}: {}", pattern,
                                        error_offset, reinterpret_cast<const char*>(message)));
  }
  // Without JIT (an unsupported CPU) pcre2_match falls back to the interpreter.
  (void)pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  Regex r;
  r.pattern_ = std::string(pattern);
  r.code_ = code;
  return r;
}

Regex::Regex(Regex&& other) noexcept
    : pattern_(std::move(other.pattern_)), code_(std::exchange(other.code_, nullptr)) {}

Regex& Regex::operator=(Regex&& other) noexcept {
  if (this != &other) {
    if (code_ != nullptr) pcre2_code_free(as_code(code_));
    pattern_ = std::move(other.pattern_);
    code_ = std::exchange(other.code_, nullptr);
  }
  return *this;
}

Regex::~Regex() {
  if (code_ != nullptr) pcre2_code_free(as_code(code_));
}

RegexMatch Regex::find(std::string_view subject, size_t start, RegexScratch& scratch) const {
  auto* md = static_cast<pcre2_match_data*>(scratch.match_data_);
  auto* ctx = static_cast<pcre2_match_context*>(scratch.match_context_);
  const auto* s = reinterpret_cast<PCRE2_SPTR>(subject.data());
  int rc = pcre2_match(as_code(code_), s, subject.size(), start, PCRE2_NO_UTF_CHECK, md, ctx);
  if (rc == PCRE2_ERROR_JIT_STACKLIMIT && scratch.jit_stack_ == nullptr) {
    scratch.jit_stack_ = pcre2_jit_stack_create(32 * 1024, kLargeJitStack, nullptr);
    scratch.match_context_ = pcre2_match_context_create(nullptr);
    ctx = static_cast<pcre2_match_context*>(scratch.match_context_);
    pcre2_jit_stack_assign(ctx, nullptr, scratch.jit_stack_);
    rc = pcre2_match(as_code(code_), s, subject.size(), start, PCRE2_NO_UTF_CHECK, md, ctx);
  }
  RegexMatch m;
  if (rc == PCRE2_ERROR_NOMATCH) return m;
  if (rc < 0) {
    m.kind = RegexMatch::Kind::kError;
    return m;
  }
  const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
  m.kind = RegexMatch::Kind::kFound;
  m.begin = ov[0];
  m.end = ov[1];
  return m;
}

}  // namespace llms
