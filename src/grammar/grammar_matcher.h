// GrammarMatcher: one generation's position in a CompiledGrammar. It says which
// tokens may come next (a bitmask over the vocabulary), takes the token that was
// chosen, and can roll back accepted tokens (for drafted tokens that were refused).
//
// The state after each accepted token is kept, so rollback(n) is a pop. Masks are
// cached by state: inside a long string or a run of digits the state repeats and the
// mask is a copy. End-of-generation tokens are allowed exactly when the grammar can
// end here; accepting one terminates the matcher.
//
// Each mask runs under the grammar's mask budget (grammar_budget.h): the points it
// classifies on first use and its run-time checks of uncertain tokens. Past it the
// mask comes back empty and failed() is true, with failure() saying which budget;
// the engine ends such a generation with finish reason "error" (as it does whenever
// no token is allowed). The same happens at a point whose classification ran past the
// point budget only if checking all its tokens at run time also runs past the mask
// budget.
//
// Thread-safety: one matcher per sequence, used by one thread at a time (the engine
// thread). The CompiledGrammar it reads is shared and immutable.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "grammar/grammar_stepper.h"

namespace llms {

class GrammarMatcher {
 public:
  explicit GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar);

  // Writes the allowed next tokens into `mask` (mask_words() words, bit i of word
  // i / 32 for token i). An all-zero mask means the grammar cannot go on with this
  // vocabulary (or it has terminated), or that the mask ran past its budget
  // (failed()).
  void fill_next_token_mask(std::span<uint32_t> mask);
  // The last fill_next_token_mask() ran past the mask budget, or the last
  // accept_token() / accept_bytes() was refused because the text would be readable in
  // more than GrammarStepper::kMaxStacks ways (the mask cannot see that: it allowed
  // the token); failure() says which. The engine ends such a generation with finish
  // reason "error".
  bool failed() const { return !failure_.empty(); }
  const std::string& failure() const { return failure_; }
  size_t mask_words() const { return grammar_->mask_words(); }

  // Takes token `id`; false (and no change) when the grammar does not allow it.
  bool accept_token(int32_t id);
  // Takes raw text (not token by token); false (and no change) when not allowed.
  bool accept_bytes(std::string_view bytes);
  // Undoes the last `n` accepted tokens or texts (at most num_accepted()).
  void rollback(int n);
  int num_accepted() const { return static_cast<int>(history_.size()) - 1; }

  // The text so far is a complete match: end-of-generation is allowed.
  bool can_end() const { return current().state.can_end; }
  // Nothing but the end can follow (or an end-of-generation token was accepted).
  bool finished() const { return current().terminated || (current().state.tops.empty() && current().state.can_end); }
  bool terminated() const { return current().terminated; }

  const CompiledGrammar& grammar() const { return *grammar_; }

 private:
  struct Entry {
    MatchState state;
    bool terminated = false;
  };
  struct CachedMask {
    std::vector<int32_t> tops;
    bool can_end = false;
    std::vector<uint32_t> mask;
  };

  const Entry& current() const { return history_.back(); }
  // Consumes `bytes` from `from`; false when every path dies.
  bool run(const MatchState& from, std::string_view bytes, MatchState* out);
  // Sets the bits of the uncertain tokens (ascending ranks) the real stacks accept.
  // Stops early when `meter` stops.
  void check_uncertain(const MatchState& from, std::span<const int32_t> ranks, std::span<uint32_t> mask,
                       WorkMeter& meter);
  // The precomputed classes of the current tops into `mask`, the tokens left to check
  // into candidates_.
  void gather(const MatchState& s, std::span<uint32_t> mask, WorkMeter& meter);
  const CachedMask* cached(const MatchState& s) const;
  void remember(const MatchState& s, std::span<const uint32_t> mask);

  static constexpr size_t kMaxCachedMasks = 32;

  std::shared_ptr<const CompiledGrammar> grammar_;
  StackPool pool_;
  GrammarStepper stepper_;
  std::vector<Entry> history_;
  std::unordered_map<uint64_t, CachedMask> cache_;
  std::string failure_;
  // Scratch.
  std::vector<MatchState> depth_states_;
  std::vector<int32_t> candidates_;
  std::vector<uint32_t> checked_;
};

// out[i] = logits[i] for every token i in `mask`, else -infinity (ids past the mask
// too), in one pass: whole words of the mask are copied or filled, so a sparse mask
// over a large vocabulary costs about one copy of the row. out.size() == logits.size().
void masked_copy(std::span<const uint32_t> mask, std::span<const float> logits, std::span<float> out);

inline bool mask_has(std::span<const uint32_t> mask, int32_t id) { return (mask[static_cast<size_t>(id) >> 5] >> (id & 31)) & 1; }

}  // namespace llms
