// The model quantizer behind `llmserve quantize`: rewrites a GGUF file's weight
// matrices in a smaller type, deciding per tensor with a sensitive-layer policy:
//   * vectors (norms, biases) stay F32;
//   * --keep TYPE:PATTERN rules pin matching tensors (first rule that matches wins);
//   * by default the output head and the token embedding stay at higher precision;
//   * policy "depth": each tensor's measured error (relative RMS) must stay under a
//     tolerance that grows with depth (base x layer / num_layers, layers counted from
//     1; base for tensors outside the layers), else it is promoted one type up until
//     it does;
//   * a tensor whose rows are not whole blocks of its type takes the nearest type (in
//     bits per weight) that fits, never failing the run;
//   * a plan (from the planner, eval/quant_planner.h) names the type of each tensor it
//     lists, before all the rules above;
//   * with an importance table (`llmserve imatrix`), every encoder that searches its
//     scales minimises the importance-weighted error (quantize_row_weighted);
//   * with a LoRA adapter (--lora), each matrix it adapts is merged (W + s B A, in
//     F32) before any of the above sees it.
// Every decision and its reason is reported and recorded in the output file's metadata
// (llmserve.quantize.*).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "model/model.h"
#include "tensor/dtype.h"
#include "tools/importance_file.h"
#include "tools/lora_merge.h"

namespace llms {

struct KeepRule {
  DType type = DType::kF16;
  std::vector<std::string> patterns;  // substrings of tensor names
};

// Parses "f16:attn_k,attn_v".
Result<KeepRule> parse_keep_rule(const std::string& text);

enum class QuantPolicy { kDefault, kDepth };

struct QuantizeOptions {
  DType type = DType::kQ8_0;
  std::vector<KeepRule> keep;
  bool protect_embeddings = true;  // output head and token embedding at higher precision
  QuantPolicy policy = QuantPolicy::kDefault;
  double tolerance = 0.05;         // base relative RMS error for the depth policy
  int threads = 0;
  const ImportanceTable* importance = nullptr;  // not owned; null: unweighted
  std::map<std::string, DType> plan;            // tensor name -> type, first of all rules
  std::vector<std::pair<std::string, std::string>> metadata;  // extra string keys to record
  // A Hugging Face directory's vocabulary from this GGUF file instead of its tokenizer
  // files (tools/model_vocabulary.h); ignored for a GGUF source.
  std::string vocab_from;
  // A LoRA adapter merged into the weights before they are quantized (not owned; null:
  // none): each matrix it adapts is written as W + s B A (tools/lora_merge.h).
  const LoraMerge* lora = nullptr;
};

struct TensorDecision {
  std::string name;
  DType from = DType::kF32;
  DType to = DType::kF32;
  std::string reason;       // empty when the tensor simply took the requested type
  double relative_rms = 0;  // of the chosen type against the source
  // With importance: sum imp * (w - q)^2 / sum imp * w^2 over the tensor, the expected
  // relative squared error of the product's output; -1 without.
  double weighted_error = -1;
  uint64_t bytes = 0;       // in the output
};

struct QuantizeReport {
  std::vector<TensorDecision> tensors;
  uint64_t bytes_in = 0;
  uint64_t bytes_out = 0;
};

// The types `quantize` can write.
bool quantize_target_supported(DType type);

// True when rows of `cols` values are whole blocks of `type`.
bool type_fits_rows(DType type, int64_t cols);
// A mixture of experts' router (ffn_gate_inp): small, and it decides which experts
// run, so quantize keeps it F32 as llama.cpp's quantizer does.
bool is_expert_router(const std::string& name);

Result<QuantizeReport> quantize_model(const std::string& in_path, const std::string& out_path,
                                      const QuantizeOptions& options);

// The model at `path` quantized to `type` (the default policy) and loaded: a
// precision variant. The quantized file goes to the temporary folder and is removed
// once mapped. INVALID_ARGUMENT for a type quantize cannot write.
Result<std::unique_ptr<Model>> quantized_model(const std::string& path, DType type, int threads);

}  // namespace llms
