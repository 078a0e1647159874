// 16-lane vector operations emulated lane by lane in plain C++: the scalar target,
// which runs on any CPU and defines, by construction, what every lane of the SIMD
// targets computes. Same names and meaning as simd_avx512-inl.h; included by
// kernels_scalar.cc inside namespace llms::scalar.
// No includes here: this file is spliced into a namespace.

#define LLMS_SIMD inline __attribute__((always_inline))

struct VF {
  float v[16];
};
struct VI {
  int32_t v[16];
  uint8_t byte(int i) const { return static_cast<uint8_t>(static_cast<uint32_t>(v[i / 4]) >> (8 * (i % 4))); }
  void set_byte(int i, uint8_t b) {
    uint32_t w = static_cast<uint32_t>(v[i / 4]);
    w = (w & ~(0xFFu << (8 * (i % 4)))) | (static_cast<uint32_t>(b) << (8 * (i % 4)));
    v[i / 4] = static_cast<int32_t>(w);
  }
};

inline constexpr SimdTarget kTarget = SimdTarget::kScalar;

#define LLMS_LANES(expr)                \
  VF r;                                 \
  for (int i = 0; i < 16; ++i) r.v[i] = (expr); \
  return r
#define LLMS_ILANES(expr)               \
  VI r;                                 \
  for (int i = 0; i < 16; ++i) r.v[i] = (expr); \
  return r

LLMS_SIMD VF zero_f() { LLMS_LANES(0.0f); }
LLMS_SIMD VF set1_f(float x) { LLMS_LANES(x); }
LLMS_SIMD VF load_f(const float* p) { LLMS_LANES(p[i]); }
LLMS_SIMD void store_f(float* p, VF a) {
  for (int i = 0; i < 16; ++i) p[i] = a.v[i];
}
LLMS_SIMD VF load_part_f(const float* p, int n) { LLMS_LANES(i < n ? p[i] : 0.0f); }
// Lanes [0, n) of a, the rest of b; lane 0 as a float.
LLMS_SIMD VF select_part_f(VF a, VF b, int n) { LLMS_LANES(i < n ? a.v[i] : b.v[i]); }
LLMS_SIMD float first_f(VF a) { return a.v[0]; }
LLMS_SIMD void store_part_f(float* p, VF a, int n) {
  for (int i = 0; i < n; ++i) p[i] = a.v[i];
}
LLMS_SIMD VF add_f(VF a, VF b) { LLMS_LANES(a.v[i] + b.v[i]); }
LLMS_SIMD VF sub_f(VF a, VF b) { LLMS_LANES(a.v[i] - b.v[i]); }
LLMS_SIMD VF mul_f(VF a, VF b) { LLMS_LANES(a.v[i] * b.v[i]); }
LLMS_SIMD VF div_f(VF a, VF b) { LLMS_LANES(a.v[i] / b.v[i]); }
// As maxps/minps: the second operand when either is NaN or both are zero.
LLMS_SIMD VF max_f(VF a, VF b) { LLMS_LANES(a.v[i] > b.v[i] ? a.v[i] : b.v[i]); }
LLMS_SIMD VF min_f(VF a, VF b) { LLMS_LANES(a.v[i] < b.v[i] ? a.v[i] : b.v[i]); }
LLMS_SIMD VF abs_f(VF a) { LLMS_LANES(std::fabs(a.v[i])); }
LLMS_SIMD VF fma_f(VF a, VF b, VF c) { LLMS_LANES(std::fma(a.v[i], b.v[i], c.v[i])); }
LLMS_SIMD VF fnma_f(VF a, VF b, VF c) { LLMS_LANES(std::fma(-a.v[i], b.v[i], c.v[i])); }
LLMS_SIMD float reduce_add_f(VF a) {
  for (int w = 8; w >= 1; w /= 2)
    for (int i = 0; i < w; ++i) a.v[i] = a.v[i] + a.v[i + w];
  return a.v[0];
}
LLMS_SIMD float reduce_max_f(VF a) {
  float m = a.v[0];
  for (int i = 1; i < 16; ++i) m = a.v[i] > m ? a.v[i] : m;
  return m;
}
LLMS_SIMD VF load_f16(const uint16_t* p) { LLMS_LANES(f16_to_f32(p[i])); }
// Halves [0, n) of p (n <= 16) as floats, the other lanes zero; reads nothing past p + n.
LLMS_SIMD VF load_part_f16(const uint16_t* p, int n) { LLMS_LANES(i < n ? f16_to_f32(p[i]) : 0.0f); }
LLMS_SIMD VF load_bf16(const uint16_t* p) { LLMS_LANES(bf16_to_f32(p[i])); }
LLMS_SIMD void store_f16(uint16_t* p, VF a) {
  for (int i = 0; i < 16; ++i) p[i] = f32_to_f16(a.v[i]);
}
LLMS_SIMD VF round_f16(VF a) { LLMS_LANES(f16_to_f32(f32_to_f16(a.v[i]))); }
LLMS_SIMD VF swap_pairs_f(VF a) { LLMS_LANES(a.v[i ^ 1]); }

