#include "kv/kv_layout.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "base/random.h"
#include "quant/row_convert.h"

namespace llms {
namespace {

// The two block layouts, checked at the addresses KvLayerView documents: float types per
// head (keys [head][dim][row], values [head][row][dim]), quantized types per row.
TEST(KvStoreTest, BlocksFollowTheDocumentedLayouts) {
  constexpr int kKv = 2, kHd = 32, kBlock = 8;
  for (DType type : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0}) {
    KvLayerView view = KvLayerView::make(nullptr, nullptr, type, type, kBlock, kKv, kHd);
    const bool tiled = type == DType::kF32 || type == DType::kF16 || type == DType::kBF16;
    EXPECT_EQ(view.k_tiled, tiled) << dtype_name(type);
    EXPECT_EQ(view.v_tiled, tiled) << dtype_name(type);
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
      quantize_row(type, kr.data(), want_k.data(), n);
      quantize_row(type, vr.data(), want_v.data(), n);
      if (tiled) {
        const int64_t es = dtype_row_bytes(type, 1);
        for (int h = 0; h < kKv; ++h) {
          for (int d = 0; d < kHd; ++d) {
            const int64_t e = h * kHd + d;
            const uint8_t* key = view.k + block * view.k_block_bytes() + ((h * kHd + d) * kBlock + row) * es;
            const uint8_t* value = view.v + block * view.v_block_bytes() + ((h * kBlock + row) * kHd + d) * es;
            ASSERT_EQ(std::memcmp(key, want_k.data() + e * es, es), 0) << dtype_name(type) << " key " << e;
            ASSERT_EQ(std::memcmp(value, want_v.data() + e * es, es), 0) << dtype_name(type) << " value " << e;
          }
        }
      } else {
        EXPECT_EQ(std::memcmp(view.k + (block * kBlock + row) * view.k_row_bytes(), want_k.data(), want_k.size()), 0);
        EXPECT_EQ(std::memcmp(view.v + (block * kBlock + row) * view.v_row_bytes(), want_v.data(), want_v.size()), 0);
      }
      // Reading back gives the stored type's rounding of the row.
      std::vector<float> rounded(kr.size());
      dequantize_row(type, want_k.data(), rounded.data(), n);
      kv_load_row(view, true, block, row, got.data());
      EXPECT_EQ(got, rounded) << dtype_name(type);
      dequantize_row(type, want_v.data(), rounded.data(), n);
      kv_load_row(view, false, block, row, got.data());
      EXPECT_EQ(got, rounded) << dtype_name(type);
    }
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
