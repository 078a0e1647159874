// Import of llama2.c checkpoints (the "legacy" export: a 7 x int32 header followed by
// float32 weights) and their tokenizer.bin into a GGUF file with LLaMA metadata and
// the SentencePiece vocabulary, so that the rest of llmserve only ever reads GGUF.
#pragma once

#include <string>

#include "base/status.h"

namespace llms {

struct Llama2cHeader {
  int dim = 0, hidden_dim = 0, n_layers = 0, n_heads = 0, n_kv_heads = 0, vocab_size = 0, seq_len = 0;
  bool shared_classifier = true;  // a negative vocab_size in the file means a separate one
};

// Converts MODEL.bin + TOKENIZER.bin to OUT.gguf. Every size is checked against the
// files: a wrong or truncated file is an error naming the file and the mismatch.
Status convert_llama2c(const std::string& model_path, const std::string& tokenizer_path, const std::string& out_path);

}  // namespace llms
