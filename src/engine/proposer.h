// Proposers of speculative decoding: cheap guesses of sequences' next tokens, which
// the target model then checks in one forward pass (engine_speculative.cc). A wrong
// guess costs a little compute and never changes the output: every proposal is a
// single token per position (a point mass), which the target accepts exactly when it
// would have generated it.
//
//   ngram   prompt lookup: the last n tokens (n from ngram_max down to 1) are looked up
//           earlier in the sequence's own prompt and output; what followed them there
//           is proposed. Needs no second model.
//   draft   a smaller (or lower-precision) model with the same vocabulary, with paged
//           KV of its own, stepped for all proposing sequences at once: it catches up
//           on each sequence's new tokens in one batched pass, then proposes its
//           greedy tokens, one batched pass per position.
//
// Thread-safety: used by the engine thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "kv/kv_block_manager.h"
#include "kv/kv_cache.h"
#include "model/model.h"

namespace llms {

// One sequence's request for proposals: up to `k` tokens that may follow `tokens` (its
// prompt and output so far), written to `out` (fewer, or none, without a guess).
struct ProposalRequest {
  uint64_t seq_id = 0;
  std::span<const int32_t> tokens;
  int k = 0;
  std::vector<int32_t>* out = nullptr;
};

class Proposer {
 public:
  virtual ~Proposer() = default;
  virtual void propose(std::span<const ProposalRequest> requests) = 0;
  // The sequence ended: state kept for it may go.
  virtual void forget(uint64_t seq_id) {}
};

class NgramProposer : public Proposer {
 public:
  explicit NgramProposer(int ngram_max) : ngram_max_(ngram_max) {}
  void propose(std::span<const ProposalRequest> requests) override;
  std::vector<int32_t> propose_one(std::span<const int32_t> tokens, int k) const;

 private:
  int ngram_max_;
};

// Proposes from a known continuation (a benchmark's stand-in for a proposer whose
// acceptance is controlled): the tokens of `reference` (a whole sequence, prompt and
// output) that follow the sequence so far, each replaced by another token with
// probability `corrupt`.
class ReplayProposer : public Proposer {
 public:
  ReplayProposer(std::vector<int32_t> reference, double corrupt, int vocab, uint64_t seed);
  void propose(std::span<const ProposalRequest> requests) override;

 private:
  std::vector<int32_t> reference_;
  double corrupt_;
  int vocab_;
  uint64_t state_;
};

class DraftModelProposer : public Proposer {
 public:
  // `draft` must outlive the proposer and share the target's vocabulary size; its KV
  // cache holds `kv_blocks` blocks of `block_size` tokens (F16).
  static Result<std::unique_ptr<DraftModelProposer>> create(const Model& draft, int target_vocab, int32_t kv_blocks,
                                                            int block_size, int threads);
  void propose(std::span<const ProposalRequest> requests) override;
  void forget(uint64_t seq_id) override;

 private:
  DraftModelProposer(const Model& draft, const KvCacheConfig& kv, int threads);
  struct State {
    SequenceBlocks blocks;
    std::vector<int32_t> tokens;  // what the draft's cache holds, position by position
  };
  // Brings every sequence's state to tokens[0, n - 1): the last token is the input of
  // the first proposal. False when the cache is full (no proposals then).
  bool catch_up(std::span<const ProposalRequest> requests, std::vector<State*>& states);

  const Model& draft_;
  KvCache kv_;
  KvBlockManager blocks_;
  ThreadPool pool_;
  ForwardState fwd_state_;
  ForwardOutput out_;
  std::unordered_map<uint64_t, State> states_;
};

}  // namespace llms
