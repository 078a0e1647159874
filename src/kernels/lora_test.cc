#include "kernels/lora.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "base/random.h"
#include "kernels/simd_target.h"
#include "quant/half.h"

namespace llms {
namespace {

// A [rank, cols] and B [rows, rank] of random values, packed as lora.h lays them out.
// With `f16`, the values are F16's (rounded to it) and f reads them as F16, while
// f32 reads the same values as F32.
struct Factors {
  std::vector<float> at, bt;
  std::vector<uint16_t> at16, bt16;
  LoraFactors f, f32;

  Factors(int64_t rank, int64_t cols, int64_t rows, float scale, uint64_t seed, bool f16 = false) {
    Rng rng(seed);
    const int64_t rs = (rank + kLoraRankAlign - 1) / kLoraRankAlign * kLoraRankAlign;
    at.assign(static_cast<size_t>(cols * rs), 0.0f);
    bt.resize(static_cast<size_t>(rank * rows));
    for (int64_t j = 0; j < rank; ++j) {
      for (int64_t c = 0; c < cols; ++c) at[static_cast<size_t>(c * rs + j)] = static_cast<float>(rng.normal());
    }
    for (auto& v : bt) v = static_cast<float>(rng.normal());
    f32 = f = {at.data(), bt.data(), rank, rs, cols, rows, scale};
    if (f16) {
      const auto round_to_f16 = [](std::vector<float>& v, std::vector<uint16_t>& h) {
        for (float& x : v) {
          h.push_back(f32_to_f16(x));
          x = f16_to_f32(h.back());
        }
      };
      round_to_f16(at, at16);
      round_to_f16(bt, bt16);
      f.at = f.bt = nullptr;
      f.at_f16 = at16.data(), f.bt_f16 = bt16.data();
    }
  }
};

std::vector<float> random_rows(int64_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = static_cast<float>(rng.normal());
  return v;
}

TEST(LoraTest, HandComputed) {
  // A = [1 2], B = [3; -1], scale 0.5, x = [1, 10]: h = 21, y += 0.5 * [63, -21].
  const float at[2 * 16] = {1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                            2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  const float bt[2] = {3, -1};
  const LoraFactors f{at, bt, 1, 16, 2, 2, 0.5f};
  const float x[2] = {1, 10};
  float y[2] = {100, 200};
  const int32_t tokens[1] = {0};
  ThreadPool pool(1);
  for (SimdTarget target : supported_simd_targets()) {
    ScopedSimdTarget scoped(target);
    y[0] = 100, y[1] = 200;
    const LoraTask task{&f, tokens, y};
    lora_add({&task, 1}, x, pool);
    EXPECT_EQ(y[0], 131.5f) << simd_target_name(target);
    EXPECT_EQ(y[1], 189.5f) << simd_target_name(target);
  }
}

// Several adapters' tasks over one input, ranks and sizes that do and do not fill a
// vector: every target equals the reference bit for bit, and tokens outside every
// task keep their base output.
// F16 factors likewise, and then they also equal F32 factors of the same values.
void check_every_target_matches_reference(bool f16) {
  struct Shape {
    int64_t rank, cols, rows;
  };
  const Shape shapes[] = {{1, 7, 5}, {8, 64, 33}, {16, 768, 768}, {17, 100, 16}, {64, 256, 2048}};
  ThreadPool pool(4);
  for (const Shape& s : shapes) {
    const int64_t n = 23;
    const Factors a(s.rank, s.cols, s.rows, 2.0f, 1, f16), b(s.rank, s.cols, s.rows, 0.25f, 2, f16);
    const std::vector<float> x = random_rows(n * s.cols, 3), y0 = random_rows(n * s.rows, 4);
    // Adapter a: 13 tokens (tiles of 4 and a remainder), b: 5; tokens 0, 9, 17, 22 the base's.
    const std::vector<int32_t> ta = {1, 2, 3, 5, 6, 8, 10, 11, 12, 14, 15, 18, 21}, tb = {4, 7, 13, 16, 20};
    std::vector<float> want = y0;
    lora_reference({&a.f, ta, want.data()}, x.data());
    lora_reference({&b.f, tb, want.data()}, x.data());
    if (f16) {
      std::vector<float> as_f32 = y0;
      lora_reference({&a.f32, ta, as_f32.data()}, x.data());
      lora_reference({&b.f32, tb, as_f32.data()}, x.data());
      ASSERT_EQ(as_f32, want) << "rank " << s.rank;
    }
    for (SimdTarget target : supported_simd_targets()) {
      ScopedSimdTarget scoped(target);
      std::vector<float> got = y0;
      const LoraTask tasks[] = {{&a.f, ta, got.data()}, {&b.f, tb, got.data()}};
      lora_add(tasks, x.data(), pool);
      const std::string what =
          std::string(simd_target_name(target)) + " rank " + std::to_string(s.rank) + (f16 ? " f16" : " f32");
      for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], want[i]) << what << " at " << i;
      for (const int32_t base : {0, 9, 17, 22}) {
        EXPECT_EQ(std::memcmp(got.data() + base * s.rows, y0.data() + base * s.rows, s.rows * sizeof(float)), 0) << what;
      }
      EXPECT_NE(got[static_cast<size_t>(s.rows)], y0[static_cast<size_t>(s.rows)]) << what;
    }
  }
}

TEST(LoraTest, EveryTargetMatchesReferenceBitForBit) { check_every_target_matches_reference(false); }

TEST(LoraTest, F16FactorsMatchReferenceAndTheirF32Values) { check_every_target_matches_reference(true); }

// A token's result does not depend on the tokens it shares a tile with.
TEST(LoraTest, TokenAloneEqualsTokenInTile) {
  const Factors a(16, 96, 80, 1.5f, 5);
  const std::vector<float> x = random_rows(8 * 96, 6), y0 = random_rows(8 * 80, 7);
  ThreadPool pool(2);
  for (SimdTarget target : supported_simd_targets()) {
    ScopedSimdTarget scoped(target);
    std::vector<float> together = y0, alone = y0;
    const std::vector<int32_t> all = {0, 1, 2, 3, 4, 5, 6, 7};
    const LoraTask task{&a.f, all, together.data()};
    lora_add({&task, 1}, x.data(), pool);
    for (int32_t t = 0; t < 8; ++t) {
      const LoraTask one{&a.f, {&t, 1}, alone.data()};
      lora_add({&one, 1}, x.data(), pool);
    }
    EXPECT_EQ(together, alone) << simd_target_name(target);
  }
}

}  // namespace
}  // namespace llms
