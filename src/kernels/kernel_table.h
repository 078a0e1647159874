// The per-target entry points behind matmul.h and ops.h. Each SIMD target's
// translation unit (kernels_scalar.cc, kernels_avx2.cc, kernels_avx512.cc) fills one
// KernelTable; the front ends pick the table of the active target once per call.
// Internal to kernels/.
//
// Thread-safety: the tables are immutable; every entry is a pure function over its
// arguments.
#pragma once

#include <cstdint>

#include "kernels/lora.h"
#include "kernels/ops.h"
#include "kernels/packed_weights.h"
#include "kernels/simd_target.h"

namespace llms {

// Activations quantized for the integer kernels, each token on its own (no value
// depends on another token). Q8 rows use blocks of B = 32 values (for Q8_0, IQ4_NL,
// Q4_0, Q5_0 and Q5_1 weights), K rows blocks of B = 256 (for the k-quants and IQ4_XS). Block-major: block b of all
// n tokens is contiguous, so that a GEMM tile reads the block of its tokens from a
// few cache lines, and the rows of a batch never fall into the same cache sets.
// Per block b (nb = cols / B of them) and token t:
//   q     [nb, n, B]       int8, q = round-to-even(x * (127 / max|x|)), |q| <= 127
//   d     [nb, n]          float scale: blocks of 32 max|x| / 127 rounded to F16 (the
//                          F16 scale of GGML's Q8_0 and Q8_1 blocks); blocks of 256
//                          1 / (127 / max|x|) in F32 (GGML's Q8_K)
//   Q8:   corr [nb, n]     = -bias * sum(q over the block), bias set by the kernel
//         s    [nb, n]     = (max|x| / 127) * sum(q) rounded to F16 (Q8_1's s, for Q5_1)
//   K:    corr [nb, n, 16] = -32 * sum(q over 16 values) (Q6_K's level offset)
//         pairs [nb, n, 4] = int16 sums over blocks of 32, two per int32 (Q4_K mins)
// For n = 1 this is the token's row as it comes. Each array holds kTileSlackTokens
// tokens more than nb * n (their contents unspecified), so that a GEMM tile may read
// its slots past the last token at constant offsets, without bounds to check.
inline constexpr int64_t kTileSlackTokens = 64;
struct QuantizedActivations {
  int64_t n = 0;
  int64_t cols = 0;
  int8_t* q = nullptr;
  float* d = nullptr;
  int32_t* corr = nullptr;
  float* s = nullptr;
  int32_t* pairs = nullptr;
};

// One call computes y for panels [panel_begin, panel_end) of w and all n tokens.
// x is float [n, cols] for the float kinds, QuantizedActivations* for the others.
struct MatmulCall {
  const PackedWeights* w = nullptr;
  const void* x = nullptr;
  int64_t n = 0;
  float* y = nullptr;  // [n, w->rows]
  int64_t panel_begin = 0;
  int64_t panel_end = 0;
};

using MatmulFn = void (*)(const MatmulCall& call);
// Quantizes token row `t` of x ([n, cols]) into `out`.
using QuantizeRowFn = void (*)(const float* x, int64_t t, int bias, const QuantizedActivations& out);

// The most KV blocks one attention_rows() call takes (a span of consecutive blocks
// of one sequence, about 64 keys: the softmax's reductions and rescaling are paid per
// call, not per block).
inline constexpr int kMaxSpanBlocks = 8;

// A span of KV blocks for `rows` query rows of paged attention, all seeing keys
// [first, valid) of the span (key j of the span is key j % block of its block j / block;
// first > 0 where a sliding window starts inside the span; first < valid):
// updates each row's online-softmax state (m, l, acc). See attention_rows-inl.h for
// the operations and their order.
struct AttentionRows {
  int rows = 0;
  const float* const* q = nullptr;  // q[r]: query row r, head_dim floats
  float* m = nullptr;               // m[r], l[r]: running max and sum of row r
  float* l = nullptr;
  float* acc = nullptr;             // row r's weighted values at acc + r * head_dim
  float* scores = nullptr;          // scratch: rows x (span keys rounded up to 16) floats
  int valid = 0;                    // 1 <= valid <= blocks of the span x block
  int first = 0;                    // keys before it are outside the rows' window
  int block = 0;                    // keys in a block
  int head_dim = 0;
  float scale = 1.0f;
  float softcap = 0.0f;             // > 0: scores become softcap * tanh(score / softcap)
  // Per block g of the span: keys transposed (kt[g][d * block + j]), or the same in
  // F16 (the same form for every block of a span); value row j at v[g] + j * v_stride,
  // or F16 value rows (head_dim a multiple of 16).
  const float* kt[kMaxSpanBlocks] = {};
  const uint16_t* kt_f16[kMaxSpanBlocks] = {};
  const float* v[kMaxSpanBlocks] = {};
  const uint16_t* v_f16[kMaxSpanBlocks] = {};
  int64_t v_stride = 0;             // in floats, or halves for v_f16
};

// Tokens of one adapter that lora_tile() takes together (lora.h).
inline constexpr int kLoraTile = 4;

struct KernelTable {
  SimdTarget target;
  // The offset Q8_0 weights carry into the integer dot product (their packed values
  // are q + 128): 128 where the dot multiplies unsigned by signed bytes (VNNI and the
  // scalar emulation), 0 where the target takes signed weights directly.
  int q8_0_bias;
  // Panels a decode GEMV walks together (kGemvPanels); interleaves_panels() of it
  // says how pack_weights() lays out the quantized kinds.
  int gemv_panels;
  MatmulFn matmul[kNumPackedKinds];
  QuantizeRowFn quantize_q8_row;
  QuantizeRowFn quantize_k_row;

