// 16-lane vector operations for the AVX2 + FMA + F16C target: each vector is a pair of
// 256-bit registers (lanes 0-7 in lo, 8-15 in hi). Same names and meaning as
// simd_avx512-inl.h; included by kernels_avx2.cc inside namespace llms::avx2.
// No includes here: this file is spliced into a namespace.

#define LLMS_SIMD inline __attribute__((always_inline))

struct VF {
  __m256 lo, hi;
};
struct VI {
  __m256i lo, hi;
};

inline constexpr SimdTarget kTarget = SimdTarget::kAvx2;

LLMS_SIMD VF zero_f() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
LLMS_SIMD VF set1_f(float v) { return {_mm256_set1_ps(v), _mm256_set1_ps(v)}; }
LLMS_SIMD VF load_f(const float* p) { return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }
LLMS_SIMD void store_f(float* p, VF v) {
  _mm256_storeu_ps(p, v.lo);
  _mm256_storeu_ps(p + 8, v.hi);
}
LLMS_SIMD __m256i lane_mask8(int n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
LLMS_SIMD VF load_part_f(const float* p, int n) {
  return {_mm256_maskload_ps(p, lane_mask8(n)), _mm256_maskload_ps(p + 8, lane_mask8(n - 8))};
}
LLMS_SIMD void store_part_f(float* p, VF v, int n) {
  _mm256_maskstore_ps(p, lane_mask8(n), v.lo);
  _mm256_maskstore_ps(p + 8, lane_mask8(n - 8), v.hi);
}
// Lanes [0, n) of a, the rest of b; lane 0 as a float.
LLMS_SIMD VF select_part_f(VF a, VF b, int n) {
  return {_mm256_blendv_ps(b.lo, a.lo, _mm256_castsi256_ps(lane_mask8(n))),
          _mm256_blendv_ps(b.hi, a.hi, _mm256_castsi256_ps(lane_mask8(n - 8)))};
}
LLMS_SIMD float first_f(VF v) { return _mm256_cvtss_f32(v.lo); }
#define LLMS_AVX2_F2(name, op) \
  LLMS_SIMD VF name(VF a, VF b) { return {op(a.lo, b.lo), op(a.hi, b.hi)}; }
LLMS_AVX2_F2(add_f, _mm256_add_ps)
LLMS_AVX2_F2(sub_f, _mm256_sub_ps)
LLMS_AVX2_F2(mul_f, _mm256_mul_ps)
LLMS_AVX2_F2(div_f, _mm256_div_ps)
LLMS_AVX2_F2(max_f, _mm256_max_ps)
LLMS_AVX2_F2(min_f, _mm256_min_ps)
#undef LLMS_AVX2_F2
LLMS_SIMD VF abs_f(VF a) {
  const __m256 m = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  return {_mm256_and_ps(a.lo, m), _mm256_and_ps(a.hi, m)};
}
LLMS_SIMD VF fma_f(VF a, VF b, VF c) { return {_mm256_fmadd_ps(a.lo, b.lo, c.lo), _mm256_fmadd_ps(a.hi, b.hi, c.hi)}; }
LLMS_SIMD VF fnma_f(VF a, VF b, VF c) { return {_mm256_fnmadd_ps(a.lo, b.lo, c.lo), _mm256_fnmadd_ps(a.hi, b.hi, c.hi)}; }
LLMS_SIMD float reduce_add_f(VF v) {
  const __m256 a = _mm256_add_ps(v.lo, v.hi);
  __m128 b = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  b = _mm_add_ps(b, _mm_movehl_ps(b, b));
  b = _mm_add_ss(b, _mm_movehdup_ps(b));
  return _mm_cvtss_f32(b);
}
LLMS_SIMD float reduce_max_f(VF v) {
  const __m256 a = _mm256_max_ps(v.lo, v.hi);
  __m128 b = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  b = _mm_max_ps(b, _mm_movehl_ps(b, b));
  b = _mm_max_ss(b, _mm_movehdup_ps(b));
  return _mm_cvtss_f32(b);
}
LLMS_SIMD VF load_f16(const uint16_t* p) {
  return {_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))),
          _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8)))};
}
// Halves [0, n) of p (n <= 16) as floats, the other lanes zero; reads nothing past p + n.
LLMS_SIMD VF load_part_f16(const uint16_t* p, int n) {
  alignas(32) uint16_t h[16] = {};
  for (int i = 0; i < n; ++i) h[i] = p[i];
  return load_f16(h);
}
// Each lane to the nearest F16 (ties to even; NaNs keep their sign and top mantissa
// bits, made quiet), stored as 16 halves.
LLMS_SIMD void store_f16(uint16_t* p, VF v) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v.lo, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p + 8), _mm256_cvtps_ph(v.hi, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
// To the nearest F16 (ties to even) and back.
LLMS_SIMD VF round_f16(VF v) {
  return {_mm256_cvtph_ps(_mm256_cvtps_ph(v.lo, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)),
          _mm256_cvtph_ps(_mm256_cvtps_ph(v.hi, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC))};
}
LLMS_SIMD VF load_bf16(const uint16_t* p) {
  const __m256i lo = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  const __m256i hi = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8)));
  return {_mm256_castsi256_ps(_mm256_slli_epi32(lo, 16)), _mm256_castsi256_ps(_mm256_slli_epi32(hi, 16))};
}
LLMS_SIMD VF swap_pairs_f(VF v) { return {_mm256_permute_ps(v.lo, 0xB1), _mm256_permute_ps(v.hi, 0xB1)}; }

