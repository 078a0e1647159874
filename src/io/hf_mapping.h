// The parts of io/hf_model.h: config.json to GGUF metadata (hf_config.cc) and the
// directory's tensors to GGUF tensors (hf_tensors.cc). Internal to io (the writer of
// Hugging Face directories, hf_export.cc, uses the same names in reverse).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "io/gguf_file.h"
#include "io/hf_checkpoint.h"

namespace llms {

using GgufMetadata = std::vector<std::pair<std::string, gguf::Value>>;

// What config.json says about the tensors.
struct HfPlan {
  std::string hf_arch;  // "LlamaForCausalLM"
  std::string arch;     // GGUF's "llama"
  int n_layer = 0, n_head = 0, n_head_kv = 0, n_expert = 0;
  bool permute_qk = false;    // the LLaMA family: Q/K rows to llama.cpp's rotary order
  bool conv1d = false;        // GPT-2: matrices stored [in, out]
  bool tied = false;          // tie_word_embeddings
  float norm_offset = 0.0f;   // Gemma: norms stored as w - 1
  std::vector<float> rope_freqs;             // Llama-3.1's divisors
  std::vector<float> rope_long, rope_short;  // Phi-3's LongRoPE factors
};

// Appends the GGUF metadata of `config` (a config.json) to `md`; `name` becomes
// general.name. Errors name the field.
Result<HfPlan> hf_config_to_gguf(const nlohmann::json& config, const std::string& name, GgufMetadata& md);

// The plan a directory written from `model` (a GGUF file) would be read with, and its
// config.json into `config` (hf_export.cc); UNIMPLEMENTED for what a directory cannot say.
Result<HfPlan> hf_plan_of(const GgufFile& model, nlohmann::json& config);

// The GGUF tensors of `ckpt` under `plan`, and the source that computes the derived
// ones; the source keeps `ckpt` (moved in).
struct HfTensors {
  std::vector<GgufTensorInfo> tensors;
  std::unique_ptr<GgufTensorSource> source;
};
Result<HfTensors> hf_tensors_to_gguf(HfCheckpoint ckpt, const HfPlan& plan);

// Directory name <-> GGUF name pairs of one architecture, one to one: the top-level
// tensors, a layer's (after "model.layers.L." / "h.L.", before "blk.L."), and an
// expert's (after "<prefix>E.", one of the stacked tensors).
using HfNameTable = std::vector<std::pair<std::string, std::string>>;
const HfNameTable& hf_top_names(const HfPlan& plan);
const HfNameTable& hf_layer_names(const HfPlan& plan);
const HfNameTable& hf_expert_names(const HfPlan& plan);
std::string hf_layer_prefix(const HfPlan& plan);
std::string hf_expert_prefix(const HfPlan& plan);
// The pair's other name (reverse: from the GGUF name), empty if none.
std::string_view find_name(const HfNameTable& table, std::string_view key, bool reverse);

// llama.cpp's row order for RoPE on adjacent pairs: within each of n_head heads, row
// (i, s) of [2, head_dim / 2] moves to (s, i) of [head_dim / 2, 2]. `inverse` undoes it.
void permute_rotary_rows(const uint8_t* src, uint8_t* dst, int64_t rows, int64_t row_bytes, int n_head, bool inverse);
// The same as an order: the Hugging Face row that llama.cpp's row g is (g -> hf).
std::vector<int64_t> rotary_row_order(int64_t rows, int n_head);
// [rows, cols] of `elem` bytes each into [cols, rows].
void transpose_matrix(const uint8_t* src, uint8_t* dst, int64_t rows, int64_t cols, int64_t elem);

}  // namespace llms
