// libFuzzer target for the grammar front ends (GBNF, JSON Schema, regex) and the
// matcher behind them. Input (grammar_inputs.h): one byte choosing the front end,
// the grammar text (up to a NUL byte), then bytes that drive a matcher over a small
// vocabulary. (grammar_time_fuzz.cc checks the same inputs against the budget.)
//
// Any text must parse or fail with a Status. A grammar that compiles is then walked:
// at each step the mask must agree with accept_token() — a token is in the mask
// exactly when the matcher takes it — and rollback must restore the state's mask.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "grammar/grammar_matcher.h"
#include "grammar_inputs.h"

namespace {

// Small bounds, so that the fuzzer spends its time on parsing and matching rather
// than on building huge grammars.
constexpr llms::GrammarLimits kLimits{.max_repeat = 64, .max_elements = 1 << 14, .max_rules = 1 << 12};

std::shared_ptr<const llms::TokenVocabulary> vocab() {
  static const auto v = [] {
    std::vector<std::string> pieces = {"{", "}", "[", "]", "\"", ":", ",", " ", "\n", "\\", "-", ".", "e", "u", "a", "b",
                                       "0", "1", "9", "true", "false", "null", "\"a\"", "ab", "é", "\xC3", "\xA9", "日",
                                       "\xE6\x97", "\x00", "\xFF", "xyz", "12", "-1", "\": ", "<end>"};
    pieces[29] = std::string(1, '\0');
    return std::make_shared<const llms::TokenVocabulary>(std::move(pieces), std::vector<int32_t>{35});
  }();
  return v;
}

std::vector<uint32_t> mask_of(llms::GrammarMatcher& m) {
  std::vector<uint32_t> mask(m.mask_words());
  m.fill_next_token_mask(mask);
  return mask;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  llms::fuzz::GrammarInput in;
  if (!llms::fuzz::split_grammar_input(data, size, &in)) return 0;
  const std::string_view drive = in.drive;
  auto g = llms::fuzz::parse_grammar_input(in, kLimits);
  if (!g.ok()) return 0;
  auto cg = llms::CompiledGrammar::compile(std::make_shared<const llms::Grammar>(std::move(g).value()), vocab());
  if (!cg.ok()) return 0;
  llms::GrammarMatcher m(std::move(cg).value());
  const int32_t n = m.grammar().vocab().size();
  for (size_t i = 0; i < drive.size() && i < 64 && !m.terminated(); ++i) {
    const uint8_t b = static_cast<uint8_t>(drive[i]);
    const std::vector<uint32_t> before = mask_of(m);
    if (m.failed()) break;  // past the mask budget: the mask is empty by design
    if (b >= 0xF0 && m.num_accepted() > 0) {  // roll back one and come back: the same mask
      const int32_t steps = m.num_accepted();
      m.rollback(1);
      if (m.num_accepted() != steps - 1) std::abort();
      continue;
    }
    const int32_t id = static_cast<int32_t>(b % static_cast<uint8_t>(n));
    const bool allowed = llms::mask_has(before, id);
    const bool accepted = m.accept_token(id);
    // A token the mask allows is refused only where the text would be readable in too
    // many ways, which a mask cannot see (grammar_matcher.h): failed() says so.
    if (allowed && !accepted && m.failed()) break;
    if (accepted != allowed) std::abort();  // the mask and the matcher disagree
    if (allowed) {
      m.rollback(1);
      if (mask_of(m) != before) std::abort();  // rollback did not restore the state
      m.accept_token(id);
    }
  }
  return 0;
}