LLMS_SIMD VI zero_i() { return {_mm256_setzero_si256(), _mm256_setzero_si256()}; }
LLMS_SIMD VI set1_i32(int32_t v) { return {_mm256_set1_epi32(v), _mm256_set1_epi32(v)}; }
LLMS_SIMD VI load_i(const void* p) {
  const auto* q = static_cast<const __m256i*>(p);
  return {_mm256_loadu_si256(q), _mm256_loadu_si256(q + 1)};
}
LLMS_SIMD void store_i(void* p, VI v) {
  auto* q = static_cast<__m256i*>(p);
  _mm256_storeu_si256(q, v.lo);
  _mm256_storeu_si256(q + 1, v.hi);
}
LLMS_SIMD VI bcast_i32(const void* p) {
  int32_t v;
  __builtin_memcpy(&v, p, 4);
  return set1_i32(v);
}
LLMS_SIMD VI bytes_pattern(const int8_t* pattern16) {
  const __m256i v = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(pattern16)));
  return {v, v};
}
#define LLMS_AVX2_I2(name, op) \
  LLMS_SIMD VI name(VI a, VI b) { return {op(a.lo, b.lo), op(a.hi, b.hi)}; }
LLMS_AVX2_I2(and_i, _mm256_and_si256)
LLMS_AVX2_I2(or_i, _mm256_or_si256)
LLMS_AVX2_I2(add_i32, _mm256_add_epi32)
LLMS_AVX2_I2(mullo_i32, _mm256_mullo_epi32)
LLMS_AVX2_I2(shuffle_bytes, _mm256_shuffle_epi8)
#undef LLMS_AVX2_I2
LLMS_SIMD VI and_or(VI a, VI m, VI b) { return or_i(and_i(a, m), b); }
template <int N> LLMS_SIMD VI srli_i32(VI a) { return {_mm256_srli_epi32(a.lo, N), _mm256_srli_epi32(a.hi, N)}; }
template <int N> LLMS_SIMD VI slli_i32(VI a) { return {_mm256_slli_epi32(a.lo, N), _mm256_slli_epi32(a.hi, N)}; }
template <int N> LLMS_SIMD VI srai_i32(VI a) { return {_mm256_srai_epi32(a.lo, N), _mm256_srai_epi32(a.hi, N)}; }
LLMS_SIMD VI load_s8_to_i32(const int8_t* p) {
  return {_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))),
          _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 8)))};
}
LLMS_SIMD VI load_u16_to_i32(const uint16_t* p) {
  return {_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))),
          _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8)))};
}
// maddubs saturates at int16: exact while 2 * u * |s| < 32768, true for u < 128.
LLMS_SIMD __m256i dot4(__m256i acc, __m256i u, __m256i s) {
  return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
}
LLMS_SIMD VI dot_u8s8(VI acc, VI u, VI s) { return {dot4(acc.lo, u.lo, s.lo), dot4(acc.hi, u.hi, s.hi)}; }
// dot_u8s8 with the 4 bytes at `s` in every lane.
LLMS_SIMD VI dot_u8s8_bcast(VI acc, VI u, const void* s) { return dot_u8s8(acc, u, bcast_i32(s)); }
// Q8_0 weights stored as q + 128: flip back to signed q and move q's sign onto s,
// so the products |q| * (+-s) stay within int16 (kQ8_0Bias = 0: nothing to undo).
LLMS_SIMD __m256i dot4_q8(__m256i acc, __m256i u, __m256i s) {
  const __m256i q = _mm256_xor_si256(u, _mm256_set1_epi8(static_cast<char>(0x80)));
  return dot4(acc, _mm256_sign_epi8(q, q), _mm256_sign_epi8(s, q));
}
LLMS_SIMD VI dot_q8(VI acc, VI u, VI s) { return {dot4_q8(acc.lo, u.lo, s.lo), dot4_q8(acc.hi, u.hi, s.hi)}; }
LLMS_SIMD VI dot_q8_bcast(VI acc, VI u, const void* s) { return dot_q8(acc, u, bcast_i32(s)); }
LLMS_SIMD VI dot_i16(VI acc, VI a, VI b) {
  return {_mm256_add_epi32(acc.lo, _mm256_madd_epi16(a.lo, b.lo)), _mm256_add_epi32(acc.hi, _mm256_madd_epi16(a.hi, b.hi))};
}
LLMS_SIMD VF cvt_i2f(VI v) { return {_mm256_cvtepi32_ps(v.lo), _mm256_cvtepi32_ps(v.hi)}; }
LLMS_SIMD VI cvt_round_f2i(VF v) { return {_mm256_cvtps_epi32(v.lo), _mm256_cvtps_epi32(v.hi)}; }
LLMS_SIMD VF cast_i2f(VI v) { return {_mm256_castsi256_ps(v.lo), _mm256_castsi256_ps(v.hi)}; }
LLMS_SIMD int32_t reduce_add_i32(VI v) {
  const __m256i a = _mm256_add_epi32(v.lo, v.hi);
  __m128i b = _mm_add_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
  b = _mm_add_epi32(b, _mm_shuffle_epi32(b, 0x4E));
  b = _mm_add_epi32(b, _mm_shuffle_epi32(b, 0xB1));
  return _mm_cvtsi128_si32(b);
}
LLMS_SIMD void store_i8(int8_t* p, VI v) {
  const __m256i w = _mm256_permute4x64_epi64(_mm256_packs_epi32(v.lo, v.hi), 0xD8);
  const __m128i b = _mm_packs_epi16(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), b);
}

// Query rows attention_rows() carries through a block together.
inline constexpr int kAttentionRows = 2;
inline constexpr int kGemvPanels = 4;  // a power of two
inline constexpr int kFloatGemmPanels = 1, kFloatGemmTokens = 6;
inline constexpr int kQ8GemmPanels = 1, kQ8GemmTokens = 3;
inline constexpr int kKGemmTokens = 2;
inline constexpr int64_t kQ8GemmChunk = 64, kKGemmChunk = 8, kFloatGemmChunk = 2048;
inline constexpr int kPrefetchLocality = 2;
inline constexpr int kQ8_0Bias = 0;
inline constexpr bool kHighNibbleInPlace = false;  // maddubs saturates past u = 127
