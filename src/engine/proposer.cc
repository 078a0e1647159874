#include "engine/proposer.h"

#include <algorithm>

namespace llms {

std::vector<int32_t> NgramProposer::propose(std::span<const int32_t> tokens, int k) {
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

ReplayProposer::ReplayProposer(std::vector<int32_t> reference, double corrupt, int vocab, uint64_t seed)
    : reference_(std::move(reference)), corrupt_(corrupt), vocab_(vocab), state_(seed | 1) {}

std::vector<int32_t> ReplayProposer::propose(std::span<const int32_t> tokens, int k) {
  std::vector<int32_t> out;
  for (size_t i = tokens.size(); i < reference_.size() && static_cast<int>(out.size()) < k; ++i) {
    // xorshift: a cheap, seeded stream of decisions
    state_ ^= state_ << 13, state_ ^= state_ >> 7, state_ ^= state_ << 17;
    const bool wrong = static_cast<double>(state_ >> 11) * 0x1.0p-53 < corrupt_;
    out.push_back(wrong ? (reference_[i] + 1) % vocab_ : reference_[i]);
  }
  return out;
}

}  // namespace llms
