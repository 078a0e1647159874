// BatchGenerator: runs a list of prompts to completion through the batched forward
// pass, at most `parallel` at a time, round-robin: every step carries one decode token
// of each running sequence plus prefill chunks within a token budget. It is the
// driver of `llmserve generate`; the server's engine (scheduler.h) adds priorities,
// deadlines, cancellation and admission on top of the same pieces.
//
// Thread-safety: one run() at a time; callbacks are called on the calling thread.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "engine/finish_reason.h"
#include "engine/sampler.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace llms {

struct GenerationSpec {
  std::vector<int32_t> prompt;  // token ids, BOS included when wanted
  int max_tokens = 128;
  SamplingParams sampling;
  std::vector<std::string> stop;
  bool ignore_eos = false;
};

struct GenerationOutput {
  std::string text;
  std::vector<int32_t> tokens;  // generated ids
  FinishReason finish = FinishReason::kLength;
  int64_t prompt_tokens = 0;
};

struct GeneratorConfig {
  int parallel = 1;             // sequences running at once
  int max_batch_tokens = 512;   // tokens per forward pass (decode tokens + prefill chunks)
  int block_size = 16;
  DType k_type = DType::kF32;
  DType v_type = DType::kF32;
  int context_length = 0;       // 0 = the model's training context

  Status validate() const;
};

struct GeneratorStats {
  int64_t prompt_tokens = 0;
  int64_t generated_tokens = 0;
  int64_t steps = 0;
  double first_step_s = 0;  // the first forward pass (prefill, for a single prompt)
  double total_s = 0;
  int32_t kv_blocks_total = 0;
};

class BatchGenerator {
 public:
  using TextCallback = std::function<void(size_t index, std::string_view text)>;

  BatchGenerator(const Model& model, const Tokenizer& tokenizer, ThreadPool& pool, GeneratorConfig config);

  // Runs every spec; on_text receives each piece of text as it is produced (stop
  // strings excluded). Errors: a prompt longer than the context, a KV cache too small.
  Result<std::vector<GenerationOutput>> run(std::span<const GenerationSpec> specs, const TextCallback& on_text,
                                            GeneratorStats* stats);

 private:
  const Model& model_;
  const Tokenizer& tokenizer_;
  ThreadPool& pool_;
  GeneratorConfig config_;
};

}  // namespace llms
