// Making an engine for a model: the KV cache sized from the config, the model runner,
// the draft model of speculative decoding, and the warm-up pass before any request.
#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "base/clock.h"
#include "base/log.h"
#include "base/memory.h"
#include "engine/early_exit_policy.h"
#include "engine/engine.h"
#include "engine/kv_sizing.h"

namespace llms {
namespace {

// Weights and a full KV pool must fit under the low watermark: above it, the breaker
// would open under ordinary load and could never close by giving memory back.
Status check_fits_low_mark(int64_t weights_bytes, int64_t kv_bytes, const EngineConfig& config) {
  const int64_t low = config.admission.low_mark_bytes();
  if (weights_bytes + kv_bytes <= low) return ok_status();
  constexpr double kMiB = 1 << 20;
  return invalid_argument(fmt::format(
      "weights ({:.1f} MiB) and the KV cache ({:.1f} MiB) exceed {}; lower kv_cache_memory to at most {:.1f} MiB or "
      "raise memory_limit_bytes",
      static_cast<double>(weights_bytes) / kMiB, static_cast<double>(kv_bytes) / kMiB,
      config.admission.describe_low_mark(), static_cast<double>(std::max<int64_t>(0, low - weights_bytes)) / kMiB));
}

}  // namespace

Result<std::unique_ptr<Engine>> Engine::create(const Model& model, const Tokenizer& tokenizer,
                                               const EngineConfig& config, Registry* registry) {
  LLMS_RETURN_IF_ERROR(config.validate());
  LLMS_RETURN_IF_ERROR(config.early_exit.validate(model.config().n_layer));
  LLMS_ASSIGN_OR_RETURN(const KvSizing kv, size_kv_cache(model, config));
  KvCacheConfig kv_config = model.kv_config(kv.num_blocks, config.kv.block_size, config.kv.k_type, config.kv.v_type);
  kv_config.commit_at_start = config.kv.commit_at_start;
  auto runner = std::make_unique<LocalModelRunner>(model, kv_config, config.threads, kv.context_length);
  LLMS_RETURN_IF_ERROR(runner->start_group());  // tensor parallelism: the other ranks' pools
  LLMS_RETURN_IF_ERROR(check_fits_low_mark(runner->weights_memory().owned_bytes, runner->kv_reserved_bytes(), config));
  log_info("engine: {} batching, {} KV blocks of {} tokens ({:.1f} MiB, {}/{}), context {}, {} threads",
           batching_policy_name(config.batching.policy), kv.num_blocks, config.kv.block_size,
           static_cast<double>(kv.num_blocks * kv.bytes_per_block) / (1 << 20), dtype_name(config.kv.k_type),
           dtype_name(config.kv.v_type), kv.context_length, runner->num_threads());
  auto engine = std::make_unique<Engine>(std::move(runner), tokenizer, config, model.identity(), kv.num_blocks,
                                         kv.context_length, registry);
  if (config.warmup_pass) LLMS_RETURN_IF_ERROR(engine->warm_up());
  if (config.speculative.mode == SpeculativeMode::kDraft) {
    LLMS_ASSIGN_OR_RETURN(engine->draft_model_, Model::load(config.speculative.draft_model));
    const int64_t per_block =
        engine->draft_model_->kv_config(1, config.kv.block_size, DType::kF16, DType::kF16).bytes_per_block();
    // As many sequences of the context as the target holds, within a twentieth of memory.
    const int64_t limit = effective_memory_limit(config.admission.memory_limit_bytes);
    const int64_t blocks = std::max<int64_t>(
        1, std::min<int64_t>(limit / 20 / per_block,
                             static_cast<int64_t>(kv.num_blocks) + config.batching.max_running));
    LLMS_ASSIGN_OR_RETURN(auto draft, DraftModelProposer::create(*engine->draft_model_, model.config().n_vocab,
                                                                 static_cast<int32_t>(std::min<int64_t>(blocks, 1 << 22)),
                                                                 config.kv.block_size, config.threads));
    engine->proposer_ = std::move(draft);
    log_info("engine: speculative decoding with draft model {}", config.speculative.draft_model);
  }
  return engine;
}

Status Engine::warm_up() {
  const Stopwatch watch;
  const int64_t capacity = static_cast<int64_t>(kv_.num_blocks()) * config_.kv.block_size;
  const int64_t tokens = std::min<int64_t>({config_.batching.max_batch_tokens, context_length_, capacity});
  if (tokens < 1) return ok_status();
  const int64_t rows = std::clamp<int64_t>(config_.batching.max_running, 1, tokens);
  // One prompt-like chunk and rows - 1 decode-like ones of a token each, all over the
  // same blocks (every block is free now, and these are left free: sequences write a
  // position before they read it, and nothing of this pass enters the prefix cache).
  std::vector<int32_t> ids(static_cast<size_t>(tokens), 0);
  std::vector<int32_t> table(static_cast<size_t>((tokens + config_.kv.block_size - 1) / config_.kv.block_size));
  std::iota(table.begin(), table.end(), 0);
  const int64_t prompt = tokens - rows + 1;
  std::vector<SequenceChunk> chunks;
  chunks.push_back({std::span<const int32_t>(ids).first(static_cast<size_t>(prompt)), 0, table, LogitsWanted::kLast});
  for (int64_t i = 1; i < rows; ++i) {
    chunks.push_back({std::span<const int32_t>(ids).first(1), prompt + i - 1, table, LogitsWanted::kLast});
  }
  LLMS_RETURN_IF_ERROR(runner_->forward(chunks, fwd_));
  runner_->reset_expert_load();
  profile_.clear();
  log_info("engine: warm-up pass of {} tokens ({} rows of logits) in {:.0f} ms", tokens, rows, watch.elapsed_s() * 1e3);
  return ok_status();
}

}  // namespace llms
