// Element-wise and row operations of the forward pass, dispatched to the active SIMD
// target (simd_target.h). Each has a scalar reference (namespace ref) that tests
// compare every target with: rope and add_inplace match it bit for bit; the others
// differ by the order of their sums and by exp (within 2 ulp), see ops_test.cc for
// the bounds. All functions are pure over their arguments and may run on any thread.
#pragma once

#include <cstdint>

namespace llms {

enum class RopeStyle {
  kNormal,  // rotate pairs (x[2i], x[2i+1])            (LLaMA GGUF, llama2.c)
  kNeox,    // rotate pairs (x[i], x[i + rot_dim / 2])   (GPT-NeoX, Qwen2, Phi)
};

// out = x / rms(x) * w, over n elements (out may alias x).
void rmsnorm(const float* x, const float* w, int64_t n, float eps, float* out);
// out = (x - mean) / std * w + b (b may be null).
void layernorm(const float* x, const float* w, const float* b, int64_t n, float eps, float* out);
// Rotates the first rot_dim dims of each of n_heads heads of size head_dim in place.
// inv_freq[i] = base^(-2i / rot_dim) for i < rot_dim / 2 (precomputed by the model).
void rope(float* x, int n_heads, int head_dim, int rot_dim, int64_t pos, const float* inv_freq, RopeStyle style);
// rope() in two halves, for a pass that rotates the same positions in every layer: the
// cos and sin of position `pos` (rope_table_size() floats at cs), then the rotation
// with them. rope_with(x, ..., cs) after rope_table(pos, ..., cs) is rope(x, ..., pos, ...)
// bit for bit.
int rope_table_size(int rot_dim, RopeStyle style);
void rope_table(int64_t pos, const float* inv_freq, int rot_dim, RopeStyle style, float* cs);
void rope_with(float* x, int n_heads, int head_dim, int rot_dim, const float* cs, RopeStyle style);
// In-place softmax over n elements.
void softmax(float* x, int64_t n);
// One step of an online softmax over n >= 1 scores: *m_new = max(m_old, x[0, n)),
// x[i] = exp(x[i] - *m_new) in place; returns the sum of the new x.
float softmax_step(float* x, int64_t n, float m_old, float* m_new);
// out[i] = silu(gate[i]) * up[i] (out may alias gate).
void silu_mul(const float* gate, const float* up, int64_t n, float* out);
// out[i] = gelu(x[i]) (tanh approximation, as GPT-2).
void gelu(const float* x, int64_t n, float* out);
// y[i] += x[i].
void add_inplace(float* y, const float* x, int64_t n);
// Dot product of two float vectors.
float dot_f32(const float* a, const float* b, int64_t n);

namespace ref {
void rmsnorm(const float* x, const float* w, int64_t n, float eps, float* out);
void layernorm(const float* x, const float* w, const float* b, int64_t n, float eps, float* out);
void rope(float* x, int n_heads, int head_dim, int rot_dim, int64_t pos, const float* inv_freq, RopeStyle style);
void softmax(float* x, int64_t n);
float softmax_step(float* x, int64_t n, float m_old, float* m_new);
void silu_mul(const float* gate, const float* up, int64_t n, float* out);
void gelu(const float* x, int64_t n, float* out);
void add_inplace(float* y, const float* x, int64_t n);
float dot_f32(const float* a, const float* b, int64_t n);
}  // namespace ref

}  // namespace llms
