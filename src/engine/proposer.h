// Proposers of speculative decoding: cheap guesses of a sequence's next tokens, which
// the target model then checks in one forward pass (engine.cc, verify()). A proposer
// that guesses wrong costs a little compute and never changes the output.
//
//   ngram   prompt lookup: the last n tokens (n from ngram_max down to 1) are looked up
//           earlier in the sequence's own prompt and output; what followed them there
//           is proposed. Needs no second model.
//
// Thread-safety: used by the engine thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace llms {

class Proposer {
 public:
  virtual ~Proposer() = default;
  // Up to `k` tokens that may follow `tokens` (a sequence's prompt and output so far);
  // fewer, or none, when it has no guess.
  virtual std::vector<int32_t> propose(std::span<const int32_t> tokens, int k) = 0;
};

class NgramProposer : public Proposer {
 public:
  explicit NgramProposer(int ngram_max) : ngram_max_(ngram_max) {}
  std::vector<int32_t> propose(std::span<const int32_t> tokens, int k) override;

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
  std::vector<int32_t> propose(std::span<const int32_t> tokens, int k) override;

 private:
  std::vector<int32_t> reference_;
  double corrupt_;
  int vocab_;
  uint64_t state_;
};

}  // namespace llms
