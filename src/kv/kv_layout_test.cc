#include "kv/kv_layout.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "base/random.h"
#include "quant/row_convert.h"

namespace llms {
namespace {

using Layout = KvSideLayout;

// Stores three rows of `type` and checks them at the addresses KvLayerView documents
// (keys in `k_layout`, values in `v_layout`), and that reading them back gives the
// type's rounding of each row.
void check_layout(DType type, int n_kv, int hd, Layout k_layout, Layout v_layout) {
  constexpr int kBlock = 8;
  SCOPED_TRACE(std::string(dtype_name(type)) + " head_dim " + std::to_string(hd));
  KvLayerView view = make_kv_layer_view(nullptr, nullptr, type, type, kBlock, n_kv, hd);
  EXPECT_EQ(view.k_layout, k_layout);
  EXPECT_EQ(view.v_layout, v_layout);
  std::vector<std::byte> k(static_cast<size_t>(3 * view.k_block_bytes())), v(k.size());
  view.k = reinterpret_cast<uint8_t*>(k.data());
  view.v = reinterpret_cast<uint8_t*>(v.data());
  const int32_t table[] = {2, 0};
  Rng rng(11);
  const int64_t n = view.row_elems();
  std::vector<float> kr(static_cast<size_t>(n)), vr(kr.size()), got(kr.size());
  std::vector<uint8_t> want_k(static_cast<size_t>(view.k_row_bytes())), want_v(want_k.size());
  for (int64_t pos : {int64_t{0}, int64_t{5}, int64_t{kBlock + 3}}) {
    for (auto& x : kr) x = static_cast<float>(rng.normal());
    for (auto& x : vr) x = static_cast<float>(rng.normal());
    kv_store(view, table, pos, kr.data(), vr.data());
    const int32_t block = table[pos / kBlock];
    const int row = static_cast<int>(pos % kBlock);
    const uint8_t* kb = view.k + block * view.k_block_bytes();
    const uint8_t* vb = view.v + block * view.v_block_bytes();
    quantize_row_nearest(type, kr.data(), want_k.data(), n);
    quantize_row_nearest(type, vr.data(), want_v.data(), n);
    if (k_layout == Layout::kTiled) {  // keys [head][dim][row], values [head][row][dim]
      const int64_t es = dtype_row_bytes(type, 1);
      for (int h = 0; h < n_kv; ++h) {
        for (int d = 0; d < hd; ++d) {
          const int64_t e = h * hd + d;
          const uint8_t* key = kb + ((h * hd + d) * kBlock + row) * es;
          const uint8_t* value = vb + ((h * kBlock + row) * hd + d) * es;
          ASSERT_EQ(std::memcmp(key, want_k.data() + e * es, es), 0) << "key " << e;
          ASSERT_EQ(std::memcmp(value, want_v.data() + e * es, es), 0) << "value " << e;
        }
      }
    } else if (v_layout == Layout::kHeadRows) {  // [head][row][dim], each head's part encoded alone
      const int64_t hb = dtype_row_bytes(type, hd);
      std::vector<uint8_t> part(static_cast<size_t>(hb));
      for (int h = 0; h < n_kv; ++h) {
        quantize_row_nearest(type, kr.data() + h * hd, part.data(), hd);
        if (k_layout == Layout::kHeadRows) {
          EXPECT_EQ(std::memcmp(kb + (h * kBlock + row) * hb, part.data(), part.size()), 0) << "key head " << h;
        } else {  // by column: per head, F16 scales [hd / 32][block], int8 values [hd][block]
          ASSERT_EQ(k_layout, Layout::kColumns);
          const uint8_t* head = kb + h * kBlock * hb;
          const uint8_t* values = head + hd / 32 * kBlock * 2;
          for (int g = 0; g < hd / 32; ++g) {
            const uint8_t* b = part.data() + g * 34;  // Q8_0 block: F16 scale, 32 int8
            EXPECT_EQ(std::memcmp(head + (g * kBlock + row) * 2, b, 2), 0) << "scale " << g << " head " << h;
            for (int i = 0; i < 32; ++i) {
              EXPECT_EQ(values[(g * 32 + i) * kBlock + row], b[2 + i]) << "key " << g * 32 + i << " head " << h;
            }
          }
        }
        quantize_row_nearest(type, vr.data() + h * hd, part.data(), hd);
        EXPECT_EQ(std::memcmp(vb + (h * kBlock + row) * hb, part.data(), part.size()), 0) << "value head " << h;
      }
    } else {  // [row][head * dim]
      EXPECT_EQ(std::memcmp(kb + row * view.k_row_bytes(), want_k.data(), want_k.size()), 0);
      EXPECT_EQ(std::memcmp(vb + row * view.v_row_bytes(), want_v.data(), want_v.size()), 0);
    }
    // Reading back gives the stored type's rounding of the row (blocks of 32 values
    // within a head: the head-rows encoding is the whole row's).
    std::vector<float> rounded(kr.size());
    dequantize_row(type, want_k.data(), rounded.data(), n);
    kv_load_row(view, true, block, row, got.data());
    EXPECT_EQ(got, rounded);
    dequantize_row(type, want_v.data(), rounded.data(), n);
    kv_load_row(view, false, block, row, got.data());
    EXPECT_EQ(got, rounded);
  }
}

TEST(KvStoreTest, BlocksFollowTheDocumentedLayouts) {
  for (DType type : {DType::kF32, DType::kF16, DType::kBF16}) check_layout(type, 2, 32, Layout::kTiled, Layout::kTiled);
  // Blocks of 32 within a head: Q8_0 keys by column, Q8_0 values and Q4_0 by head.
  check_layout(DType::kQ8_0, 2, 64, Layout::kColumns, Layout::kHeadRows);
  check_layout(DType::kQ4_0, 2, 32, Layout::kHeadRows, Layout::kHeadRows);
  for (DType type : {DType::kQ8_0, DType::kQ4_0}) {
    check_layout(type, 4, 16, Layout::kRows, Layout::kRows);  // a block holds two heads
  }
}

TEST(KvLayoutTest, BlockSizeRangeIsCheckedWithTheKeyName) {
  EXPECT_TRUE(check_kv_block_size(kMinKvBlockSize, "b").ok());
  EXPECT_TRUE(check_kv_block_size(kMaxKvBlockSize, "b").ok());
  const Status low = check_kv_block_size(kMinKvBlockSize - 1, "kv_block_size");
  EXPECT_EQ(low.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(low.message().find("kv_block_size"), std::string::npos) << low.message();
  EXPECT_FALSE(check_kv_block_size(kMaxKvBlockSize + 1, "b").ok());
}

}  // namespace
}  // namespace llms
