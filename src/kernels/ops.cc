// Dispatch of ops.h. Until SIMD versions land, every op is its scalar reference.
#include "kernels/ops.h"

namespace llms {

void rmsnorm(const float* x, const float* w, int64_t n, float eps, float* out) { ref::rmsnorm(x, w, n, eps, out); }
void layernorm(const float* x, const float* w, const float* b, int64_t n, float eps, float* out) {
  ref::layernorm(x, w, b, n, eps, out);
}
void rope(float* x, int n_heads, int head_dim, int rot_dim, int64_t pos, const float* inv_freq, RopeStyle style) {
  ref::rope(x, n_heads, head_dim, rot_dim, pos, inv_freq, style);
}
void softmax(float* x, int64_t n) { ref::softmax(x, n); }
void silu_mul(const float* gate, const float* up, int64_t n, float* out) { ref::silu_mul(gate, up, n, out); }
void gelu(const float* x, int64_t n, float* out) { ref::gelu(x, n, out); }
void add_inplace(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}
float dot_f32(const float* a, const float* b, int64_t n) { return ref::dot_f32(a, b, n); }

}  // namespace llms
