// The block layouts of GGUF's quantized tensor types, bit for bit as files written by
// other tools hold them (ggml's block_* structs). Multi-byte fields are little-endian;
// `uint16_t d` fields hold IEEE binary16 bits (quant/half.h).
//
// Each comment gives the decoding rule for element i of the block (i counts from 0).
// Thread-safety: plain data.
#pragma once

#include <cstdint>

namespace llms {

inline constexpr int kQK = 32;     // elements per block of the simple formats
inline constexpr int kQK_K = 256;  // elements per super-block of the k-quants

// x[i] = d * (q[i] - 8); qs[j] holds element j in its low nibble, j + 16 in its high.
struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[kQK / 2];
};

// x[i] = d * q[i] + m; nibbles as BlockQ4_0.
struct BlockQ4_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qs[kQK / 2];
};

// x[i] = d * (q[i] - 16), q 5 bits: low 4 bits as BlockQ4_0, bit 4 of element i is
// bit i of the little-endian 32-bit word qh.
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};

// x[i] = d * q[i] + m, q as BlockQ5_0.
struct BlockQ5_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};

// x[i] = d * qs[i].
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[kQK];
};

// x[i] = d * qs[i]; s = d * sum(qs) (used by dot products with Q4_1/Q5_1).
struct BlockQ8_1 {
  uint16_t d;
  uint16_t s;
  int8_t qs[kQK];
};

// 16 sub-blocks of 16. scales[j]: low nibble scale, high nibble min of sub-block j.
// Element i = 128h + 32k + l (h < 2, k < 4, l < 32): q = (qs[32h + l] >> 2k) & 3,
// j = i / 16, x = d * (scales[j] & 15) * q - dmin * (scales[j] >> 4).
struct BlockQ2_K {
  uint8_t scales[kQK_K / 16];
  uint8_t qs[kQK_K / 4];
  uint16_t d;
  uint16_t dmin;
};

// 16 sub-blocks of 16 with 6-bit scales s_j (stored minus 32, packing below).
// Element i = 128h + 32k + l: low bits (qs[32h + l] >> 2k) & 3, high bit
// hmask[l] bit (4h + k); q = low - (high ? 0 : 4); x = d * (s_j - 32) * q, j = i / 16.
// s_j: j < 4: scales[j] & 15 | (scales[8 + j] & 3) << 4;
//      j < 8: scales[j] & 15 | ((scales[j + 4] >> 2) & 3) << 4;
//      j < 12: scales[j - 8] >> 4 | ((scales[j] >> 4) & 3) << 4;
//      else: scales[j - 8] >> 4 | ((scales[j - 4] >> 6) & 3) << 4.
struct BlockQ3_K {
  uint8_t hmask[kQK_K / 8];
  uint8_t qs[kQK_K / 4];
  uint8_t scales[12];
  uint16_t d;
};

// 8 sub-blocks of 32 with 6-bit scale sc_j and min m_j (see q4k_scale_min()).
// Element i = 64c + 32u + l (c < 4, u < 2, l < 32): q = qs[32c + l] low nibble when
// u = 0, high nibble when u = 1; j = 2c + u; x = d * sc_j * q - dmin * m_j.
struct BlockQ4_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qs[kQK_K / 2];
};

// As BlockQ4_K with a fifth bit: element 64c + 32u + l adds 16 when qh[l] has bit
// (2c + u) set.
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qh[kQK_K / 8];
  uint8_t qs[kQK_K / 2];
};

// 16 sub-blocks of 16 with int8 scales. Element i = 128h + 32k + l (h < 2, k < 4,
// l < 32): low 4 bits from ql[64h + 32(k & 1) + l] (low nibble for k < 2, high for
// k >= 2), high 2 bits (qh[32h + l] >> 2k) & 3; x = d * scales[i / 16] * (q - 32).
struct BlockQ6_K {
  uint8_t ql[kQK_K / 2];
  uint8_t qh[kQK_K / 4];
  int8_t scales[kQK_K / 16];
  uint16_t d;
};

