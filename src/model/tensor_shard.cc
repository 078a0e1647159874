#include "model/tensor_shard.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <numeric>

namespace llms {
namespace {

// The largest block size of the tensors `blk.L.<suffix>` over the layers (1 if none).
int64_t max_block(const GgufFile& file, int n_layer, const char* suffix) {
  int64_t b = 1;
  for (int l = 0; l < n_layer; ++l) {
    const GgufTensorInfo* t = file.find_tensor(fmt::format("blk.{}.{}", l, suffix));
    if (t != nullptr) b = std::max(b, dtype_info(t->dtype).block_size);
  }
  return b;
}

Result<ShardRange> share(int64_t units, int64_t step, int rank, int size, const char* what) {
  auto points = split_points(units, step, size);
  if (!points.ok()) return points.status().with_context(what);
  return ShardRange{(*points)[static_cast<size_t>(rank)], (*points)[static_cast<size_t>(rank) + 1] - (*points)[static_cast<size_t>(rank)]};
}

// Stage `stage` of `stages`'s layers: the file's layers balanced by bytes (each
// layer's blk.L.* tensors; the output head, or the tied embedding, with the last).
Result<ShardRange> stage_layers(const GgufFile& file, const ModelConfig& c, int stage, int stages) {
  if (stages == 1) return ShardRange{0, c.n_layer};
  std::vector<int64_t> bytes(static_cast<size_t>(c.n_layer), 0);
  for (const auto& t : file.tensors()) {
    int l = -1;
    if (std::sscanf(t.name.c_str(), "blk.%d.", &l) == 1 && l >= 0 && l < c.n_layer) {
      bytes[static_cast<size_t>(l)] += static_cast<int64_t>(t.num_bytes);
    }
  }
  const GgufTensorInfo* out = file.find_tensor("output.weight");
  if (out == nullptr) out = file.find_tensor("token_embd.weight");
  const int64_t head = out != nullptr ? static_cast<int64_t>(out->num_bytes) : 0;
  auto points = balance_stages(bytes, head, stages);
  if (!points.ok()) return points.status().with_context("--pipeline-parallel");
  const int first = (*points)[static_cast<size_t>(stage)];
  return ShardRange{first, (*points)[static_cast<size_t>(stage) + 1] - first};
}

}  // namespace

Result<std::vector<int64_t>> split_points(int64_t units, int64_t step, int parts) {
  if (parts < 1 || step < 1) return invalid_argument("a split needs at least one part and a positive step");
  if (units < parts * step) {
    return invalid_argument(fmt::format("{} cannot be split {} ways on boundaries of {}", units, parts, step));
  }
  std::vector<int64_t> b(static_cast<size_t>(parts) + 1, units);
  b[0] = 0;
  for (int r = 1; r < parts; ++r) {
    const double even = static_cast<double>(units) * r / parts;
    int64_t p = static_cast<int64_t>(std::llround(even / static_cast<double>(step))) * step;
    // Leave every part at least one step, before and after.
    p = std::clamp<int64_t>(p, b[static_cast<size_t>(r) - 1] + step, units - (parts - r) * step);
    b[static_cast<size_t>(r)] = p;
  }
  return b;
}

Result<TensorShard> TensorShard::plan(const GgufFile& file, const ModelConfig& c, int rank, int size, int stage,
                                      int stages) {
  TensorShard s;
  LLMS_ASSIGN_OR_RETURN(s.layers, stage_layers(file, c, stage, stages));
  s.stage = stage;
  s.stages = stages;
  s.rank = rank;
  s.size = size;
  if (size == 1) {
    s.kv_heads = {0, c.n_head_kv};
    s.heads = {0, c.n_head};
    s.ff = {0, c.n_ff};
    s.ff_exp = {0, c.n_ff_exp};
    s.ff_shexp = {0, c.n_ff_shexp};
    s.vocab = {0, c.n_vocab};
    s.vocab_counts_ = {c.n_vocab};
    return s;
  }
  if (c.n_head_kv < 1 || c.n_head % c.n_head_kv != 0) {
    return invalid_argument(fmt::format("{} query heads do not group over {} KV heads", c.n_head, c.n_head_kv));
  }
  if (c.n_head_kv < size) {
    // A rank holds whole KV heads (and the query heads that read them): MQA's one KV
    // head, or GQA's few, cannot go to more ranks than there are heads.
    return invalid_argument(fmt::format(
        "the model has {} KV head{}, fewer than the {} ranks of tensor parallelism: each rank holds whole KV "
        "heads, so use --tensor-parallel {} or fewer (and replicas or pipeline stages for more machines)",
        c.n_head_kv, c.n_head_kv == 1 ? "" : "s", size, c.n_head_kv));
  }
  const int64_t group = c.n_head / c.n_head_kv;
  // A KV head's query heads take `width` columns of attn_output: shares start on its blocks.
  const int64_t width = group * c.head_dim, block = max_block(file, c.n_layer, "attn_output.weight");
  const int64_t head_step = block / std::gcd(width, block);
  LLMS_ASSIGN_OR_RETURN(s.kv_heads, share(c.n_head_kv, head_step, rank, size, "KV heads"));
  s.heads = {s.kv_heads.first * group, s.kv_heads.count * group};
  if (c.n_ff > 0) {
    LLMS_ASSIGN_OR_RETURN(s.ff, share(c.n_ff, max_block(file, c.n_layer, "ffn_down.weight"), rank, size, "FFN width"));
  }
  if (c.n_ff_exp > 0) {
    LLMS_ASSIGN_OR_RETURN(s.ff_exp, share(c.n_ff_exp, max_block(file, c.n_layer, "ffn_down_exps.weight"), rank, size,
                                          "expert FFN width"));
  }
  if (c.n_ff_shexp > 0) {
    LLMS_ASSIGN_OR_RETURN(s.ff_shexp, share(c.n_ff_shexp, max_block(file, c.n_layer, "ffn_down_shexp.weight"), rank,
                                            size, "shared expert FFN width"));
  }
  LLMS_ASSIGN_OR_RETURN(const std::vector<int64_t> vocab, split_points(c.n_vocab, 1, size));
  s.vocab = {vocab[static_cast<size_t>(rank)], vocab[static_cast<size_t>(rank) + 1] - vocab[static_cast<size_t>(rank)]};
  for (int r = 0; r < size; ++r) s.vocab_counts_.push_back(vocab[static_cast<size_t>(r) + 1] - vocab[static_cast<size_t>(r)]);
  return s;
}

Result<std::vector<int>> balance_stages(std::span<const int64_t> bytes, int64_t tail_bytes, int stages) {
  const int n = static_cast<int>(bytes.size());
  if (stages < 1 || n < stages) {
    return invalid_argument(fmt::format("{} layers cannot be split into {} pipeline stages", n, stages));
  }
  std::vector<int64_t> prefix(static_cast<size_t>(n) + 1, 0);
  for (int i = 0; i < n; ++i) prefix[static_cast<size_t>(i) + 1] = prefix[static_cast<size_t>(i)] + bytes[static_cast<size_t>(i)];
  auto run = [&](int a, int b) { return prefix[static_cast<size_t>(b)] - prefix[static_cast<size_t>(a)] + (b == n ? tail_bytes : 0); };
  // best[k][i]: the smallest largest run over k runs of the first i layers; cut[k][i]: its last run's start.
  constexpr int64_t kNone = INT64_MAX;
  std::vector<std::vector<int64_t>> best(static_cast<size_t>(stages) + 1, std::vector<int64_t>(static_cast<size_t>(n) + 1, kNone));
  std::vector<std::vector<int>> cut(best.size(), std::vector<int>(static_cast<size_t>(n) + 1, 0));
  best[0][0] = 0;
  for (int k = 1; k <= stages; ++k) {
    for (int i = k; i <= n; ++i) {
      for (int j = k - 1; j < i; ++j) {  // the last run is [j, i); ties keep the earliest cut
        if (best[static_cast<size_t>(k) - 1][static_cast<size_t>(j)] == kNone) continue;
        const int64_t worst = std::max(best[static_cast<size_t>(k) - 1][static_cast<size_t>(j)], run(j, i));
        if (worst < best[static_cast<size_t>(k)][static_cast<size_t>(i)]) {
          best[static_cast<size_t>(k)][static_cast<size_t>(i)] = worst;
          cut[static_cast<size_t>(k)][static_cast<size_t>(i)] = j;
        }
      }
    }
  }
  std::vector<int> b(static_cast<size_t>(stages) + 1, n);
  for (int k = stages; k > 0; --k) b[static_cast<size_t>(k) - 1] = cut[static_cast<size_t>(k)][static_cast<size_t>(b[static_cast<size_t>(k)])];
  return b;
}

ModelConfig TensorShard::local_config(const ModelConfig& full) const {
  ModelConfig c = full;
  c.n_head = static_cast<int>(heads.count);
  c.n_head_kv = static_cast<int>(kv_heads.count);
  c.n_ff = static_cast<int>(ff.count);
  c.n_ff_exp = static_cast<int>(ff_exp.count);
  c.n_ff_shexp = static_cast<int>(ff_shexp.count);
  return c;
}

}  // namespace llms
