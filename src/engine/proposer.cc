#include "engine/proposer.h"

#include <fmt/format.h>

#include <algorithm>

namespace llms {

std::vector<int32_t> NgramProposer::propose_one(std::span<const int32_t> tokens, int k) const {
  const int64_t len = static_cast<int64_t>(tokens.size());
  for (int64_t n = std::min<int64_t>(ngram_max_, len - 1); n >= 1 && k > 0; --n) {
    const auto suffix = tokens.subspan(static_cast<size_t>(len - n));
    // The most recent earlier occurrence: what followed it there is the likeliest
    // continuation here.
    for (int64_t start = len - n - 1; start >= 0; --start) {
      if (!std::equal(suffix.begin(), suffix.end(), tokens.begin() + start)) continue;
      const int64_t from = start + n;
      const int64_t count = std::min<int64_t>(k, len - from);
      return {tokens.begin() + from, tokens.begin() + from + count};
    }
  }
  return {};
}

void NgramProposer::propose(std::span<const ProposalRequest> requests) {
  for (const auto& r : requests) *r.out = propose_one(r.tokens, r.k);
}

ReplayProposer::ReplayProposer(std::vector<int32_t> reference, double corrupt, int vocab, uint64_t seed)
    : reference_(std::move(reference)), corrupt_(corrupt), vocab_(vocab), state_(seed | 1) {}

void ReplayProposer::propose(std::span<const ProposalRequest> requests) {
  for (const auto& r : requests) {
    r.out->clear();
    for (size_t i = r.tokens.size(); i < reference_.size() && static_cast<int>(r.out->size()) < r.k; ++i) {
      // xorshift: a cheap, seeded stream of decisions
      state_ ^= state_ << 13, state_ ^= state_ >> 7, state_ ^= state_ << 17;
      const bool wrong = static_cast<double>(state_ >> 11) * 0x1.0p-53 < corrupt_;
      r.out->push_back(wrong ? (reference_[i] + 1) % vocab_ : reference_[i]);
    }
  }
}

Result<std::unique_ptr<DraftModelProposer>> DraftModelProposer::create(const Model& draft, int target_vocab,
                                                                        int32_t kv_blocks, int block_size,
                                                                        int threads) {
  if (draft.config().n_vocab != target_vocab) {
    return invalid_argument(fmt::format("the draft model's vocabulary has {} tokens, the target's {}: they must be the "
                                        "same",
                                        draft.config().n_vocab, target_vocab));
  }
  const KvCacheConfig kv = draft.kv_config(kv_blocks, block_size, DType::kF16, DType::kF16);
  LLMS_RETURN_IF_ERROR(kv.validate());
  return std::unique_ptr<DraftModelProposer>(new DraftModelProposer(draft, kv, threads));
}

DraftModelProposer::DraftModelProposer(const Model& draft, const KvCacheConfig& kv, int threads)
    : draft_(draft), kv_(kv), blocks_(kv.num_blocks, kv.block_size, Hash128{}, false), pool_(threads) {}

void DraftModelProposer::forget(uint64_t seq_id) {
  auto it = states_.find(seq_id);
  if (it == states_.end()) return;
  blocks_.release(it->second.blocks);
  states_.erase(it);
}

bool DraftModelProposer::catch_up(std::span<const ProposalRequest> requests, std::vector<State*>& states) {
  std::vector<SequenceChunk> chunks;
  for (size_t i = 0; i < requests.size(); ++i) {
    State& st = *states[i];
    const auto want = requests[i].tokens.first(requests[i].tokens.size() - 1);
    // Keep what still agrees with the sequence (after a rejection it diverges).
    size_t keep = 0;
    while (keep < st.tokens.size() && keep < want.size() && st.tokens[keep] == want[keep]) ++keep;
    blocks_.truncate(st.blocks, static_cast<int64_t>(keep));
    st.tokens.resize(keep);
    if (keep == want.size()) continue;
    if (!blocks_.reserve(st.blocks, static_cast<int64_t>(want.size() - keep))) return false;
    chunks.push_back({want.subspan(keep), static_cast<int64_t>(keep), st.blocks.table.blocks, LogitsWanted::kNone});
    st.tokens.assign(want.begin(), want.end());
  }
  return chunks.empty() || draft_.forward(chunks, kv_, fwd_state_, pool_, out_).ok();
}

void DraftModelProposer::propose(std::span<const ProposalRequest> requests) {
  std::vector<State*> states;
  for (const auto& r : requests) {
    r.out->clear();
    states.push_back(&states_[r.seq_id]);
  }
  if (requests.empty() || !catch_up(requests, states)) return;
  // Round j: every sequence still proposing feeds its newest token and takes the
  // draft's greedy next one.
  std::vector<int32_t> inputs(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) inputs[i] = requests[i].tokens.back();
  int rounds = 0;
  for (const auto& r : requests) rounds = std::max(rounds, r.k);
  for (int j = 0; j < rounds; ++j) {
    std::vector<SequenceChunk> chunks;
    std::vector<size_t> who;
    for (size_t i = 0; i < requests.size(); ++i) {
      State& st = *states[i];
      if (j >= requests[i].k || !blocks_.reserve(st.blocks, 1)) continue;
      chunks.push_back({std::span<const int32_t>(&inputs[i], 1), static_cast<int64_t>(st.tokens.size()),
                        st.blocks.table.blocks, LogitsWanted::kLast});
      st.tokens.push_back(inputs[i]);
      who.push_back(i);
    }
    if (chunks.empty() || !draft_.forward(chunks, kv_, fwd_state_, pool_, out_).ok()) return;
    for (size_t c = 0; c < chunks.size(); ++c) {
      const float* logits = out_.last_of(c, chunks[c]);
      const int32_t next = static_cast<int32_t>(std::max_element(logits, logits + out_.n_vocab) - logits);
      requests[who[c]].out->push_back(next);
      inputs[who[c]] = next;
    }
  }
}

}  // namespace llms
