#include "engine/model_runner.h"

#include <algorithm>

namespace llms {

LocalModelRunner::LocalModelRunner(const Model& model, const KvCacheConfig& kv_config, int threads, int context_length)
    : model_(model), kv_(kv_config), pool_(threads) {
  state_.set_context_length(context_length);
}

void LocalModelRunner::for_each(int64_t n, const std::function<void(int64_t)>& fn) {
  pool_.parallel_for(n, 1, 2, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) fn(i);
  });
  pool_.park();
}

Status LocalModelRunner::forward(std::span<const SequenceChunk> chunks, ForwardOutput& out) {
  // Hidden states (embeddings) come from the plain pass only: a step that has such a
  // chunk runs every token to full depth (right, only not shortened).
  const bool exits = exit_.enabled() &&
                     std::any_of(chunks.begin(), chunks.end(),
                                 [](const SequenceChunk& c) { return c.early_exit_from != kNoEarlyExit; }) &&
                     std::none_of(chunks.begin(), chunks.end(), [](const SequenceChunk& c) { return c.hidden; });
  Status st = exits ? model_.forward(chunks, kv_, state_, pool_, exit_, out) : model_.forward(chunks, kv_, state_, pool_, out);
  pool_.park();
  return st;
}

Status LocalModelRunner::set_early_exit(const EarlyExitConfig& exit) {
  LLMS_RETURN_IF_ERROR(exit.validate(model_.config().n_layer));
  exit_ = exit;
  return ok_status();
}

}  // namespace llms
