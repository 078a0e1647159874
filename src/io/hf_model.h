// Hugging Face model directories read as GGUF: config.json becomes llama.cpp's metadata
// keys (general.architecture, <arch>.embedding_length, ...) and the safetensors
// tensors become llama.cpp's tensor names and layouts, exactly as llama.cpp's
// convert_hf_to_gguf.py writes them, so that everything that reads a GgufFile (the
// model, the quantizer, `inspect`, the GGUF writer of `convert`) reads a directory too.
//
// Architectures (config.json "architectures"): LlamaForCausalLM, MistralForCausalLM and
// MixtralForCausalLM (GGUF "llama"), Qwen2ForCausalLM, Qwen2MoeForCausalLM,
// Phi3ForCausalLM, Gemma2ForCausalLM, GPT2LMHeadModel. A config field that changes the
// math and that llmserve does not implement is an error naming it, never ignored.
//
// Layouts: the matrices and embeddings are read in place from the mapped shards (F32,
// F16, BF16) where their bytes are GGUF's already. What differs is computed when read
// (GgufFile::read(), a copy that lives as long as its reader): the LLaMA family's Q and
// K rows permuted to llama.cpp's rotary order, GPT-2's Conv1D matrices transposed,
// experts stacked into one tensor, vectors (norms, biases) as F32 with Gemma's norms
// stored as w - 1 made w, and the RoPE factors of Llama-3.1 and Phi-3 from config.json.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "io/gguf_file.h"

namespace llms {

// Opens the Hugging Face model directory `dir` (no tokenizer metadata: the tokenizer
// is read from its own files).
Result<GgufFile> open_hf_model(const std::string& dir);

// A GGUF file, or a Hugging Face model directory: the one way commands open a model.
Result<GgufFile> open_model_file(const std::string& path);

// config.json "architectures" values that open_hf_model() reads.
std::vector<std::string> hf_supported_architectures();

}  // namespace llms
