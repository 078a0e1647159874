// 16-lane vector operations for the AVX-512 target (F, BW, DQ, VL, VNNI). Included by
// kernels_avx512.cc inside namespace llms::avx512, after <immintrin.h> and under the
// matching target pragma; the kernel bodies (*-inl.h) are written against these names
// and see the same names for every target (simd_avx2-inl.h, simd_scalar-inl.h).
// No includes here: this file is spliced into a namespace.

#define LLMS_SIMD inline __attribute__((always_inline))

using VF = __m512;   // 16 floats
using VI = __m512i;  // 16 int32 lanes, or 64 bytes

inline constexpr SimdTarget kTarget = SimdTarget::kAvx512;

LLMS_SIMD VF zero_f() { return _mm512_setzero_ps(); }
LLMS_SIMD VF set1_f(float v) { return _mm512_set1_ps(v); }
LLMS_SIMD VF load_f(const float* p) { return _mm512_loadu_ps(p); }
LLMS_SIMD void store_f(float* p, VF v) { _mm512_storeu_ps(p, v); }
LLMS_SIMD __mmask16 lane_mask(int n) { return static_cast<__mmask16>((1u << n) - 1u); }
// Loads/stores the first n (< 16) lanes; the other lanes read as zero.
LLMS_SIMD VF load_part_f(const float* p, int n) { return _mm512_maskz_loadu_ps(lane_mask(n), p); }
LLMS_SIMD void store_part_f(float* p, VF v, int n) { _mm512_mask_storeu_ps(p, lane_mask(n), v); }
// Lanes [0, n) of a, the rest of b; lane 0 as a float.
LLMS_SIMD VF select_part_f(VF a, VF b, int n) { return _mm512_mask_blend_ps(lane_mask(n), b, a); }
LLMS_SIMD float first_f(VF v) { return _mm512_cvtss_f32(v); }
LLMS_SIMD VF add_f(VF a, VF b) { return _mm512_add_ps(a, b); }
LLMS_SIMD VF sub_f(VF a, VF b) { return _mm512_sub_ps(a, b); }
LLMS_SIMD VF mul_f(VF a, VF b) { return _mm512_mul_ps(a, b); }
LLMS_SIMD VF div_f(VF a, VF b) { return _mm512_div_ps(a, b); }
LLMS_SIMD VF max_f(VF a, VF b) { return _mm512_max_ps(a, b); }
LLMS_SIMD VF min_f(VF a, VF b) { return _mm512_min_ps(a, b); }
LLMS_SIMD VF abs_f(VF a) { return _mm512_abs_ps(a); }
// a * b + c and c - a * b, each rounded once.
LLMS_SIMD VF fma_f(VF a, VF b, VF c) { return _mm512_fmadd_ps(a, b, c); }
LLMS_SIMD VF fnma_f(VF a, VF b, VF c) { return _mm512_fnmadd_ps(a, b, c); }
// Pairwise tree: lanes (i, i + 8), then (i, i + 4), (i, i + 2), (i, i + 1).
LLMS_SIMD float reduce_add_f(VF v) {
  __m256 a = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
  __m128 b = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  b = _mm_add_ps(b, _mm_movehl_ps(b, b));
  b = _mm_add_ss(b, _mm_movehdup_ps(b));
  return _mm_cvtss_f32(b);
}
LLMS_SIMD float reduce_max_f(VF v) { return _mm512_reduce_max_ps(v); }
LLMS_SIMD VF load_f16(const uint16_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
// Halves [0, n) of p (n <= 16) as floats, the other lanes zero; reads nothing past p + n.
LLMS_SIMD VF load_part_f16(const uint16_t* p, int n) { return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(lane_mask(n), p)); }
// Each lane to the nearest F16 (ties to even; NaNs keep their sign and top mantissa
// bits, made quiet), stored as 16 halves.
LLMS_SIMD void store_f16(uint16_t* p, VF v) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
LLMS_SIMD VF round_f16(VF v) { return _mm512_cvtph_ps(_mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)); }
LLMS_SIMD VF load_bf16(const uint16_t* p) {
  const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
}
// Swaps lanes 2i and 2i + 1.
LLMS_SIMD VF swap_pairs_f(VF v) { return _mm512_permute_ps(v, 0xB1); }

LLMS_SIMD VI zero_i() { return _mm512_setzero_si512(); }
LLMS_SIMD VI set1_i32(int32_t v) { return _mm512_set1_epi32(v); }
LLMS_SIMD VI load_i(const void* p) { return _mm512_loadu_si512(p); }
LLMS_SIMD void store_i(void* p, VI v) { _mm512_storeu_si512(p, v); }
LLMS_SIMD VI bcast_i32(const void* p) {
  int32_t v;
  __builtin_memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}
