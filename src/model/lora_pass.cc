// The adapters' part of Model::forward (model/lora.h): the pass's tokens grouped by
// adapter once, then after each product of a layer, every group's low-rank product.
#include "model/lora.h"
#include "model/model.h"

namespace llms {

void Model::group_adapters(std::span<const SequenceChunk> chunks, ForwardState& s) const {
  s.num_adapter_groups_ = 0;
  int32_t t = 0;
  for (const SequenceChunk& ch : chunks) {
    const int32_t len = static_cast<int32_t>(ch.tokens.size());
    if (ch.adapter != nullptr) {
      size_t g = 0;
      while (g < s.num_adapter_groups_ && s.adapter_groups_[g].adapter != ch.adapter) ++g;
      if (g == s.num_adapter_groups_) {
        if (g == s.adapter_groups_.size()) s.adapter_groups_.emplace_back();
        s.adapter_groups_[g].adapter = ch.adapter;
        s.adapter_groups_[g].tokens.clear();
        ++s.num_adapter_groups_;
      }
      for (int32_t i = 0; i < len; ++i) s.adapter_groups_[g].tokens.push_back(t + i);
    }
    t += len;
  }
}

void Model::add_adapters(std::span<const MatmulOutput> outs, int layer, std::span<const char* const> whats,
                         const float* x, ForwardState& s, ThreadPool& pool) const {
  s.lora_tasks_.clear();
  for (size_t i = 0; i < outs.size(); ++i) {
    const int target = lora_target_of(whats[i]);
    if (target < 0) continue;
    for (size_t g = 0; g < s.num_adapter_groups_; ++g) {
      const ForwardState::AdapterGroup& group = s.adapter_groups_[g];
      const LoraFactors* f = group.adapter->factors(layer, static_cast<LoraTarget>(target));
      if (f != nullptr) s.lora_tasks_.push_back({f, group.tokens, outs[i].y});
    }
  }
  lora_add(s.lora_tasks_, x, pool);
}

}  // namespace llms
