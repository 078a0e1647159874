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

}  // namespace llms::testing
