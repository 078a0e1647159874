#include "engine/model_runner.h"

#include <algorithm>

#include "base/log.h"
#include "engine/step_plan.h"

namespace llms {

LocalModelRunner::LocalModelRunner(const Model& model, const KvCacheConfig& kv_config, int threads, int context_length)
    : model_(model), context_length_(context_length), kv_(kv_config), pool_(threads) {
  state_.set_context_length(context_length);
}

LocalModelRunner::~LocalModelRunner() {
  if (leads_group() && group_failed_.ok()) {
    const Status s = tell_group(encode_stop());
    if (!s.ok()) log_warn("tensor parallel: the workers did not hear stop: {}", s.to_string());
  }
}

Status LocalModelRunner::tell_group(std::vector<uint8_t> plan) {
  if (!leads_group()) return ok_status();
  LLMS_RETURN_IF_ERROR(group_failed_);
  group_failed_ = model_.ranks().broadcast(plan);
  last_told_ = std::chrono::steady_clock::now();
  return group_failed_;
}

void LocalModelRunner::heartbeat() {
  constexpr std::chrono::milliseconds kHeartbeatInterval{1000};
  if (!leads_group() || !group_failed_.ok() || std::chrono::steady_clock::now() - last_told_ < kHeartbeatInterval) return;
  if (!tell_group(encode_heartbeat()).ok()) return;
  std::vector<uint8_t> all;
  const uint8_t here = 1;
  group_failed_ = model_.ranks().allgather({&here, 1}, all);
}

Status LocalModelRunner::start_group() {
  const KvCacheConfig& kc = kv_.config();
  return tell_group(encode_setup(
      {kc.num_blocks, kc.block_size, kc.k_type, kc.v_type, kc.commit_at_start, static_cast<int32_t>(context_length_)}));
}

int64_t LocalModelRunner::discard_kv_blocks(std::span<const int32_t> blocks) {
  if (!tell_group(encode_discard(blocks)).ok()) return 0;
  return kv_.discard_blocks(blocks);
}

void LocalModelRunner::for_each(int64_t n, const std::function<void(int64_t)>& fn) {
  pool_.parallel_for(n, 1, 2, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) fn(i);
  });
  pool_.park();
}

Status LocalModelRunner::forward(std::span<const SequenceChunk> chunks, ForwardOutput& out) {
  LLMS_RETURN_IF_ERROR(tell_group(encode_forward(chunks)));
  Status st = forward_here(chunks, out);
  // A pass that failed on the group's collectives leaves the ranks out of step: the
  // group cannot run another.
  if (leads_group() && (st.code() == StatusCode::kUnavailable || st.code() == StatusCode::kDeadlineExceeded)) {
    group_failed_ = st;
  }
  return st;
}

Status LocalModelRunner::forward_here(std::span<const SequenceChunk> chunks, ForwardOutput& out) {
  // Hidden states (embeddings) and adapters come from the plain pass only: a step that
  // has such a chunk runs every token to full depth (right, only not shortened).
  const bool exits = exit_.enabled() &&
                     std::any_of(chunks.begin(), chunks.end(),
                                 [](const SequenceChunk& c) { return c.early_exit_from != kNoEarlyExit; }) &&
                     std::none_of(chunks.begin(), chunks.end(), [](const SequenceChunk& c) { return c.hidden || c.adapter != nullptr; });
  Status st = exits ? model_.forward(chunks, kv_, state_, pool_, exit_, out) : model_.forward(chunks, kv_, state_, pool_, out);
  pool_.park();
  return st;
}

Status LocalModelRunner::set_early_exit(const EarlyExitConfig& exit) {
  LLMS_RETURN_IF_ERROR(exit.validate(model_.config().n_layer));
  if (exit.enabled() && (model_.shard().split() || model_.shard().pipelined())) {
    return unimplemented("early exit under tensor or pipeline parallelism");
  }
  exit_ = exit;
  return ok_status();
}

}  // namespace llms
