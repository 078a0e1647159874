// GrammarCache: the engine's compiled grammars. A Grammar (vocabulary-free, made by
// the server's front ends) is joined with this engine's vocabulary once and kept by
// its hash, so that repeated requests with the same schema skip the per-token
// precomputation. The vocabulary view (TokenVocabulary) is built on first use.
//
// Also here: constrain_logits(), what the engine thread does to a row of logits
// before sampling a constrained sequence.
//
// Thread-safety: compile() and vocabulary() from any thread (an internal mutex; the
// compilation itself runs outside it). constrain_logits() on the engine thread.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <span>
#include <unordered_map>
#include <vector>

#include "base/hash.h"
#include "base/status.h"
#include "grammar/compiled_grammar.h"
#include "grammar/grammar_matcher.h"
#include "tokenizer/tokenizer.h"

namespace llms {

struct GrammarCacheStats {
  int64_t hits = 0;
  int64_t misses = 0;
  int64_t entries = 0;
};

class GrammarCache {
 public:
  GrammarCache(const Tokenizer& tok, size_t max_entries) : tok_(tok), max_entries_(max_entries) {}

  std::shared_ptr<const TokenVocabulary> vocabulary() const;
  // The compiled form of `g` for this vocabulary, from the cache or made now under
  // `budget` (CompiledGrammar::compile's errors; a cached grammar keeps the budget it
  // was compiled with).
  Result<std::shared_ptr<const CompiledGrammar>> compile(std::shared_ptr<const Grammar> g,
                                                         const GrammarBudget& budget = {});
  GrammarCacheStats stats() const;

 private:
  struct Entry {
    Hash128 key;
    std::shared_ptr<const CompiledGrammar> value;
  };
  const Tokenizer& tok_;
  const size_t max_entries_;
  mutable std::mutex mu_;
  mutable std::shared_ptr<const TokenVocabulary> vocab_;
  std::list<Entry> lru_;
  std::unordered_map<Hash128, std::list<Entry>::iterator, Hash128Hasher> index_;
  GrammarCacheStats stats_;
};

// Copies `logits` [n_vocab] into `out`, with every token the matcher does not allow
// next set to -infinity (ids past the grammar's vocabulary too); end-of-generation
// tokens are dropped as well when `ignore_eos`. Returns false when no token is left.
bool constrain_logits(GrammarMatcher& m, std::span<const float> logits, bool ignore_eos, std::vector<uint32_t>* mask,
                      std::vector<float>* out);

}  // namespace llms
