// Synthetic LoRA adapters: seeded random factors for every adaptable matrix of a base
// model (for tests against llama.cpp and for speed), written as llama.cpp's GGUF
// adapter or as a PEFT directory (io/lora_file.h). The same spec and base give the same
// adapter, so tests can regenerate it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "io/gguf_file.h"
#include "io/lora_file.h"

namespace llms {

struct SyntheticLoraSpec {
  int64_t rank = 16;
  float alpha = 32.0f;
  // GGUF names of the adapted matrices in each layer ("attn_q"); empty: every one of
  // attn_q, attn_k, attn_v, attn_output, ffn_gate, ffn_up, ffn_down the base has.
  std::vector<std::string> targets;
  float std_dev = 0.02f;  // of A's and B's values (B is not zero, unlike a fresh PEFT adapter)
  uint64_t seed = 1;
};

Result<LoraFile> make_synthetic_lora(const GgufFile& base, const SyntheticLoraSpec& spec);

}  // namespace llms
