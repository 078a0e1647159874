// Hand-built blocks decoded through dequantize_row(): every expected value below was
// worked out by hand from the published block layouts (GGUF / ggml), so a file
// written by another tool decodes to the same numbers.
#include "quant/block_formats.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "quant/quant_traits.h"
#include "quant/row_convert.h"
#include "tensor/dtype.h"

namespace llms {
namespace {

template <typename Block>
std::vector<float> decode(DType type, const Block& b) {
  std::vector<float> out(static_cast<size_t>(dtype_info(type).block_size));
  dequantize_row(type, &b, out.data(), static_cast<int64_t>(out.size()));
  return out;
}

TEST(BlockFormatsTest, TraitsAgreeWithDTypeTable) {
  for (const QuantTraits& t : all_quant_traits()) {
    EXPECT_EQ(t.block_size, dtype_info(t.type).block_size) << dtype_name(t.type);
    EXPECT_EQ(t.type_size, dtype_info(t.type).type_size) << dtype_name(t.type);
    EXPECT_NE(t.to_float, nullptr);
    EXPECT_TRUE(can_dequantize(t.type));
  }
  for (DType t : {DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0, DType::kQ4_K, DType::kQ6_K, DType::kQ5_0,
                 DType::kQ5_K, DType::kQ3_K, DType::kIQ4_NL, DType::kIQ4_XS})
    EXPECT_TRUE(can_quantize(t)) << dtype_name(t);
  EXPECT_FALSE(can_dequantize(DType::kIQ2_XXS));
  EXPECT_FALSE(can_quantize(DType::kQ2_K));
  EXPECT_EQ(quant_traits(DType::kQ4_K)->vec_dot_type, DType::kQ8_K);
  EXPECT_EQ(quant_traits(DType::kQ4_0)->vec_dot_type, DType::kQ8_0);
}

TEST(BlockFormatsTest, Q4_0) {
  BlockQ4_0 b;
  b.d = 0xC000;  // -2.0
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  const auto x = decode(DType::kQ4_0, b);
  EXPECT_EQ(x[3], 10.0f);    // -2 * (3 - 8)
  EXPECT_EQ(x[15], -14.0f);  // -2 * (15 - 8)
  EXPECT_EQ(x[19], -8.0f);   // high nibble of qs[3] = 12: -2 * (12 - 8)
  EXPECT_EQ(x[16], -14.0f);  // high nibble of qs[0] = 15
}

TEST(BlockFormatsTest, Q4_1) {
  BlockQ4_1 b;
  b.d = 0x3800;  // 0.5
  b.m = 0x3E00;  // 1.5
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | (((j + 1) & 15) << 4));
  const auto x = decode(DType::kQ4_1, b);
  EXPECT_EQ(x[5], 4.0f);    // 0.5 * 5 + 1.5
  EXPECT_EQ(x[31], 1.5f);   // high nibble of qs[15] = 0
  EXPECT_EQ(x[20], 4.0f);   // high nibble of qs[4] = 5
}

TEST(BlockFormatsTest, Q5_0AndQ5_1) {
  BlockQ5_0 b;
  b.d = 0x3C00;  // 1.0
  const uint8_t qh[4] = {0x01, 0x00, 0x01, 0x80};  // bits 0, 16, 31
  std::memcpy(b.qh, qh, 4);
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  auto x = decode(DType::kQ5_0, b);
  EXPECT_EQ(x[0], 0.0f);     // (0 | 16) - 16
  EXPECT_EQ(x[1], -15.0f);   // 1 - 16
  EXPECT_EQ(x[16], 15.0f);   // (15 | 16) - 16
  EXPECT_EQ(x[31], 0.0f);    // (0 | 16) - 16
  EXPECT_EQ(x[30], -15.0f);  // 1 - 16, bit 30 clear

  BlockQ5_1 c;
  c.d = 0x3800;  // 0.5
  c.m = 0xC400;  // -4.0
  std::memcpy(c.qh, qh, 4);
  std::memcpy(c.qs, b.qs, 16);
  x = decode(DType::kQ5_1, c);
  EXPECT_EQ(x[0], 4.0f);    // 0.5 * 16 - 4
  EXPECT_EQ(x[16], 11.5f);  // 0.5 * 31 - 4
  EXPECT_EQ(x[1], -3.5f);   // 0.5 * 1 - 4
}

TEST(BlockFormatsTest, Q8_0Q8_1Q8_K) {
  BlockQ8_0 b;
  b.d = 0x3400;  // 0.25
  for (int j = 0; j < 32; ++j) b.qs[j] = static_cast<int8_t>(j * 8 - 128);
  auto x = decode(DType::kQ8_0, b);
  EXPECT_EQ(x[0], -32.0f);
  EXPECT_EQ(x[3], -26.0f);
  EXPECT_EQ(x[31], 30.0f);

  BlockQ8_1 c;
  c.d = 0x3800;  // 0.5
  c.s = 0;
  for (int j = 0; j < 32; ++j) c.qs[j] = static_cast<int8_t>(j - 16);
  x = decode(DType::kQ8_1, c);
  EXPECT_EQ(x[0], -8.0f);
  EXPECT_EQ(x[31], 7.5f);

  BlockQ8_K k;
  k.d = 0.125f;
  for (int e = 0; e < 256; ++e) k.qs[e] = static_cast<int8_t>(e - 128);
  x = decode(DType::kQ8_K, k);
  EXPECT_EQ(x[0], -16.0f);
  EXPECT_EQ(x[255], 15.875f);
}

TEST(BlockFormatsTest, Q2_K) {
  BlockQ2_K b;
  b.d = 0x3C00;     // 1.0
  b.dmin = 0x3400;  // 0.25
  for (int j = 0; j < 16; ++j) b.scales[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  std::memset(b.qs, 0xE4, sizeof(b.qs));  // 2-bit fields 0, 1, 2, 3 from the bottom
  b.qs[5] = 0x1B;                         // fields 3, 2, 1, 0
  b.qs[32 + 7] = 0xFF;
  const auto x = decode(DType::kQ2_K, b);
  EXPECT_EQ(x[0], -3.75f);    // scale 0 * q 0 - 0.25 * 15
  EXPECT_EQ(x[40], -1.25f);   // k = 1: q 1, sub-block 2: 2 * 1 - 0.25 * 13
  EXPECT_EQ(x[37], 0.75f);    // qs[5] field 1 = 2, sub-block 2: 4 - 3.25
  EXPECT_EQ(x[100], 15.75f);  // k = 3, sub-block 6: 18 - 2.25
  EXPECT_EQ(x[135], 22.25f);  // qs[39] field 0 = 3, sub-block 8: 24 - 1.75
  EXPECT_EQ(x[231], 41.75f);  // qs[39] field 3 = 3, sub-block 14: 42 - 0.25
}

TEST(BlockFormatsTest, Q3_K) {
  BlockQ3_K b;
  b.d = 0x3800;  // 0.5
  // Six-bit scales s_j = 4j + 1 packed by hand: low nibbles of s_0..7 in bytes 0..7
  // low, of s_8..15 in bytes 0..7 high; top bits 0, 1, 2, 3 of each group of four in
  // bits 0-1, 2-3, 4-5, 6-7 of bytes 8..11.
  const uint8_t scales[12] = {0x11, 0x55, 0x99, 0xDD, 0x11, 0x55, 0x99, 0xDD, 0xE4, 0xE4, 0xE4, 0xE4};
  std::memcpy(b.scales, scales, 12);
  std::memset(b.qs, 0xE4, sizeof(b.qs));
  b.qs[32 + 3] = 0x00;
  for (int l = 0; l < 32; ++l) b.hmask[l] = l % 2 == 0 ? 0x0F : 0xF0;
  const auto x = decode(DType::kQ3_K, b);
  EXPECT_EQ(x[0], 0.0f);       // low 0, high bit set: q 0
  EXPECT_EQ(x[33], 34.5f);     // low 1, high clear: q -3; s_2 - 32 = -23; 0.5 * -23 * -3
  EXPECT_EQ(x[66], -15.0f);    // low 2, high set: q 2; s_4 - 32 = -15
  EXPECT_EQ(x[226], -12.5f);   // low 3, hmask[2] bit 7 clear: q -1; s_14 - 32 = 25
  EXPECT_EQ(x[163], 0.0f);     // qs[35] = 0, hmask[3] bit 5 set: q 0
  EXPECT_EQ(x[164], -13.5f);   // low 1, hmask[4] bit 5 clear: q -3; s_10 - 32 = 9
}

TEST(BlockFormatsTest, Q3_KScalePacking) {
  // The hand-packed bytes of the Q3_K test above: v_j = 4j + 1.
  const uint8_t want[12] = {0x11, 0x55, 0x99, 0xDD, 0x11, 0x55, 0x99, 0xDD, 0xE4, 0xE4, 0xE4, 0xE4};
  uint8_t v[16], packed[12];
  for (int j = 0; j < 16; ++j) v[j] = static_cast<uint8_t>(4 * j + 1);
  q3k_pack_scales(v, packed);
  EXPECT_EQ(std::memcmp(packed, want, 12), 0);
}

// Scales {1, 2, 63, 17, 33, 48, 5, 60} and mins {0, 7, 16, 63, 31, 32, 1, 15} packed
// by hand into the 12-byte layout.
constexpr uint8_t kSc[8] = {1, 2, 63, 17, 33, 48, 5, 60};
constexpr uint8_t kMin[8] = {0, 7, 16, 63, 31, 32, 1, 15};
constexpr uint8_t kPacked[12] = {129, 194, 63, 209, 64, 135, 16, 63, 241, 0, 21, 252};

TEST(BlockFormatsTest, Q4_KScalePacking) {
  uint8_t packed[12];
  q4k_pack_scales(kSc, kMin, packed);
  EXPECT_EQ(std::memcmp(packed, kPacked, 12), 0);
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, m;
    q4k_scale_min(kPacked, j, &sc, &m);
    EXPECT_EQ(sc, kSc[j]) << j;
    EXPECT_EQ(m, kMin[j]) << j;
  }
}

TEST(BlockFormatsTest, Q4_K) {
  BlockQ4_K b;
  b.d = 0x3C00;     // 1.0
  b.dmin = 0x3800;  // 0.5
  std::memcpy(b.scales, kPacked, 12);
  for (int i = 0; i < 128; ++i) b.qs[i] = static_cast<uint8_t>(i);
  const auto x = decode(DType::kQ4_K, b);
  EXPECT_EQ(x[0], 0.0f);
  EXPECT_EQ(x[33], -3.5f);    // qs[1] high 0, sub-block 1: 0 - 0.5 * 7
  EXPECT_EQ(x[70], 370.0f);   // qs[38] low 6, sub-block 2: 63 * 6 - 0.5 * 16
  EXPECT_EQ(x[127], 19.5f);   // qs[63] high 3, sub-block 3: 17 * 3 - 0.5 * 63
  EXPECT_EQ(x[140], 380.5f);  // qs[76] low 12, sub-block 4: 33 * 12 - 0.5 * 31
  EXPECT_EQ(x[180], 224.0f);  // qs[84] high 5, sub-block 5: 48 * 5 - 0.5 * 32
  EXPECT_EQ(x[200], 39.5f);   // qs[104] low 8, sub-block 6: 5 * 8 - 0.5 * 1
  EXPECT_EQ(x[255], 412.5f);  // qs[127] high 7, sub-block 7: 60 * 7 - 0.5 * 15
}

TEST(BlockFormatsTest, Q5_K) {
  BlockQ5_K b;
  b.d = 0x3C00;
  b.dmin = 0x3800;
  std::memcpy(b.scales, kPacked, 12);
  for (int i = 0; i < 128; ++i) b.qs[i] = static_cast<uint8_t>(i);
  for (int l = 0; l < 32; ++l) b.qh[l] = static_cast<uint8_t>(l);
  const auto x = decode(DType::kQ5_K, b);
  EXPECT_EQ(x[70], 1378.0f);  // low 6, qh[6] bit 2 set: q 22; 63 * 22 - 8
  EXPECT_EQ(x[33], -3.5f);    // low 0, qh[1] bit 1 clear
  EXPECT_EQ(x[127], 291.5f);  // low 3, qh[31] bit 3 set: q 19; 17 * 19 - 31.5
  EXPECT_EQ(x[255], 412.5f);  // low 7, qh[31] bit 7 clear
  EXPECT_EQ(x[144], 512.5f);  // low 0, qh[16] bit 4 set: q 16; 33 * 16 - 15.5
}

TEST(BlockFormatsTest, Q6_K) {
  BlockQ6_K b;
  b.d = 0x3800;  // 0.5
  for (int j = 0; j < 16; ++j) b.scales[j] = static_cast<int8_t>(j - 8);
  for (int i = 0; i < 128; ++i) b.ql[i] = static_cast<uint8_t>(i);
  for (int i = 0; i < 64; ++i) b.qh[i] = static_cast<uint8_t>(i);
  const auto x = decode(DType::kQ6_K, b);
  EXPECT_EQ(x[0], 128.0f);    // q 0 - 32, scale -8
  EXPECT_EQ(x[37], 33.0f);    // ql[37] low 5, qh[5] bits 2-3 = 1: q 21 - 32; scale -6
  EXPECT_EQ(x[70], 64.0f);    // ql[6] high 0, qh[6] bits 4-5 = 0: -32; scale -4
  EXPECT_EQ(x[100], 30.0f);   // ql[36] high 2, qh[4] bits 6-7 = 0: -30; scale -2
  EXPECT_EQ(x[127], 14.5f);   // ql[63] high 3: -29; scale -1
  EXPECT_EQ(x[160], -32.0f);  // ql[96] low 0, qh[32] bits 2-3 = 0: -32; scale 2
  EXPECT_EQ(x[200], 8.0f);    // ql[72] high 4, qh[40] bits 4-5 = 2: q 36 - 32; scale 4
  EXPECT_EQ(x[255], -87.5f);  // ql[127] high 7, qh[63] bits 6-7 = 0: -25; scale 7
}

TEST(BlockFormatsTest, IQ4_NL) {
  BlockIQ4_NL b;
  b.d = 0x3800;  // 0.5
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  const auto x = decode(DType::kIQ4_NL, b);
  EXPECT_EQ(x[0], -63.5f);   // code 0: -127
  EXPECT_EQ(x[3], -32.5f);   // code 3: -65
  EXPECT_EQ(x[8], 0.5f);     // code 8: 1
  EXPECT_EQ(x[16], 56.5f);   // high nibble of qs[0], code 15: 113
  EXPECT_EQ(x[31], -63.5f);  // high nibble of qs[15], code 0
}

TEST(BlockFormatsTest, IQ4_XS) {
  BlockIQ4_XS b;
  b.d = 0x3400;  // 0.25
  // ls_j = {0, 31, 32, 33, 63, 40, 1, 17}: low nibbles {0, 15, 0, 1, 15, 8, 1, 1} two per
  // byte, top bits {0, 1, 2, 2, 3, 2, 0, 1} two per sub-block in scales_h.
  const uint8_t low[4] = {0xF0, 0x10, 0x8F, 0x11};
  std::memcpy(b.scales_l, low, 4);
  b.scales_h = 0x4BA4;
  for (int i = 0; i < 128; ++i) b.qs[i] = static_cast<uint8_t>(i);  // sub-block j: codes l and j
  const auto x = decode(DType::kIQ4_XS, b);
  EXPECT_EQ(x[0], 1016.0f);             // 0.25 * (0 - 32) * -127
  EXPECT_EQ(x[32 + 5], 8.75f);          // 0.25 * -1 * -35
  EXPECT_EQ(x[64 + 7], 0.0f);           // scale 32 - 32
  EXPECT_EQ(x[128 + 16 + 3], -379.75f); // high nibble 4: 0.25 * 31 * -49
  EXPECT_EQ(x[160 + 15], 226.0f);       // 0.25 * 8 * 113
  EXPECT_EQ(x[192], 984.25f);           // 0.25 * -31 * -127
  EXPECT_EQ(x[224 + 31], 37.5f);        // high nibble 7: 0.25 * -15 * -10
}

}  // namespace
}  // namespace llms
