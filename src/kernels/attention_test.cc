#include "kernels/attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "base/aligned_buffer.h"
#include "base/random.h"
#include "kernels/simd_target.h"
#include "kv/kv_layout.h"
#include "quant/row_convert.h"

namespace llms {
namespace {

struct Case {
  int n_heads, n_kv, hd, block, first_pos, n_q;
  DType k_type, v_type;
};

// A KV cache of random keys and values for `total` positions, in blocks scattered in
// reverse order, and random queries for the last n_q positions.
class Fixture {
 public:
  explicit Fixture(const Case& c) : c_(c) {
    const int total = c.first_pos + c.n_q;
    const int blocks = (total + c.block - 1) / c.block + 1;
    view_ = make_kv_layer_view(nullptr, nullptr, c.k_type, c.v_type, c.block, c.n_kv, c.hd);
    k_.resize(static_cast<size_t>(blocks * c.block * view_.k_row_bytes()));
    v_.resize(static_cast<size_t>(blocks * c.block * view_.v_row_bytes()));
    view_.k = reinterpret_cast<uint8_t*>(k_.data());
    view_.v = reinterpret_cast<uint8_t*>(v_.data());
    for (int b = blocks - 1; b >= 0; --b) table_.push_back(b);
    Rng rng(static_cast<uint64_t>(c.hd * 1000 + c.n_q));
    std::vector<float> kr(static_cast<size_t>(view_.row_elems())), vr(kr.size());
    for (int p = 0; p < total; ++p) {
      for (auto& x : kr) x = static_cast<float>(rng.normal());
      for (auto& x : vr) x = static_cast<float>(rng.normal());
      kv_store(view_, table_.data(), p, kr.data(), vr.data());
    }
    q_.resize(static_cast<size_t>(c.n_q * c.n_heads * c.hd));
    for (auto& x : q_) x = static_cast<float>(rng.normal());
  }
  AttentionQuery query(float* out, int first = 0, int n = -1) const {
    AttentionQuery q;
    q.q = q_.data() + static_cast<int64_t>(first) * c_.n_heads * c_.hd;
    q.n_q = n < 0 ? c_.n_q : n;
    q.first_pos = c_.first_pos + first;
    q.block_table = table_.data();
    q.out = out + static_cast<int64_t>(first) * c_.n_heads * c_.hd;
    return q;
  }
  const KvLayerView& view() const { return view_; }
  size_t out_size() const { return q_.size(); }

