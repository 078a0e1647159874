// Speculative decoding in the engine's step: proposals before scheduling, and the
// verification of a decode chunk that carries them.
//
// Verification samples the target's distribution at every position of the chunk with
// the sequence's own sampler, in order, and keeps a proposed token only when it is
// the token the sampler picked. That is exact for any proposer that proposes single
// tokens (a point-mass draft): the output is the one plain decoding gives, token for
// token, with the same seed, because the sampler draws one random number per
// generated token either way. The first mismatch is itself a generated token (the
// correction), and when everything is accepted the last row gives one more (the bonus).
// A constrained request's matcher advances with every accepted token, so its mask at
// each position is the one plain decoding would apply there.
#include <algorithm>
#include <string>

#include "engine/engine.h"

namespace llms {

void Engine::propose_drafts() {
  if (!proposer_) return;
  std::vector<ProposalRequest> requests;
  for (Sequence* s : running_) {
    s->draft.clear();
    // Early exit and verification would need each other's positions: one or the other.
    if (s->pending() != 1 || !s->params.speculative || s->early_exit) continue;
    // No more than the request may still generate after the next token.
    const int64_t room = std::min<int64_t>(s->params.max_tokens - s->generated(),
                                           context_length_ - static_cast<int64_t>(s->tokens.size())) - 1;
    const int k = static_cast<int>(std::min<int64_t>(s->spec_k, room));
    if (k > 0) requests.push_back({s->id, s->tokens, k, &s->draft});
  }
  proposer_->propose(requests);
}

void Engine::verify(Sequence& s, size_t chunk, int64_t n_draft, int64_t now) {
  const uint64_t id = s.id;
  const int64_t first_row = fwd_.first_row[chunk];
  const std::vector<int32_t> draft(s.draft.begin(), s.draft.begin() + n_draft);
  int64_t accepted = 0;
  for (int64_t j = 0; j <= n_draft; ++j) {
    const float* logits = fwd_.row(first_row + j);
    // Under a grammar, each position is sampled under the mask of the state its
    // accepted predecessors reached, as plain decoding would.
    const int32_t token = sample_next(s, logits);
    if (token < 0) break;  // the grammar left no token: finished
    const bool match = j < n_draft && token == draft[static_cast<size_t>(j)];
    on_token(s, token, logits, now);
    if (!sequences_.count(id)) break;  // it finished (and is gone)
    if (!match) break;
    metrics_.spec_accepted_by_position.with({std::to_string(j)}).inc();
    ++accepted;
    ++s.computed;  // the proposed token's keys and values are the generated token's
  }
  metrics_.spec_drafts.inc();
  metrics_.spec_draft_tokens.inc(static_cast<double>(n_draft));
  for (int64_t j = 0; j < n_draft; ++j) metrics_.spec_draft_by_position.with({std::to_string(j)}).inc();
  metrics_.spec_accepted_tokens.inc(static_cast<double>(accepted));
  if (!sequences_.count(id)) return;
  kv_.truncate(s.blocks, s.computed);
  kv_.commit(s.blocks, s.committable());
  // Propose about as far as proposals have recently been accepted.
  s.spec_acceptance = 0.7 * s.spec_acceptance + 0.3 * static_cast<double>(accepted) / static_cast<double>(n_draft);
  const int max_k = config_.speculative.tokens;
  s.spec_k = std::clamp(static_cast<int>(s.spec_acceptance * max_k * 1.5 + 0.5), 1, max_k);
  s.draft.clear();
}

}  // namespace llms