  void (*rmsnorm)(const float* x, const float* w, int64_t n, float eps, float* out);
  void (*layernorm)(const float* x, const float* w, const float* b, int64_t n, float eps, float* out);
  // Rotation with the cos/sin of each pair precomputed: pairs (x[2i], x[2i+1]) (normal)
  // or (x[i], x[i + half]) (NeoX) for i < half, cs = {cos[0..half), sin[0..half)}.
  void (*rope)(float* x, int n_heads, int head_dim, int half, const float* cs, RopeStyle style);
  void (*softmax)(float* x, int64_t n);
  float (*softmax_step)(float* x, int64_t n, float m_old, float* m_new);
  void (*silu_mul)(const float* gate, const float* up, int64_t n, float* out);
  void (*gelu)(const float* x, int64_t n, float* out);
  void (*add_inplace)(float* y, const float* x, int64_t n);
  float (*dot_f32)(const float* a, const float* b, int64_t n);
  // F16 rows (convert.h): f16_to_f32 of every half but NaNs, which stay NaN, and
  // f32_to_f16 of every float, NaNs included, on every target.
  void (*f16_to_f32_row)(const uint16_t* src, float* dst, int64_t n);
  void (*f32_to_f16_row)(const float* src, uint16_t* dst, int64_t n);
  void (*round_f16_row)(const float* src, float* dst, int64_t n);
  // Q8_0 decoding for the KV cache, exact on every target: q8_0_row as
  // dequantize_row_q8_0 (n a multiple of 32); q8_0_columns one KV head's keys of a
  // block stored by column (kv_layout.h), transposed as attention_rows reads them:
  // kt[d * block + r] = F16 scales[d / 32 * block + r] * values[d * block + r].
  void (*q8_0_row)(const void* src, float* dst, int64_t n);
  void (*q8_0_columns)(const uint16_t* scales, const int8_t* values, int64_t head_dim, int64_t block, float* kt);
  void (*attention_rows)(const AttentionRows& a);
  // y[tokens[t]] += f.scale * B (A x[tokens[t]]) for t < count <= kLoraTile (lora.h).
  void (*lora_tile)(const LoraFactors& f, const float* x, const int32_t* tokens, int count, float* y);
  // The Q8_0 GEMM tile's block step on blocks in the first-level cache, `rounds`
  // times; returns the int8 multiply-adds done (matmul.h, benchprobes/machine_limits.h: PeakKind::kQ8_0Tile).
  double (*q8_0_tile_probe)(int64_t rounds);
};

const KernelTable& scalar_kernels();
const KernelTable& avx2_kernels();
const KernelTable& avx512_kernels();

// The table of active_simd_target().
const KernelTable& active_kernels();

}  // namespace llms
