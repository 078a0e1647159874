// RoPE scaling values that converters compute from a model's config and store in GGUF:
// Llama-3.1's per-frequency divisors (the rope_freqs.weight tensor) and LongRoPE's
// attention factor (Phi-3's rope.scaling.attn_factor). Shared by the Hugging Face
// reader (io/hf_model.h) and the synthetic models, so both write what llama.cpp's
// converter writes.
#pragma once

#include <vector>

namespace llms {

struct Llama3RopeScaling {
  double factor = 8.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  double original_context = 8192.0;
};

// The divisor of each of the rope_dim / 2 frequencies base^(-2i / rope_dim): 1 for
// wavelengths under original_context / high_freq_factor, `factor` over
// original_context / low_freq_factor, a smooth mix between (as llama.cpp's converter).
std::vector<float> llama3_rope_divisors(double base, int rope_dim, const Llama3RopeScaling& s);

// sqrt(1 + ln(n_ctx / n_ctx_orig) / ln(n_ctx_orig)), 1 when the context is not longer.
float longrope_attn_factor(int n_ctx, int n_ctx_orig);

}  // namespace llms
