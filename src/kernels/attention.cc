#include "kernels/attention.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <span>
#include <vector>

#include "kernels/kernel_table.h"
#include "kernels/simd_target.h"
#include "quant/row_convert.h"

namespace llms {
namespace {

// A thread's working memory for attend_tile(), kept across calls so that the step
// allocates nothing once every thread has seen its largest tile.
struct TileScratch {
  std::vector<float> m, l, acc, scores;
  std::vector<const float*> qrow;
  std::vector<float> keys, vals;  // decoded span blocks (SpanSource)
  std::vector<float> row;         // one decoded cache row (row layout)
};

TileScratch& tile_scratch() {
  thread_local TileScratch scratch;
  return scratch;
}

// The blocks of a span, keys or values of head `kvh`, in the form attention_rows()
// reads: keys transposed (kt[d * block + j]), values as rows. Tiled F32 and F16 blocks
// are read in place (F16 keys only for a few query rows, F16 values only when head_dim
// is a multiple of 16); BF16 blocks and quantized types are decoded to floats first
// (Q8_0 keys by column and Q8_0 value rows by the target's kernels).
class SpanSource {
 public:
  // `many_rows`: the blocks serve many query rows, so F16 keys are converted once
  // rather than by every row tile.
  // `buf` and `row` are the thread's scratch, grown here as needed.
  SpanSource(const KvLayerView& kv, bool is_k, const KernelTable& ops, bool many_rows, int span,
             std::vector<float>& buf, std::vector<float>& row)
      : kv_(kv), is_k_(is_k), type_(kv.type(is_k)), tiled_(kv.tiled(is_k)), ops_(ops), buf_(buf), row_(row) {
    const int64_t hd = kv.head_dim, B = kv.block_size;
    in_place_ = tiled_ && (type_ == DType::kF32 || (type_ == DType::kF16 && (is_k ? !many_rows : hd % 16 == 0)));
    if (!in_place_ && buf_.size() < static_cast<size_t>(span * hd * B)) buf_.resize(static_cast<size_t>(span * hd * B));
    const int64_t row_floats = kv.head_rows(is_k) ? hd * B : kv.row_elems();
    if (!tiled_ && row_.size() < static_cast<size_t>(row_floats)) row_.resize(static_cast<size_t>(row_floats));
  }

  // Rows [0, n) of `block`, block g of the span, for head kvh into `a` (kt[g] or
  // kt_f16[g]; v[g] or v_f16[g], v_stride).
  void load(int g, int32_t block, int n, int kvh, AttentionRows& a) {
    const int64_t hd = kv_.head_dim, B = kv_.block_size;
    const uint8_t* head = tiled_ ? kv_.head(is_k_, block, kvh) : nullptr;
    float* buf = buf_.data() + g * hd * B;
    const float* f32 = nullptr;
    const uint16_t* f16 = nullptr;
    if (in_place_) {
      if (type_ == DType::kF16) {
        f16 = reinterpret_cast<const uint16_t*>(head);
      } else {
        f32 = reinterpret_cast<const float*>(head);
      }
    } else if (tiled_) {
      // Keys: all head_dim x block values (columns past n are never read); values: n rows.
      const int64_t count = is_k_ ? hd * B : n * hd;
      if (type_ == DType::kF16) {
        ops_.f16_to_f32_row(reinterpret_cast<const uint16_t*>(head), buf, count);
      } else {
        dequantize_row(type_, head, buf, count);
      }
      f32 = buf;
    } else if (is_k_ && kv_.k_columns()) {
      // All block columns (those past n are never read).
      ops_.q8_0_columns(kv_.column_scales(block, kvh), kv_.column_values(block, kvh), hd, B, buf);
      f32 = buf;
    } else if (kv_.head_rows(is_k_)) {
      // The head's n rows are one run: values decode in place, keys through `row_`.
      const uint8_t* rows = kv_.head(is_k_, block, kvh);
      if (is_k_) {
        dequantize_row(type_, rows, row_.data(), n * hd);
        for (int r = 0; r < n; ++r) {
          for (int64_t d = 0; d < hd; ++d) buf[d * B + r] = row_[static_cast<size_t>(r * hd + d)];
        }
      } else if (type_ == DType::kQ8_0) {
        ops_.q8_0_row(rows, buf, n * hd);
      } else {
        dequantize_row(type_, rows, buf, n * hd);
      }
      f32 = buf;
    } else {
      const HeadPart part = kv_.head_part(is_k_, kvh);
      for (int r = 0; r < n; ++r) {
        dequantize_row(type_, kv_.row(is_k_, block, r) + part.skip, row_.data(), part.elems);
        const float* src = row_.data() + (part.head_only ? 0 : kvh * hd);
        if (is_k_) {
          for (int64_t d = 0; d < hd; ++d) buf[d * B + r] = src[d];
        } else {
          std::memcpy(buf + r * hd, src, static_cast<size_t>(hd) * sizeof(float));
        }
      }
      f32 = buf;
    }
    if (is_k_) {
      a.kt[g] = f32;
      a.kt_f16[g] = f16;
    } else {
      a.v[g] = f32;
      a.v_f16[g] = f16;
      a.v_stride = hd;
    }
  }

