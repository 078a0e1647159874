// The scalar reference of paged attention (attention.h): plain two-pass softmax, one
// (token, head) at a time, reading the cache row by row through kv_load_row().
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/attention.h"

namespace llms {
namespace {

void attend_one(const AttentionQuery& query, const KvLayerView& kv, int n_heads, float scale, int i, int h,
                std::vector<float>& scores, std::vector<float>& row) {
  const int hd = kv.head_dim;
  const int group = n_heads / kv.n_kv_heads;
  const int kvh = h / group;
  const float* q = query.q + (static_cast<int64_t>(i) * n_heads + h) * hd;
  const int64_t n_ctx = query.first_pos + i + 1;
  const int64_t from = query.window > 0 ? std::max<int64_t>(0, n_ctx - query.window) : 0;
  float max = -INFINITY;
  for (int64_t p = from; p < n_ctx; ++p) {
    const int32_t block = query.block_table[p / kv.block_size];
    kv_load_row(kv, true, block, static_cast<int>(p % kv.block_size), row.data());
    const float* k = row.data() + static_cast<int64_t>(kvh) * hd;
    float s = 0.0f;
    for (int d = 0; d < hd; ++d) s += q[d] * k[d];
    scores[p] = s * scale;
    if (query.softcap > 0.0f) scores[p] = query.softcap * std::tanh(scores[p] / query.softcap);
    max = std::fmax(max, scores[p]);
  }
  float sum = 0.0f;
  for (int64_t p = from; p < n_ctx; ++p) {
    scores[p] = std::exp(scores[p] - max);
    sum += scores[p];
  }
  float* out = query.out + (static_cast<int64_t>(i) * n_heads + h) * hd;
  for (int d = 0; d < hd; ++d) out[d] = 0.0f;
  for (int64_t p = from; p < n_ctx; ++p) {
    const int32_t block = query.block_table[p / kv.block_size];
    kv_load_row(kv, false, block, static_cast<int>(p % kv.block_size), row.data());
    const float* v = row.data() + static_cast<int64_t>(kvh) * hd;
    const float w = scores[p] / sum;
    for (int d = 0; d < hd; ++d) out[d] += w * v[d];
  }
}

}  // namespace

namespace ref {
void paged_attention(const AttentionQuery& query, const KvLayerView& kv, int n_heads, float scale) {
  std::vector<float> scores(static_cast<size_t>(query.first_pos + query.n_q));
  std::vector<float> row(static_cast<size_t>(kv.row_elems()));
  for (int i = 0; i < query.n_q; ++i)
    for (int h = 0; h < n_heads; ++h) attend_one(query, kv, n_heads, scale, i, h, scores, row);
}
}  // namespace ref

}  // namespace llms
