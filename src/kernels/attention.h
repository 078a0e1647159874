// Attention over a paged KV cache, read through the view of one layer that the kv
// module fills (kernels/kv_view.h: blocks of `block_size` token rows, reached through a
// sequence's block table).
//
// paged_attention() is FlashAttention-style: it walks the sequence's blocks in order,
// keeping a running max, sum and weighted value per (query token, head) (online
// softmax), so memory never grows with the square of the length and nothing is padded.
// It is GQA-aware (each KV head's block is decoded once for its whole group of query
// heads) and causal within a chunk. Every (token, head) sees the same blocks in the
// same order whatever the chunking and the thread split, so its result is the same
// bit for bit; SIMD targets differ from the scalar reference only by rounding.
//
// Threading: paged_attention() splits (KV head, query tile) pairs across the pool
// (paged_attention_batch(): those of every sequence of a step in one job);
// each thread works in scratch memory of its own, reused from call to call. The
// scalar reference is in attention_reference.cc.
#pragma once

#include <cstdint>
#include <span>

#include "base/thread_pool.h"
#include "kernels/kv_view.h"

namespace llms {

// The new tokens of one sequence: queries of positions first_pos .. first_pos+n_q-1;
// the cache already holds their keys and values (kv_store first). Causal: query i
// sees positions [0, first_pos + i].
struct AttentionQuery {
  const float* q = nullptr;  // [n_q, n_heads, head_dim]
  int n_q = 0;
  int64_t first_pos = 0;
  const int32_t* block_table = nullptr;
  float* out = nullptr;      // [n_q, n_heads, head_dim]
  // Soft-capping of the scaled scores, s = cap * tanh(s / cap) before the softmax
  // (Gemma-2); 0: none.
  float softcap = 0.0f;
  // Sliding window (Gemma-2's local layers): query i sees positions
  // [max(0, p - window + 1), p] for p = first_pos + i; 0: all of [0, p].
  int window = 0;
};

void paged_attention(const AttentionQuery& query, const KvLayerView& kv, int n_heads, float scale, ThreadPool& pool);
// The queries of a step's sequences (one layer) in one job for the pool: work units
// are (sequence, query tile, KV head), so that many short decode sequences share the
// threads without a dispatch each. Results are those of paged_attention() per query.
void paged_attention_batch(std::span<const AttentionQuery> queries, const KvLayerView& kv, int n_heads, float scale,
                           ThreadPool& pool);

namespace ref {
// Plain two-pass softmax attention, one (token, head) at a time.
void paged_attention(const AttentionQuery& query, const KvLayerView& kv, int n_heads, float scale);
}  // namespace ref

}  // namespace llms
