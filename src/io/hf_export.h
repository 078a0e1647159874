// Writes a GGUF model as a Hugging Face model directory: the inverse of
// io/hf_model.h (the same name tables, each layout change undone), so that a model
// made here (`make-model --format hf`) can be read back both ways and compared.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "io/gguf_file.h"

namespace llms {

struct HfExportOptions {
  // Largest shard: 0 writes one model.safetensors; else model-0000i-of-0000n.safetensors
  // with model.safetensors.index.json.
  uint64_t max_shard_bytes = 0;
};

// Writes config.json, generation_config.json and the weights of `model` (an
// architecture io/hf_model.h reads, matrices F32, F16 or BF16) into the directory
// `dir` (created if needed). Tokenizer files are not written. UNIMPLEMENTED for what
// a config.json cannot say (quantized weights, RoPE factors of no known scaling).
Status write_hf_model(const GgufFile& model, const std::string& dir, const HfExportOptions& options = {});

}  // namespace llms