 private:
  Case c_;
  KvLayerView view_;
  std::vector<std::byte> k_, v_;
  std::vector<int32_t> table_;
  std::vector<float> q_;
};

TEST(AttentionTest, EveryTargetMatchesReferenceForEveryKvType) {
  const Case cases[] = {
      {8, 4, 8, 16, 0, 14, DType::kF32, DType::kF32},     // stories260K shape, prefill
      {8, 2, 64, 16, 37, 1, DType::kF32, DType::kF32},    // GQA decode
      {8, 2, 64, 16, 50, 7, DType::kF16, DType::kF16},    // F16 keys in place, partial block
      {4, 1, 128, 8, 20, 9, DType::kF16, DType::kF16},    // MQA chunk straddling blocks
      {8, 8, 64, 32, 100, 3, DType::kBF16, DType::kBF16},
      {6, 2, 64, 16, 45, 17, DType::kQ8_0, DType::kQ8_0},
      {4, 2, 64, 16, 30, 5, DType::kQ4_0, DType::kF16},
      {2, 2, 96, 16, 70, 2, DType::kF32, DType::kQ8_0},
      {8, 4, 8, 16, 10, 5, DType::kQ8_0, DType::kQ4_0},   // blocks of 32 straddle heads
      {4, 2, 24, 16, 40, 3, DType::kF16, DType::kBF16},   // F16 rows shorter than a vector
      {4, 2, 64, 12, 30, 7, DType::kF32, DType::kF16},    // block size not a multiple of 8
      {8, 2, 32, 128, 200, 20, DType::kF16, DType::kF32},  // largest block size
      {4, 2, 24, 12, 30, 5, DType::kF16, DType::kF16},     // F16 keys read in part, values decoded
      {32, 2, 64, 16, 70, 1, DType::kF16, DType::kF16},    // decode of 16 rows: keys converted once
      {8, 2, 64, 16, 230, 40, DType::kF16, DType::kF16},   // a chunk across spans of 4 blocks
      {4, 2, 32, 5, 90, 11, DType::kQ8_0, DType::kF32},    // spans of 8 blocks of 5 rows
  };
  ThreadPool pool(2);
  for (const auto& c : cases) {
    Fixture f(c);
    std::vector<float> want(f.out_size()), got(f.out_size());
    const float scale = 1.0f / std::sqrt(static_cast<float>(c.hd));
    ref::paged_attention(f.query(want.data()), f.view(), c.n_heads, scale);
    for (SimdTarget t : supported_simd_targets()) {
      ScopedSimdTarget use(t);
      std::fill(got.begin(), got.end(), 0.0f);
      paged_attention(f.query(got.data()), f.view(), c.n_heads, scale, pool);
      for (size_t i = 0; i < got.size(); ++i) {
        // Online vs two-pass softmax and SIMD sums differ only by float rounding.
        ASSERT_NEAR(got[i], want[i], 2e-5f * (1.0f + std::abs(want[i])))
            << simd_target_name(t) << " hd " << c.hd << " kv " << dtype_name(c.k_type) << " i " << i;
      }
    }
  }
}

TEST(AttentionTest, SoftCappedScoresMatchReferenceOnEveryTarget) {
  // Unscaled scores of 64 dims (std 8) against a cap of 5: most are capped hard.
  const Case cases[] = {{8, 4, 64, 16, 30, 9, DType::kF32, DType::kF32}, {4, 2, 256, 16, 70, 1, DType::kF16, DType::kF16}};
  ThreadPool pool(2);
  for (const auto& c : cases) {
    Fixture f(c);
    std::vector<float> want(f.out_size()), got(f.out_size()), uncapped(f.out_size());
    const float scale = 1.0f;
    AttentionQuery capped_q = f.query(want.data());
    capped_q.softcap = 5.0f;
    ref::paged_attention(capped_q, f.view(), c.n_heads, scale);
    ref::paged_attention(f.query(uncapped.data()), f.view(), c.n_heads, scale);
    double moved = 0;
    for (size_t i = 0; i < want.size(); ++i) moved = std::max(moved, static_cast<double>(std::abs(want[i] - uncapped[i])));
    EXPECT_GT(moved, 0.1) << "the cap changes the output";
    for (SimdTarget t : supported_simd_targets()) {
      ScopedSimdTarget use(t);
      std::fill(got.begin(), got.end(), 0.0f);
      AttentionQuery q = f.query(got.data());
      q.softcap = 5.0f;
      paged_attention(q, f.view(), c.n_heads, scale, pool);
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_NEAR(got[i], want[i], 2e-5f * (1.0f + std::abs(want[i]))) << simd_target_name(t) << " hd " << c.hd << " i " << i;
      }
    }
  }
}

// A sliding window (Gemma-2's local layers): every target matches the reference, which
// reads only the window's keys; windows that start inside a span, at a span's edge,
// cover all keys, or hold a single key; a soft cap with a window; batched decode.
TEST(AttentionTest, SlidingWindowsMatchReferenceOnEveryTarget) {
  struct WindowCase {
    Case c;
    int window;
    float softcap;
  };
  const WindowCase cases[] = {
      {{8, 4, 64, 16, 100, 1, DType::kF32, DType::kF32}, 37, 0.0f},    // decode, window inside a span
      {{8, 4, 64, 16, 100, 1, DType::kF16, DType::kF16}, 64, 0.0f},    // decode, window = one span
      {{8, 2, 64, 16, 120, 30, DType::kF16, DType::kF16}, 50, 0.0f},   // a chunk whose rows' windows start in different spans
      {{4, 2, 32, 16, 10, 20, DType::kF32, DType::kF32}, 1000, 0.0f},  // window covers every key
      {{4, 2, 32, 16, 40, 5, DType::kQ8_0, DType::kF32}, 1, 0.0f},     // a single key: the query's own
      {{4, 2, 256, 16, 90, 9, DType::kF16, DType::kF16}, 24, 5.0f},    // with a soft cap
      {{4, 2, 32, 5, 90, 11, DType::kF32, DType::kF16}, 17, 0.0f},     // spans of 8 blocks of 5 rows
  };
  ThreadPool pool(2);
  for (const auto& w : cases) {
    const Case& c = w.c;
    Fixture f(c);
    std::vector<float> want(f.out_size()), got(f.out_size()), full(f.out_size());
    const float scale = w.softcap > 0 ? 1.0f : 1.0f / std::sqrt(static_cast<float>(c.hd));
    AttentionQuery rq = f.query(want.data());
    rq.window = w.window, rq.softcap = w.softcap;
    ref::paged_attention(rq, f.view(), c.n_heads, scale);
    AttentionQuery fq = f.query(full.data());
    fq.softcap = w.softcap;
    ref::paged_attention(fq, f.view(), c.n_heads, scale);
    double moved = 0;
    for (size_t i = 0; i < want.size(); ++i) moved = std::max(moved, static_cast<double>(std::abs(want[i] - full[i])));
    if (w.window < c.first_pos) {
      EXPECT_GT(moved, 0.05) << "the window changes the output, window " << w.window;
    }
    if (w.window >= c.first_pos + c.n_q) {
      EXPECT_EQ(moved, 0.0) << "a window over every key changes nothing";
    }
    for (SimdTarget t : supported_simd_targets()) {
      ScopedSimdTarget use(t);
      std::fill(got.begin(), got.end(), 0.0f);
      AttentionQuery q = f.query(got.data());
      q.window = w.window, q.softcap = w.softcap;
      paged_attention(q, f.view(), c.n_heads, scale, pool);
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_NEAR(got[i], want[i], 2e-5f * (1.0f + std::abs(want[i])))
            << simd_target_name(t) << " window " << w.window << " i " << i;
      }
      // Chunked one query at a time: the same bits as the whole chunk.
      std::vector<float> one(f.out_size());
      for (int i = 0; i < c.n_q; ++i) {
        AttentionQuery qi = f.query(one.data(), i, 1);
        qi.window = w.window, qi.softcap = w.softcap;
        paged_attention(qi, f.view(), c.n_heads, scale, pool);
      }
      ASSERT_EQ(one, got) << simd_target_name(t) << " window " << w.window;
    }
  }
}

