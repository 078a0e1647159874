// Dispatch of ops.h to the active SIMD target (kernel_table.h).
#include "kernels/ops.h"

#include <cmath>
#include <vector>

#include "kernels/kernel_table.h"

namespace llms {

void rmsnorm(const float* x, const float* w, int64_t n, float eps, float* out) {
  active_kernels().rmsnorm(x, w, n, eps, out);
}

void layernorm(const float* x, const float* w, const float* b, int64_t n, float eps, float* out) {
  active_kernels().layernorm(x, w, b, n, eps, out);
}

int rope_table_size(int rot_dim, RopeStyle style) { return style == RopeStyle::kNeox ? rot_dim : 2 * rot_dim; }

void rope_table(int64_t pos, const float* inv_freq, int rot_dim, RopeStyle style, float* cs) {
  // Computed exactly as ref::rope does, so the rotation is bit-identical to it. Normal
  // style expands them per element: out = x * cos + swap_pairs(x) * (-sin, +sin).
  const int half = rot_dim / 2;
  for (int i = 0; i < half; ++i) {
    const float theta = static_cast<float>(pos) * inv_freq[i];
    const float c = std::cos(theta), s = std::sin(theta);
    if (style == RopeStyle::kNeox) {
      cs[i] = c;
      cs[half + i] = s;
    } else {
      cs[2 * i] = cs[2 * i + 1] = c;
      cs[rot_dim + 2 * i] = -s;
      cs[rot_dim + 2 * i + 1] = s;
    }
  }
}

void rope_with(float* x, int n_heads, int head_dim, int rot_dim, const float* cs, RopeStyle style) {
  active_kernels().rope(x, n_heads, head_dim, rot_dim / 2, cs, style);
}

void rope(float* x, int n_heads, int head_dim, int rot_dim, int64_t pos, const float* inv_freq, RopeStyle style) {
  // cos and sin once per call, shared by all heads.
  thread_local std::vector<float> cs;
  cs.resize(static_cast<size_t>(rope_table_size(rot_dim, style)));
  rope_table(pos, inv_freq, rot_dim, style, cs.data());
  rope_with(x, n_heads, head_dim, rot_dim, cs.data(), style);
}

void softmax(float* x, int64_t n) { active_kernels().softmax(x, n); }

float softmax_step(float* x, int64_t n, float m_old, float* m_new) {
  return active_kernels().softmax_step(x, n, m_old, m_new);
}

void silu_mul(const float* gate, const float* up, int64_t n, float* out) { active_kernels().silu_mul(gate, up, n, out); }

void gelu(const float* x, int64_t n, float* out) { active_kernels().gelu(x, n, out); }

void add_inplace(float* y, const float* x, int64_t n) { active_kernels().add_inplace(y, x, n); }

float dot_f32(const float* a, const float* b, int64_t n) { return active_kernels().dot_f32(a, b, n); }

}  // namespace llms
