// Helpers shared by the grammar tests: a vocabulary made of given byte strings and
// the list of tokens a matcher allows next.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "grammar/gbnf_parser.h"
#include "grammar/grammar_matcher.h"

namespace llms::testing {

// Token i has bytes pieces[i]; the ids in `eog` end generation (their piece is ignored).
inline std::shared_ptr<const TokenVocabulary> make_vocab(std::vector<std::string> pieces, std::vector<int32_t> eog = {}) {
  return std::make_shared<const TokenVocabulary>(std::move(pieces), std::move(eog));
}

inline std::shared_ptr<const CompiledGrammar> compile_gbnf(const std::string& text,
                                                           std::shared_ptr<const TokenVocabulary> vocab) {
  auto g = parse_gbnf(text);
  EXPECT_TRUE(g.ok()) << g.status().to_string();
  if (!g.ok()) return nullptr;
  auto cg = CompiledGrammar::compile(std::make_shared<const Grammar>(std::move(g).value()), std::move(vocab));
  EXPECT_TRUE(cg.ok()) << cg.status().to_string();
  return cg.ok() ? std::move(cg).value() : nullptr;
}

// A front end's grammar, shared; null (and a failed expectation) when it refused.
inline std::shared_ptr<const Grammar> grammar_of(Result<Grammar> g) {
  EXPECT_TRUE(g.ok()) << g.status().to_string();
  return g.ok() ? std::make_shared<const Grammar>(std::move(g).value()) : nullptr;
}

// The allowed ids, ascending.
inline std::vector<int32_t> allowed(GrammarMatcher& m) {
  std::vector<uint32_t> mask(m.mask_words());
  m.fill_next_token_mask(mask);
  std::vector<int32_t> out;
  for (int32_t id = 0; id < m.grammar().vocab().size(); ++id) {
    if (mask_has(mask, id)) out.push_back(id);
  }
  return out;
}

// A vocabulary of the 256 single bytes, enough to run any text through a grammar.
inline std::shared_ptr<const TokenVocabulary> byte_vocab() {
  static const auto v = [] {
    std::vector<std::string> pieces;
    for (int b = 0; b < 256; ++b) pieces.emplace_back(1, static_cast<char>(b));
    return make_vocab(std::move(pieces));
  }();
  return v;
}

// Whether `text` is a complete match of `g`.
inline bool matches(std::shared_ptr<const Grammar> g, std::string_view text) {
  auto cg = CompiledGrammar::compile(std::move(g), byte_vocab());
  EXPECT_TRUE(cg.ok()) << cg.status().to_string();
  if (!cg.ok()) return false;
  GrammarMatcher m(std::move(cg).value());
  return (text.empty() || m.accept_bytes(text)) && m.can_end();
}

// The accepted ids of a point, whichever form the precomputation stored.
inline std::vector<int32_t> accepted_ids(const PointTokens& t, int32_t vocab_size) {
  if (t.accepted_bits.empty()) return t.accepted;
  std::vector<int32_t> out;
  for (int32_t id = 0; id < vocab_size; ++id) {
    if (mask_has(t.accepted_bits, id)) out.push_back(id);
  }
  return out;
}

}  // namespace llms::testing
