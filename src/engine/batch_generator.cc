#include "engine/batch_generator.h"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <memory>
#include <random>

#include "base/clock.h"
#include "engine/stop_matcher.h"
#include "kv/block_pool.h"
#include "tokenizer/streaming_decoder.h"

namespace llms {

Status GeneratorConfig::validate() const {
  if (parallel < 1) return invalid_argument(fmt::format("--parallel must be >= 1, got {}", parallel));
  if (max_batch_tokens < 1) return invalid_argument(fmt::format("--max-batch-tokens must be >= 1, got {}", max_batch_tokens));
  if (block_size < 8 || block_size > 128) {
    return invalid_argument(fmt::format("--kv-block-size must be between 8 and 128, got {}", block_size));
  }
  if (context_length < 0) return invalid_argument("--ctx must be >= 0");
  return ok_status();
}

BatchGenerator::BatchGenerator(const Model& model, const Tokenizer& tokenizer, ThreadPool& pool, GeneratorConfig config)
    : model_(model), tokenizer_(tokenizer), pool_(pool), config_(config) {}

namespace {

struct Running {
  size_t index = 0;
  const GenerationSpec* spec = nullptr;
  std::vector<int32_t> tokens;  // prompt then generated
  int64_t computed = 0;         // positions whose K/V are in the cache
  BlockTable table;
  std::unique_ptr<Sampler> sampler;
  std::unique_ptr<StreamingDecoder> decoder;
  std::unique_ptr<StopMatcher> stop;
  GenerationOutput out;
  bool done = false;
};

}  // namespace

Result<std::vector<GenerationOutput>> BatchGenerator::run(std::span<const GenerationSpec> specs,
                                                          const TextCallback& on_text, GeneratorStats* stats) {
  LLMS_RETURN_IF_ERROR(config_.validate());
  const int64_t n_ctx = config_.context_length > 0 ? config_.context_length : model_.config().n_ctx_train;
  int64_t longest = 0;
  for (size_t i = 0; i < specs.size(); ++i) {
    const auto& s = specs[i];
    LLMS_RETURN_IF_ERROR(s.sampling.validate());
    if (s.prompt.empty()) return invalid_argument(fmt::format("prompt {} is empty", i));
    if (s.max_tokens < 1) return invalid_argument(fmt::format("max tokens must be >= 1, got {}", s.max_tokens));
    if (static_cast<int64_t>(s.prompt.size()) >= n_ctx) {
      return invalid_argument(fmt::format("prompt {} has {} tokens; the context holds {}", i, s.prompt.size(), n_ctx));
    }
    longest = std::max(longest, std::min<int64_t>(n_ctx, static_cast<int64_t>(s.prompt.size()) + s.max_tokens));
  }
  // Enough blocks for `parallel` sequences of the longest length: never runs out.
  const int bs = config_.block_size;
  const int32_t per_seq = static_cast<int32_t>((longest + bs - 1) / bs);
  const int32_t num_blocks = std::max<int32_t>(1, per_seq * std::min<int32_t>(config_.parallel, static_cast<int32_t>(specs.size())));
  const KvCacheConfig kv_config = model_.kv_config(num_blocks, bs, config_.k_type, config_.v_type);
  LLMS_RETURN_IF_ERROR(kv_config.validate());
  KvCache kv(kv_config);
  BlockPool blocks(num_blocks);
  ForwardState state;
  ForwardOutput fwd;
  std::random_device entropy;

  std::vector<GenerationOutput> results(specs.size());
  std::deque<size_t> waiting;
  for (size_t i = 0; i < specs.size(); ++i) waiting.push_back(i);
  std::vector<std::unique_ptr<Running>> running;
  GeneratorStats st;
  st.kv_blocks_total = num_blocks;
  Stopwatch total;

  auto emit = [&](Running& r, const std::string& text) {
    if (text.empty()) return;
    r.out.text += text;
    if (on_text) on_text(r.index, text);
  };
  auto finish = [&](Running& r, FinishReason why) {
    emit(r, r.stop->push(r.decoder->flush()));
    emit(r, r.stop->finish());
    r.out.finish = why;
    r.done = true;
  };

  while (!waiting.empty() || !running.empty()) {
    while (!waiting.empty() && static_cast<int>(running.size()) < config_.parallel) {
      auto r = std::make_unique<Running>();
      r->index = waiting.front();
      waiting.pop_front();
      r->spec = &specs[r->index];
      r->tokens = r->spec->prompt;
      r->sampler = std::make_unique<Sampler>(r->spec->sampling, (static_cast<uint64_t>(entropy()) << 32) | entropy(),
                                             r->spec->prompt);
      r->decoder = std::make_unique<StreamingDecoder>(tokenizer_);
      r->stop = std::make_unique<StopMatcher>(r->spec->stop);
      r->out.prompt_tokens = static_cast<int64_t>(r->tokens.size());
      running.push_back(std::move(r));
    }
    // Decodes first (one token each), then prefill chunks within the budget.
    std::vector<SequenceChunk> chunks;
    std::vector<Running*> owners;
    int64_t budget = config_.max_batch_tokens;
    for (int pass = 0; pass < 2; ++pass) {
      for (auto& r : running) {
        const int64_t left = static_cast<int64_t>(r->tokens.size()) - r->computed;
        const bool decoding = left == 1 && r->computed >= static_cast<int64_t>(r->spec->prompt.size());
        if ((pass == 0) != decoding || budget <= 0) continue;
        const int64_t n = std::min(left, budget);
        budget -= n;
        if (!reserve_tokens(r->table, r->computed + n - r->table.num_tokens, bs, blocks)) {
          return internal_error("KV cache sized for the batch ran out of blocks");
        }
        SequenceChunk ch;
        ch.tokens = std::span<const int32_t>(r->tokens).subspan(static_cast<size_t>(r->computed), static_cast<size_t>(n));
        ch.start_pos = r->computed;
        ch.block_table = r->table.blocks;
        ch.logits = r->computed + n == static_cast<int64_t>(r->tokens.size()) ? LogitsWanted::kLast : LogitsWanted::kNone;
        chunks.push_back(ch);
        owners.push_back(r.get());
      }
    }
    Stopwatch step;
    LLMS_RETURN_IF_ERROR(model_.forward(chunks, kv, state, pool_, fwd));
    if (st.steps == 0) st.first_step_s = step.elapsed_s();
    ++st.steps;
    for (size_t c = 0; c < chunks.size(); ++c) {
      Running& r = *owners[c];
      r.computed += static_cast<int64_t>(chunks[c].tokens.size());
      if (chunks[c].logits == LogitsWanted::kNone) continue;
      const int32_t tok = r.sampler->sample(fwd.last_of(c, chunks[c]), model_.config().n_vocab);
      r.sampler->accept(tok);
      r.out.tokens.push_back(tok);
      r.tokens.push_back(tok);
      if (!r.spec->ignore_eos && tokenizer_.is_end_of_generation(tok)) {
        finish(r, FinishReason::kStop);
        continue;
      }
      emit(r, r.stop->push(r.decoder->push(tok)));
      if (r.stop->stopped()) {
        finish(r, FinishReason::kStop);
      } else if (static_cast<int>(r.out.tokens.size()) >= r.spec->max_tokens ||
                 static_cast<int64_t>(r.tokens.size()) >= n_ctx) {
        finish(r, FinishReason::kLength);
      }
    }
    for (auto& r : running) {
      if (!r->done) continue;
      release_table(r->table, blocks);
      st.prompt_tokens += r->out.prompt_tokens;
      st.generated_tokens += static_cast<int64_t>(r->out.tokens.size());
      results[r->index] = std::move(r->out);
    }
    std::erase_if(running, [](const auto& r) { return r->done; });
  }
  st.total_s = total.elapsed_s();
  if (stats) *stats = st;
  return results;
}

}  // namespace llms
