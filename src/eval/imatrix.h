// `llmserve imatrix`: the importance of every linear layer's input channels over a
// calibration text — the sum of the squared activations each weight column
// multiplies, and the tokens summed — for importance-weighted quantization
// (tools/importance_file.h), the output head included. The text runs in windows of `ctx` tokens, each from an
// empty cache, as `perplexity` runs it. The token embedding is a lookup, not a
// product, and has no entry.
#pragma once

#include <cstdint>
#include <span>

#include "base/status.h"
#include "base/thread_pool.h"
#include "model/model.h"
#include "tools/importance_file.h"

namespace llms {

struct ImatrixOptions {
  int ctx = 128;
  int max_windows = 0;  // 0: the whole text
};

Result<ImportanceTable> collect_importance(const Model& model, std::span<const int32_t> tokens,
                                           const ImatrixOptions& options, ThreadPool& pool);

}  // namespace llms