TEST(AttentionTest, ChunkingAndThreadsDoNotChangeAnyBit) {
  // Positions 100-139: the chunks of 7 and the single tokens cross the span boundary
  // at 128 at different places.
  const Case c{8, 2, 64, 16, 100, 40, DType::kF16, DType::kF16};
  Fixture f(c);
  const float scale = 0.125f;
  std::vector<float> whole(f.out_size()), pieces(f.out_size()), single(f.out_size());
  ThreadPool two(2), one(1);
  paged_attention(f.query(whole.data()), f.view(), c.n_heads, scale, two);
  // The same queries in chunks of 7 and one by one on one thread.
  for (int at = 0; at < c.n_q; at += 7) {
    paged_attention(f.query(pieces.data(), at, std::min(7, c.n_q - at)), f.view(), c.n_heads, scale, two);
  }
  for (int at = 0; at < c.n_q; ++at) paged_attention(f.query(single.data(), at, 1), f.view(), c.n_heads, scale, one);
  EXPECT_EQ(whole, pieces);
  EXPECT_EQ(whole, single);
  // The same tokens as 40 decode queries of one batch: enough of them that a task
  // takes all heads of a query.
  std::vector<float> batch(f.out_size());
  std::vector<AttentionQuery> decodes;
  for (int at = 0; at < c.n_q; ++at) decodes.push_back(f.query(batch.data(), at, 1));
  paged_attention_batch(decodes, f.view(), c.n_heads, scale, two);
  EXPECT_EQ(whole, batch);
}

// Decode queries of one batch, many enough that a task takes all heads of a query,
// give the bits of the same queries run alone (a task per head), on every target: MHA
// and GQA, head_dim 64 and 80, the queries' last blocks cut at every place, and
// soft-capped scores.
TEST(AttentionTest, BatchOfDecodesMatchesOneByOneOnEveryTarget) {
  struct Shape {
    int n_heads, n_kv, hd;
    float softcap;
  };
  for (const Shape sh : {Shape{12, 12, 64, 0.0f}, Shape{8, 2, 64, 0.0f}, Shape{6, 3, 80, 0.0f}, Shape{4, 4, 64, 30.0f}}) {
    const Case c{sh.n_heads, sh.n_kv, sh.hd, 16, 40, 33, DType::kF16, DType::kF16};
    Fixture f(c);
    const float scale = 0.125f;
    ThreadPool two(2), one(1);
    for (SimdTarget t : supported_simd_targets()) {
      ScopedSimdTarget use(t);
      std::vector<float> single(f.out_size()), batch(f.out_size());
      std::vector<AttentionQuery> decodes;
      for (int at = 0; at < c.n_q; ++at) {
        AttentionQuery q = f.query(single.data(), at, 1);
        q.softcap = sh.softcap;
        paged_attention(q, f.view(), c.n_heads, scale, one);
        q.out = batch.data() + static_cast<int64_t>(at) * c.n_heads * c.hd;
        decodes.push_back(q);
      }
      paged_attention_batch(decodes, f.view(), c.n_heads, scale, two);
      ASSERT_EQ(single, batch) << simd_target_name(t) << " heads " << c.n_heads << "/" << c.n_kv << " hd " << c.hd;
    }
  }
}

}  // namespace
}  // namespace llms