 private:
  const KvLayerView& kv_;
  bool is_k_;
  DType type_;
  bool tiled_;
  const KernelTable& ops_;
  bool in_place_ = false;
  std::vector<float>& buf_;  // per block of the span: decoded keys (transposed) or value rows
  std::vector<float>& row_;  // one decoded cache row (row layout)
};

// Brings head `kvh`'s keys and values of `block` into L2: two contiguous runs in the
// layouts by head, a piece of every row in the row layout. Into L2, not L1: decode of a
// TinyLlama layer at 2048 positions (BM_Attention) takes 145-150 us this way, 206-278 us
// when the same lines are asked into L1, 233-302 us without prefetch; asking 2-8
// blocks ahead gained nothing over one. In a decoding model (weights streaming
// between layers) the hint made no measurable difference.
void prefetch_block(const KvLayerView& kv, int32_t block, int kvh) {
  auto run = [](const uint8_t* p, int64_t bytes) {
    for (int64_t i = 0; i < bytes; i += 64) __builtin_prefetch(p + i, 0, 2);
  };
  for (bool is_k : {true, false}) {
    if (kv.head_runs(is_k)) {
      run(kv.head(is_k, block, kvh), kv.block_bytes(is_k) / kv.n_kv_heads);
      continue;
    }
    const HeadPart part = kv.head_part(is_k, kvh);
    for (int r = 0; r < kv.block_size; ++r) run(kv.row(is_k, block, r) + part.skip, part.bytes);
  }
}

// One task: KV head `kvh`, query tokens [i0, i1) of the chunk, all heads of the group.
// Row r = (i - i0) * group + g is query token i, head kvh * group + g.
void attend_tile(const AttentionQuery& q, const KvLayerView& kv, int n_heads, float scale, int kvh, int i0, int i1,
                 const KernelTable& kt_ops) {
  const int hd = kv.head_dim, B = kv.block_size;
  const int group = n_heads / kv.n_kv_heads;
  const int n_rows = (i1 - i0) * group;
  // Spans of about 64 keys: consecutive blocks of the sequence, aligned to multiples
  // of `span` blocks, so that a query sees the same spans however it is chunked.
  const int span = std::clamp(64 / B, 1, kMaxSpanBlocks);
  const int score_stride = (span * B + 15) / 16 * 16;
  TileScratch& sc = tile_scratch();
  std::vector<float>&m = sc.m, &l = sc.l, &acc = sc.acc, &scores = sc.scores;
  m.assign(static_cast<size_t>(n_rows), -INFINITY);
  l.assign(static_cast<size_t>(n_rows), 0.0f);
  acc.assign(static_cast<size_t>(n_rows) * hd, 0.0f);
  if (scores.size() < static_cast<size_t>(n_rows) * score_stride) scores.resize(static_cast<size_t>(n_rows) * score_stride);
  std::vector<const float*>& qrow = sc.qrow;
  qrow.resize(static_cast<size_t>(n_rows));
  for (int i = i0; i < i1; ++i)
    for (int g = 0; g < group; ++g)
      qrow[static_cast<size_t>((i - i0) * group + g)] = q.q + (static_cast<int64_t>(i) * n_heads + kvh * group + g) * hd;
  const bool many_rows = n_rows > 8;
  SpanSource keys(kv, true, kt_ops, many_rows, span, sc.keys, sc.row);
  SpanSource vals(kv, false, kt_ops, many_rows, span, sc.vals, sc.row);
  AttentionRows a;
  a.block = B;
  a.head_dim = hd;
  a.scale = scale;
  a.softcap = q.softcap;
  a.scores = scores.data();
  // Rows [r0, r0 + rows) see keys [0, valid) of the loaded span.
  auto run = [&](int r0, int rows, int valid) {
    a.rows = rows;
    a.valid = valid;
    a.q = qrow.data() + r0;
    a.m = m.data() + r0;
    a.l = l.data() + r0;
    a.acc = acc.data() + static_cast<int64_t>(r0) * hd;
    kt_ops.attention_rows(a);
  };
  const int64_t last_pos = q.first_pos + i1 - 1;
  const int64_t last_block = last_pos / B;
  // With a window, spans before the first row's window are skipped, and each row runs
  // alone on the keys of the span inside its window.
  const int64_t lowest = q.window > 0 ? std::max<int64_t>(0, q.first_pos + i0 - q.window + 1) : 0;
  for (int64_t b0 = lowest / B / span * span; b0 <= last_block; b0 += span) {
    const int64_t base = b0 * B;
    const int n_blocks = static_cast<int>(std::min<int64_t>(span, last_block - b0 + 1));
    const int keys_in_span = static_cast<int>(std::min<int64_t>(int64_t{span} * B, last_pos - base + 1));
    // The next span's blocks sit anywhere in the pool, out of the hardware
    // prefetchers' sight: ask for their keys and values now, while this span is
    // computed.
    for (int64_t b = b0 + span; b <= std::min(last_block, b0 + 2 * span - 1); ++b) prefetch_block(kv, q.block_table[b], kvh);
    for (int g = 0; g < n_blocks; ++g) {
      const int rows = std::min(B, keys_in_span - g * B);
      keys.load(g, q.block_table[b0 + g], rows, kvh, a);
      vals.load(g, q.block_table[b0 + g], rows, kvh, a);
    }
    if (q.window > 0) {
      // Row i sees keys [lo, hi) of the span; consecutive rows that see the same keys
      // (all of a span their windows cover) run in one call.
      auto range = [&](int i) {
        const int64_t p = q.first_pos + i;
        return std::pair<int64_t, int64_t>(std::max<int64_t>(0, p - q.window + 1 - base),
                                           std::min<int64_t>(keys_in_span, p - base + 1));
      };
      for (int i = i0; i < i1;) {
        const auto [lo, hi] = range(i);
        int j = i + 1;
        while (j < i1 && range(j) == std::pair<int64_t, int64_t>(lo, hi)) ++j;
        if (lo < hi) {
          a.first = static_cast<int>(lo);
          run((i - i0) * group, (j - i) * group, static_cast<int>(hi));
        }
        i = j;
      }
      a.first = 0;
      continue;
    }
    // Tokens before the span see none of it; tokens inside it (causal) see a prefix
    // of it, each in a call of its own; the rest see all its keys, in one call.
    int i = static_cast<int>(std::clamp<int64_t>(base - q.first_pos, i0, i1));
    for (; i < i1 && q.first_pos + i < base + keys_in_span - 1; ++i)
      run((i - i0) * group, group, static_cast<int>(q.first_pos + i - base + 1));
    if (i < i1) run((i - i0) * group, (i1 - i) * group, keys_in_span);
  }
  for (int r = 0; r < n_rows; ++r) {
    const int i = i0 + r / group, g = r % group;
    float* out = q.out + (static_cast<int64_t>(i) * n_heads + kvh * group + g) * hd;
    const float inv = 1.0f / l[static_cast<size_t>(r)];
    const float* ar = acc.data() + static_cast<int64_t>(r) * hd;
    for (int d = 0; d < hd; ++d) out[d] = ar[d] * inv;
  }
}

}  // namespace

// Decode queries per thread from which a decode query's heads make one task.
constexpr int kMinWholeQueryTasks = 4;

void paged_attention_batch(std::span<const AttentionQuery> queries, const KvLayerView& kv, int n_heads, float scale,
                           ThreadPool& pool) {
  const KernelTable& kt_ops = active_kernels();
  // One task: a KV head of a query tile of one sequence. Query tiles of up to 32
  // tokens keep the tile's accumulators small; with few KV heads, more tiles give
  // every thread work.
  struct Task {
    int32_t query, kvh, kvh_end, i0, i1;
    int64_t cost;   // about the scores it computes
    int64_t order;  // ties keep the order of enumeration
  };
  // The calling thread's list, reused (no allocation per step). The workers reach it
  // through this reference: inside the lambdas the thread_local's name would be theirs.
  // Every layer of a pass has the same queries' shapes, so the list (built and sorted
  // below) is kept while (n_q, first_pos) of every query and the head counts repeat.
  struct TaskList {
    std::vector<Task> tasks;
    std::vector<std::pair<int, int64_t>> shapes;
    int kv_heads = 0, threads = 0;
    int64_t work = 0;
  };
  thread_local TaskList own;
  TaskList& list = own;
  bool same = list.kv_heads == kv.n_kv_heads && list.threads == pool.num_threads() &&
              list.shapes.size() == queries.size();
  for (size_t qi = 0; same && qi < queries.size(); ++qi) {
    same = list.shapes[qi] == std::pair<int, int64_t>(queries[qi].n_q, queries[qi].first_pos);
  }
  std::vector<Task>& tasks = list.tasks;
  if (!same) {
    tasks.clear();
    list.shapes.clear();
    list.kv_heads = kv.n_kv_heads;
    list.threads = pool.num_threads();
    list.work = 0;
    // With many decode queries (one token each), a task takes all KV heads of one
    // query: its keys and values are then read block by block in address order (a
    // block holds its heads one after another), which the hardware prefetchers follow,
    // rather than as one head's short run of each block. Few decode queries keep a
    // task per head, so that every thread has work.
    int64_t decodes = 0;
    for (const AttentionQuery& q : queries) decodes += q.n_q == 1;
    const bool whole_query = decodes >= int64_t{kMinWholeQueryTasks} * pool.num_threads();
    for (size_t qi = 0; qi < queries.size(); ++qi) {
      const AttentionQuery& q = queries[qi];
      list.shapes.emplace_back(q.n_q, q.first_pos);
      const int tile = std::max(1, std::min(32, (q.n_q + pool.num_threads() - 1) / pool.num_threads()));
      const int tiles = (q.n_q + tile - 1) / tile;
      const int heads_per_task = whole_query && q.n_q == 1 ? kv.n_kv_heads : 1;
      for (int ti = 0; ti < tiles; ++ti) {
        const int i0 = ti * tile, i1 = std::min(q.n_q, i0 + tile);
        for (int kvh = 0; kvh < kv.n_kv_heads; kvh += heads_per_task) {
          const int64_t cost = int64_t{i1 - i0} * (q.first_pos + i1) * heads_per_task;
          tasks.push_back({static_cast<int32_t>(qi), kvh, kvh + heads_per_task, i0, i1, cost,
                           static_cast<int64_t>(tasks.size())});
        }
      }
      list.work += static_cast<int64_t>(q.n_q) * (q.first_pos + q.n_q);
    }
    // Causal: a later query tile sees more keys, and sequences differ in length.
    // Threads claim tasks one at a time, the costliest first, so that they finish
    // together. The split changes no result: each (token, head) is computed by one
    // task, the same way.
    std::sort(tasks.begin(), tasks.end(),
              [](const Task& a, const Task& b) { return a.cost != b.cost ? a.cost > b.cost : a.order < b.order; });
  }
  const int64_t work = list.work * n_heads;
  auto run_task = [&](const Task& t) {
    for (int kvh = t.kvh; kvh < t.kvh_end; ++kvh)
      attend_tile(queries[static_cast<size_t>(t.query)], kv, n_heads, scale, kvh, t.i0, t.i1, kt_ops);
  };
  const int64_t n_tasks = static_cast<int64_t>(tasks.size());
  if (work < 4096 || n_tasks == 1 || pool.num_threads() == 1) {
    for (const Task& t : tasks) run_task(t);
    return;
  }
  // Each thread claims its next tasks before running the current ones and asks for
  // their first spans of keys and values meanwhile: a short decode sequence has just
  // one span, which attend_tile()'s own prefetch (of the span after) never covers.
  // Claims of up to kMaxClaim tasks (fewer when there are few tasks a thread, so that
  // the threads still finish together) keep that many tasks' loads in flight: with
  // claims of 4 rather than 1, BM_AttentionDecodeBatch (8-64 decode sequences of 64-256
  // positions) took 9-29% less time.
  auto prefetch_first_span = [&](const Task& t) {
    const AttentionQuery& q = queries[static_cast<size_t>(t.query)];
    const int span = std::clamp(64 / kv.block_size, 1, kMaxSpanBlocks);
    const int64_t last_block = (q.first_pos + t.i1 - 1) / kv.block_size;
    const int64_t lowest = q.window > 0 ? std::max<int64_t>(0, q.first_pos + t.i0 - q.window + 1) : 0;
    const int64_t first_block = lowest / kv.block_size / span * span;
    for (int64_t b = first_block; b <= std::min<int64_t>(last_block, first_block + span - 1); ++b) {
      prefetch_block(kv, q.block_table[b], t.kvh);  // a task's first head
    }
  };
  constexpr int64_t kMaxClaim = 4;
  const int64_t claim = std::clamp<int64_t>(n_tasks / (int64_t{pool.num_threads()} * 8), 1, kMaxClaim);
  // Tasks [first, first + claim), none past the last.
  auto claimed = [&](int64_t first) {
    first = std::min(first, n_tasks);
    return std::span<const Task>(tasks).subspan(static_cast<size_t>(first),
                                                static_cast<size_t>(std::min(claim, n_tasks - first)));
  };
  std::atomic<int64_t> next{0};
  pool.run(static_cast<int>(std::min<int64_t>(pool.num_threads(), n_tasks)), [&](int) {
    int64_t t = next.fetch_add(claim, std::memory_order_relaxed);
    for (const Task& task : claimed(t)) prefetch_first_span(task);
    while (t < n_tasks) {
      const int64_t after = next.fetch_add(claim, std::memory_order_relaxed);
      for (const Task& task : claimed(after)) prefetch_first_span(task);
      for (const Task& task : claimed(t)) run_task(task);
      t = after;
    }
  });
}

void paged_attention(const AttentionQuery& query, const KvLayerView& kv, int n_heads, float scale, ThreadPool& pool) {
  paged_attention_batch(std::span<const AttentionQuery>(&query, 1), kv, n_heads, scale, pool);
}

}  // namespace llms
