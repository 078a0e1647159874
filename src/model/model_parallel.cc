// The parts of the forward pass only tensor parallelism runs: the output head's
// vocabulary shares gathered into whole rows of logits on tensor rank 0.
#include <algorithm>

#include "model/model.h"

namespace llms {

Status Model::split_head_rows(std::span<const int64_t> src, float* logits, ForwardState& s, ThreadPool& pool) const {
  const int64_t rows = static_cast<int64_t>(src.size()), n_vocab = config_.n_vocab;
  const std::vector<int64_t> shares = shard_.vocab_counts();
  s.head_part_.resize(static_cast<size_t>(rows * shard_.vocab.count));  // [rows, this rank's share]
  head_rows(src, s.head_part_.data(), s, pool);
  std::vector<int64_t> counts;
  for (int64_t share : shares) counts.push_back(rows * share);
  s.head_all_.resize(static_cast<size_t>(rows * n_vocab));  // each rank's [rows, share], in rank order
  LLMS_RETURN_IF_ERROR(tensor_ranks_->gather(s.head_part_, counts, s.head_all_.data()));
  if (tensor_ranks_->rank() != 0) return ok_status();
  const float* part = s.head_all_.data();
  int64_t first = 0;  // the share's first token id
  for (int64_t share : shares) {
    for (int64_t r = 0; r < rows; ++r) std::copy_n(part + r * share, share, logits + r * n_vocab + first);
    part += rows * share;
    first += share;
  }
  return ok_status();
}

}  // namespace llms