// The same 16-byte pattern in every 128-bit lane.
LLMS_SIMD VI bytes_pattern(const int8_t* pattern16) {
  return _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(pattern16)));
}
LLMS_SIMD VI and_i(VI a, VI b) { return _mm512_and_si512(a, b); }
LLMS_SIMD VI or_i(VI a, VI b) { return _mm512_or_si512(a, b); }
// (a & m) | b in one instruction.
LLMS_SIMD VI and_or(VI a, VI m, VI b) { return _mm512_ternarylogic_epi32(a, m, b, 0xEA); }
LLMS_SIMD VI add_i32(VI a, VI b) { return _mm512_add_epi32(a, b); }
LLMS_SIMD VI mullo_i32(VI a, VI b) { return _mm512_mullo_epi32(a, b); }
template <int N> LLMS_SIMD VI srli_i32(VI a) { return _mm512_srli_epi32(a, N); }
template <int N> LLMS_SIMD VI slli_i32(VI a) { return _mm512_slli_epi32(a, N); }
template <int N> LLMS_SIMD VI srai_i32(VI a) { return _mm512_srai_epi32(a, N); }
// pshufb within each 16-byte lane (index bit 7 set: zero).
LLMS_SIMD VI shuffle_bytes(VI v, VI idx) { return _mm512_shuffle_epi8(v, idx); }
// 16 int8 -> 16 int32.
LLMS_SIMD VI load_s8_to_i32(const int8_t* p) {
  return _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
// 16 uint16 -> 16 int32.
LLMS_SIMD VI load_u16_to_i32(const uint16_t* p) {
  return _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
// acc[i] += sum over the 4 bytes of lane i of u[.] * s[.], u unsigned, s signed.
// Exact for u < 128 on every target, and for every u where kHighNibbleInPlace.
LLMS_SIMD VI dot_u8s8(VI acc, VI u, VI s) { return _mm512_dpbusd_epi32(acc, u, s); }
// dot_u8s8 with the 4 bytes at `s` in every lane, as the instruction's {1to16}
// memory operand: GCC broadcasts into a register first, an extra operation per dot
// product that cost the Q6_K GEMM 8-10% of its rate.
LLMS_SIMD VI dot_u8s8_bcast(VI acc, VI u, const void* s) {
  asm("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(u), "m"(*static_cast<const int32_t*>(s)));
  return acc;
}
// As dot_u8s8 for Q8_0 weights stored as q + 128: adds sum (q + 128) * s, so the
// caller's accumulator starts at -128 * sum(s) (KernelTable::q8_0_bias = 128).
LLMS_SIMD VI dot_q8(VI acc, VI u, VI s) { return _mm512_dpbusd_epi32(acc, u, s); }
LLMS_SIMD VI dot_q8_bcast(VI acc, VI u, const void* s) { return dot_u8s8_bcast(acc, u, s); }
// acc[i] += a.lo16 * b.lo16 + a.hi16 * b.hi16 (signed).
LLMS_SIMD VI dot_i16(VI acc, VI a, VI b) { return _mm512_dpwssd_epi32(acc, a, b); }
LLMS_SIMD VF cvt_i2f(VI v) { return _mm512_cvtepi32_ps(v); }
// Round to nearest, ties to even (the default rounding mode).
LLMS_SIMD VI cvt_round_f2i(VF v) { return _mm512_cvtps_epi32(v); }
LLMS_SIMD VF cast_i2f(VI v) { return _mm512_castsi512_ps(v); }
LLMS_SIMD int32_t reduce_add_i32(VI v) { return _mm512_reduce_add_epi32(v); }
// Stores the 16 int32 lanes (each within int8 range) as 16 bytes.
LLMS_SIMD void store_i8(int8_t* p, VI v) { _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm512_cvtepi32_epi8(v)); }

// Matmul tile shapes: panels per tile and tokens per tile, for GEMV (n = 1) and GEMM.
// Query rows attention_rows() carries through a block together.
inline constexpr int kAttentionRows = 4;
inline constexpr int kGemvPanels = 8;  // a power of two
inline constexpr int kFloatGemmPanels = 2, kFloatGemmTokens = 12;
inline constexpr int kQ8GemmPanels = 2, kQ8GemmTokens = 6;
inline constexpr int kKGemmTokens = 8;
inline constexpr int64_t kQ8GemmChunk = 32, kKGemmChunk = 8, kFloatGemmChunk = 2048;
inline constexpr int kPrefetchLocality = 1;
inline constexpr int kQ8_0Bias = 128;
inline constexpr bool kHighNibbleInPlace = true;  // dot_u8s8 exact for any u