// The 16 levels of the non-linear 4-bit formats (IQ4_NL, IQ4_XS), in increasing
// order: a code c decodes to kIq4Values[c] times the scale.
inline constexpr int8_t kIq4Values[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                          1,    13,   25,  38,  53,  69,  89,  113};

// x[i] = d * kIq4Values[q[i]]; nibbles as BlockQ4_0.
struct BlockIQ4_NL {
  uint16_t d;
  uint8_t qs[kQK / 2];
};

// 8 sub-blocks of 32 with 6-bit scales ls_j (stored plus 32): the low 4 bits of ls_j
// are nibble j of the little-endian 32-bit word scales_l (low nibble of byte j / 2
// for even j), the top 2 bits are bits 2j, 2j + 1 of scales_h. Element i = 32j + l:
// code q = qs[16j + l] low nibble for l < 16, qs[16j + l - 16] high nibble otherwise;
// x = d * (ls_j - 32) * kIq4Values[q].
struct BlockIQ4_XS {
  uint16_t d;
  uint16_t scales_h;
  uint8_t scales_l[kQK_K / 64];
  uint8_t qs[kQK_K / 2];
};

// Scale ls_j - 32 of sub-block j (< 8) of an IQ4_XS super-block.
inline int iq4xs_scale(const BlockIQ4_XS& b, int j) {
  const int low = (b.scales_l[j / 2] >> (4 * (j % 2))) & 0xF;
  const int high = (b.scales_h >> (2 * j)) & 3;
  return (low | (high << 4)) - 32;
}

// The 12 bytes of the 16 six-bit Q3_K scales v_j (each < 64, i.e. s_j + 32); inverse
// of the rule in BlockQ3_K's comment.
inline void q3k_pack_scales(const uint8_t* v, uint8_t* scales) {
  for (int i = 0; i < 12; ++i) scales[i] = 0;
  for (int j = 0; j < 16; ++j) {
    const int byte = j % 8, nibble_shift = j < 8 ? 0 : 4;
    scales[byte] = static_cast<uint8_t>(scales[byte] | ((v[j] & 0xF) << nibble_shift));
    scales[8 + j % 4] = static_cast<uint8_t>(scales[8 + j % 4] | ((v[j] >> 4) << (2 * (j / 4))));
  }
}

// Activation format of the k-quant dot products: x[i] = d * qs[i] (d is a float),
// bsums[j] = sum of qs[16j .. 16j + 15].
struct BlockQ8_K {
  float d;
  int8_t qs[kQK_K];
  int16_t bsums[kQK_K / 16];
};

static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20 && sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24 && sizeof(BlockQ8_0) == 34 && sizeof(BlockQ8_1) == 36);
static_assert(sizeof(BlockQ2_K) == 84 && sizeof(BlockQ3_K) == 110 && sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210 && sizeof(BlockQ8_K) == 292);
static_assert(sizeof(BlockIQ4_NL) == 18 && sizeof(BlockIQ4_XS) == 136);

// The 6-bit scale and min of sub-block j (< 8) of a Q4_K/Q5_K super-block: bytes 0-3
// hold sc_0..3 in their low 6 bits, bytes 4-7 m_0..3; bytes 8-11 hold the low 4 bits of
// sc_4..7 (low nibble) and m_4..7 (high nibble), whose top 2 bits are the top 2 bits of
// bytes 0-3 (scales) and 4-7 (mins).
inline void q4k_scale_min(const uint8_t* scales, int j, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = scales[j] & 63;
    *m = scales[j + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((scales[j + 4] & 0xF) | ((scales[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((scales[j + 4] >> 4) | ((scales[j] >> 6) << 4));
  }
}

// Inverse of q4k_scale_min() for 8 scales and mins, each < 64.
inline void q4k_pack_scales(const uint8_t* sc, const uint8_t* m, uint8_t* scales) {
  for (int j = 0; j < 4; ++j) {
    scales[j] = static_cast<uint8_t>((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
    scales[j + 4] = static_cast<uint8_t>((m[j] & 63) | ((m[j + 4] >> 4) << 6));
    scales[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0xF) | ((m[j + 4] & 0xF) << 4));
  }
}

}  // namespace llms
