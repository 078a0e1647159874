// LoRA adapters as people have them: llama.cpp's GGUF adapters (general.type =
// "adapter", adapter.type = "lora", adapter.lora.alpha, tensors "<base weight>.lora_a"
// of ne [n_in, rank] and ".lora_b" of ne [rank, n_out]) and PEFT directories
// (adapter_config.json with r, lora_alpha, target_modules, use_rslora;
// adapter_model.safetensors with "...<module>.lora_A.weight" [rank, in] and
// "lora_B.weight" [out, rank]). Both are read into one form named in the base's GGUF
// terms (a PEFT lora_B of q_proj/k_proj gets the rotary row order the base's Q/K rows
// have in GGUF), and written back from it (make-model's generated adapters).
//
// Validation is as strict as the model readers': the base architecture, every tensor
// name, the pairing of A and B, their ranks and types; errors name the file and the
// tensor. Whether the targets exist in the base with those shapes is the model's
// check (model/lora.h).
//
// Thread-safety: plain functions and values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "io/gguf_file.h"
#include "tensor/dtype.h"

namespace llms {

struct LoraMatrix {
  std::string target;  // the base weight's GGUF name: "blk.3.attn_q.weight"
  int64_t rank = 0, cols = 0, rows = 0;
  std::vector<float> a;  // [rank, cols]
  std::vector<float> b;  // [rows, rank], rows in the base's GGUF order
};

struct LoraFile {
  std::string path;
  std::string format;  // "gguf" or "peft"
  std::string arch;    // the base architecture it was made for (GGUF's name)
  float alpha = 0.0f;  // 0: none given (llama.cpp then scales by 1)
  bool rslora = false; // PEFT's use_rslora: alpha / sqrt(rank)
  std::vector<LoraMatrix> matrices;

  // The scale of a matrix of rank `rank`, as llama.cpp and PEFT compute it: alpha / rank
  // (rsLoRA: alpha / sqrt(rank)); 1 without an alpha.
  float scale(int64_t rank) const;
};

// Reads `path`: a GGUF adapter file, or a PEFT directory, for the base model `base`
// (its architecture; for PEFT also its name table and head counts).
Result<LoraFile> read_lora(const std::string& path, const GgufFile& base);
Result<LoraFile> read_lora_gguf(const std::string& path, const GgufFile& base);
Result<LoraFile> read_lora_peft(const std::string& dir, const GgufFile& base);

// Writes `lora` as llama.cpp's converter would, the factors in `type` (F32 or F16).
Status write_lora_gguf(const LoraFile& lora, DType type, const std::string& path);
// Writes `lora` as a PEFT directory for `base` (adapter_config.json and
// adapter_model.safetensors), the factors in `type` (F32, F16 or BF16).
Status write_lora_peft(const LoraFile& lora, const GgufFile& base, DType type, const std::string& dir);

}  // namespace llms