LLMS_SIMD VI zero_i() { LLMS_ILANES(0); }
LLMS_SIMD VI set1_i32(int32_t x) { LLMS_ILANES(x); }
LLMS_SIMD VI load_i(const void* p) {
  VI r;
  std::memcpy(r.v, p, 64);
  return r;
}
LLMS_SIMD void store_i(void* p, VI a) { std::memcpy(p, a.v, 64); }
LLMS_SIMD VI bcast_i32(const void* p) {
  int32_t x;
  std::memcpy(&x, p, 4);
  return set1_i32(x);
}
LLMS_SIMD VI bytes_pattern(const int8_t* pattern16) {
  VI r;
  for (int i = 0; i < 64; ++i) r.set_byte(i, static_cast<uint8_t>(pattern16[i % 16]));
  return r;
}
LLMS_SIMD VI and_i(VI a, VI b) { LLMS_ILANES(a.v[i] & b.v[i]); }
LLMS_SIMD VI or_i(VI a, VI b) { LLMS_ILANES(a.v[i] | b.v[i]); }
LLMS_SIMD VI and_or(VI a, VI m, VI b) { LLMS_ILANES((a.v[i] & m.v[i]) | b.v[i]); }
LLMS_SIMD VI add_i32(VI a, VI b) { LLMS_ILANES(static_cast<int32_t>(static_cast<uint32_t>(a.v[i]) + static_cast<uint32_t>(b.v[i]))); }
LLMS_SIMD VI mullo_i32(VI a, VI b) {
  LLMS_ILANES(static_cast<int32_t>(static_cast<uint32_t>(a.v[i]) * static_cast<uint32_t>(b.v[i])));
}
template <int N> LLMS_SIMD VI srli_i32(VI a) { LLMS_ILANES(static_cast<int32_t>(static_cast<uint32_t>(a.v[i]) >> N)); }
template <int N> LLMS_SIMD VI slli_i32(VI a) { LLMS_ILANES(static_cast<int32_t>(static_cast<uint32_t>(a.v[i]) << N)); }
template <int N> LLMS_SIMD VI srai_i32(VI a) { LLMS_ILANES(a.v[i] >> N); }
LLMS_SIMD VI shuffle_bytes(VI a, VI idx) {
  VI r;
  for (int i = 0; i < 64; ++i) {
    const uint8_t k = idx.byte(i);
    r.set_byte(i, (k & 0x80) ? 0 : a.byte((i & ~15) | (k & 15)));
  }
  return r;
}
LLMS_SIMD VI load_s8_to_i32(const int8_t* p) { LLMS_ILANES(p[i]); }
LLMS_SIMD VI load_u16_to_i32(const uint16_t* p) { LLMS_ILANES(static_cast<int32_t>(p[i])); }
LLMS_SIMD VI dot_u8s8(VI acc, VI u, VI s) {
  for (int i = 0; i < 16; ++i)
    for (int k = 0; k < 4; ++k) acc.v[i] += u.byte(4 * i + k) * static_cast<int8_t>(s.byte(4 * i + k));
  return acc;
}
// dot_u8s8 with the 4 bytes at `s` in every lane.
LLMS_SIMD VI dot_u8s8_bcast(VI acc, VI u, const void* s) { return dot_u8s8(acc, u, bcast_i32(s)); }
LLMS_SIMD VI dot_q8(VI acc, VI u, VI s) { return dot_u8s8(acc, u, s); }
LLMS_SIMD VI dot_q8_bcast(VI acc, VI u, const void* s) { return dot_q8(acc, u, bcast_i32(s)); }
LLMS_SIMD VI dot_i16(VI acc, VI a, VI b) {
  LLMS_ILANES(acc.v[i] + static_cast<int16_t>(a.v[i]) * static_cast<int16_t>(b.v[i]) +
              static_cast<int16_t>(a.v[i] >> 16) * static_cast<int16_t>(b.v[i] >> 16));
}
LLMS_SIMD VF cvt_i2f(VI a) { LLMS_LANES(static_cast<float>(a.v[i])); }
LLMS_SIMD VI cvt_round_f2i(VF a) { LLMS_ILANES(static_cast<int32_t>(std::nearbyint(a.v[i]))); }
LLMS_SIMD VF cast_i2f(VI a) {
  VF r;
  std::memcpy(r.v, a.v, 64);
  return r;
}
LLMS_SIMD int32_t reduce_add_i32(VI a) {
  int32_t s = 0;
  for (int i = 0; i < 16; ++i) s += a.v[i];
  return s;
}
LLMS_SIMD void store_i8(int8_t* p, VI a) {
  for (int i = 0; i < 16; ++i) p[i] = static_cast<int8_t>(a.v[i]);
}

#undef LLMS_LANES
#undef LLMS_ILANES

// Query rows attention_rows() carries through a block together.
inline constexpr int kAttentionRows = 4;
inline constexpr int kGemvPanels = 1;  // a power of two
inline constexpr int kFloatGemmPanels = 1, kFloatGemmTokens = 4;
inline constexpr int kQ8GemmPanels = 1, kQ8GemmTokens = 4;
inline constexpr int kKGemmTokens = 4;
inline constexpr int64_t kQ8GemmChunk = 64, kKGemmChunk = 8, kFloatGemmChunk = 2048;
inline constexpr int kPrefetchLocality = 2;
inline constexpr int kQ8_0Bias = 128;
inline constexpr bool kHighNibbleInPlace = true;
