#include "model/model.h"
#include "model/rows.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "base/log.h"
#include "io/hf_model.h"
#include "kernels/attention.h"
#include "kernels/convert.h"
#include "kernels/matmul.h"
#include "kernels/ops.h"
#include "model/lora.h"

namespace llms {

void ForwardState::reserve(const ModelConfig& c, int64_t n) {
  if (n <= capacity_) return;
  auto grow = [n](AlignedBuffer& b, int64_t width) { b.resize(static_cast<size_t>(n * width) * sizeof(float), false); };
  grow(x_, c.n_embd);
  grow(xn_, c.n_embd);
  grow(q_, c.q_dim());
  grow(k_, c.kv_dim());
  grow(v_, c.kv_dim());
  grow(att_, c.q_dim());
  grow(tmp_, c.n_embd);
  grow(gate_, c.ffn_width());
  grow(up_, c.ffn_width());
  if (c.moe()) {
    grow(router_logits_, c.n_expert);
    grow(expert_in_, c.n_embd);
    grow(expert_out_, c.n_embd);
  }
  capacity_ = n;
}

namespace {

// YaRN's ramp over the rotated pairs: 1 (frequency kept) below the pair whose
// wavelength turns beta_fast times in n_ctx_orig positions, 0 (frequency scaled) past
// the one that turns beta_slow times, linear between.
double yarn_mix(const ModelConfig& c, int i) {
  auto corr_dim = [&](double turns) {
    return c.rope_dim * std::log(c.n_ctx_orig / (turns * 2 * M_PI)) / (2 * std::log(static_cast<double>(c.rope_base)));
  };
  const double low = std::max(0.0, std::floor(corr_dim(c.yarn_beta_fast)));
  const double high = std::min(c.rope_dim - 1.0, std::ceil(corr_dim(c.yarn_beta_slow)));
  const double y = (i - low) / std::max(0.001, high - low);
  return (1.0 - std::clamp(y, 0.0, 1.0)) * c.yarn_ext_factor;
}

// inv_freq[i] = scale * base^(-2i / rope_dim) / factors[i] (factors may be empty);
// with YaRN, scale is mixed with 1 by yarn_mix.
std::vector<float> inv_freq_table(const ModelConfig& c, const std::vector<float>& factors) {
  std::vector<float> f;
  for (int i = 0; i < c.rope_dim / 2; ++i) {
    double scale = c.rope_freq_scale;
    if (c.yarn_ext_factor > 0.0f) {
      const double mix = yarn_mix(c, i);
      scale = scale * (1.0 - mix) + mix;
    }
    double v = std::pow(static_cast<double>(c.rope_base), -2.0 * i / c.rope_dim) * scale;
    if (!factors.empty()) v /= factors[static_cast<size_t>(i)];
    f.push_back(static_cast<float>(v));
  }
  return f;
}


// A thread's row of `n` floats for a position embedding, reused.
std::vector<float>& position_row_scratch(int64_t n) {
  thread_local std::vector<float> row;
  if (static_cast<int64_t>(row.size()) < n) row.resize(static_cast<size_t>(n));
  return row;
}

}  // namespace

Result<std::unique_ptr<Model>> Model::load(const std::string& path, Communicator* ranks, Parallelism parallel) {
  LLMS_ASSIGN_OR_RETURN(GgufFile file, open_model_file(path));
  auto model = from_file(std::move(file), ranks, parallel);
  if (!model.ok()) return model.status().with_context(path);
  return model;
}

Result<std::unique_ptr<Model>> Model::from_file(GgufFile file, Communicator* ranks, Parallelism parallel) {
  std::unique_ptr<Model> m(new Model(std::move(file), ranks != nullptr ? ranks : &LocalCommunicator::instance()));
  const int rank = m->ranks_->rank();
  if (parallel.tensor < 1 || parallel.pipeline < 1 || parallel.ranks() != m->ranks_->size()) {
    return invalid_argument(fmt::format("tensor parallelism {} × pipeline parallelism {} needs {} ranks, the group has {}",
                                        parallel.tensor, parallel.pipeline, parallel.ranks(), m->ranks_->size()));
  }
  LLMS_ASSIGN_OR_RETURN(const ModelConfig full, ModelConfig::from_gguf(m->file_));
  // Identity: everything before the tensor data (metadata and tensor table) plus size,
  // taken before loading, which releases the pages of the tensors it repacks.
  HashBuilder h;
  h.add_pod(m->file_.file_size());
  for (const auto& t : m->file_.tensors()) {
    h.add(t.name).add_pod(t.dtype).add_pod(t.offset);
    // A sample of the data catches files that differ only in values.
    if (t.data != nullptr) h.add_bytes(t.data, std::min<uint64_t>(t.num_bytes, 64));
  }
  m->identity_ = h.finish128();
  // Every rank plans (and fails alike) before the collectives below.
  const int stage = parallel.stage_of(rank), tensor_rank = parallel.tensor_rank_of(rank);
  LLMS_ASSIGN_OR_RETURN(m->shard_, TensorShard::plan(m->file_, full, tensor_rank, parallel.tensor, stage, parallel.pipeline));
  m->tensor_ranks_ = parallel.pipeline == 1 ? m->ranks_ : &LocalCommunicator::instance();
  m->stage_ranks_ = parallel.tensor == 1 ? m->ranks_ : &LocalCommunicator::instance();
  if (parallel.tensor > 1 && parallel.pipeline > 1) {
    // A grid: the tensor ranks of each stage, and each tensor rank's column of stages.
    LLMS_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> row, m->ranks_->split(stage, tensor_rank));
    LLMS_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> column, m->ranks_->split(tensor_rank, stage));
    m->tensor_ranks_ = m->subgroups_.emplace_back(std::move(row)).get();
    m->stage_ranks_ = m->subgroups_.emplace_back(std::move(column)).get();
  }
  LLMS_ASSIGN_OR_RETURN(m->weights_, ModelWeights::load(m->file_, full, m->shard_));
  m->config_ = m->shard_.local_config(full);
  // Loading released each tensor it repacked, but a read maps neighbouring pages too.
  // The token embedding is read in place: its rows come back as tokens use them.
  m->file_.release_all_pages();
  const ModelConfig& c = m->config_;
  const ModelWeights& w = m->weights_;
  m->inv_freq_ = inv_freq_table(c, w.rope_freqs.empty() ? w.rope_factors_short : w.rope_freqs);
  if (!w.rope_factors_long.empty()) m->inv_freq_long_ = inv_freq_table(c, w.rope_factors_long);
  const WeightsMemory mem = m->weights_memory();
  log_info("weights: {:.1f} MiB resident (packed panels and vectors), {:.1f} MiB read in place from the file "
           "(embeddings, resident as rows are used; {:.1f} MiB of the file mapped now)",
           static_cast<double>(mem.owned_bytes) / (1 << 20), static_cast<double>(mem.mapped_bytes) / (1 << 20),
           static_cast<double>(mem.mapped_resident_bytes) / (1 << 20));
  return m;
}

WeightsMemory Model::weights_memory() const {
  WeightsMemory m = weights_.memory();
  m.mapped_resident_bytes = file_.resident_bytes();
  return m;
}

KvCacheConfig Model::kv_config(int32_t num_blocks, int block_size, DType k_type, DType v_type) const {
  KvCacheConfig kc;
  kc.n_layer = static_cast<int>(shard_.layers.count);
  kc.n_kv_heads = config_.n_head_kv;
  kc.head_dim = config_.head_dim;
  kc.block_size = block_size;
  kc.num_blocks = num_blocks;
  kc.k_type = k_type;
  kc.v_type = v_type;
  return kc;
}

Status Model::validate(std::span<const SequenceChunk> chunks, const KvCache& kv) const {
  for (size_t i = 0; i < chunks.size(); ++i) {
    const SequenceChunk& ch = chunks[i];
    if (ch.tokens.empty()) return invalid_argument(fmt::format("chunk {} has no tokens", i));
    for (int32_t t : ch.tokens) {
      if (t < 0 || t >= config_.n_vocab) {
        return invalid_argument(fmt::format("token id {} is outside the vocabulary (0..{})", t, config_.n_vocab - 1));
      }
    }
    const int64_t end = ch.start_pos + static_cast<int64_t>(ch.tokens.size());
    if (config_.max_positions() > 0 && end > config_.max_positions()) {
      return invalid_argument(fmt::format("chunk {}: position {} is past the model's {} learned positions", i, end - 1,
                                          config_.max_positions()));
    }
    const int64_t blocks_needed = (end + kv.block_size() - 1) / kv.block_size();
    if (ch.start_pos < 0 || static_cast<int64_t>(ch.block_table.size()) < blocks_needed) {
      return invalid_argument(fmt::format("chunk {}: block table of {} blocks cannot hold {} positions", i,
                                          ch.block_table.size(), end));
    }
    if (ch.adapter != nullptr && ch.adapter->base_identity() != identity_) {
      return invalid_argument(fmt::format("chunk {}: its adapter was loaded for another base model", i));
    }
    if (ch.adapter != nullptr && (shard_.split() || shard_.pipelined())) {
      return unimplemented(fmt::format("chunk {}: LoRA adapters are not applied under tensor or pipeline parallelism", i));
    }
    for (int32_t b : ch.block_table.first(static_cast<size_t>(blocks_needed))) {
      if (b < 0 || b >= kv.num_blocks()) return invalid_argument(fmt::format("chunk {}: block id {} out of range", i, b));
    }
  }
  return ok_status();
}

Status Model::forward(std::span<const SequenceChunk> chunks, KvCache& kv, ForwardState& s, ThreadPool& pool,
                      ForwardOutput& out) const {
  LLMS_RETURN_IF_ERROR(validate(chunks, kv));
  if (shard_.pipelined()) return forward_pipelined(chunks, kv, s, pool, out);
  const ModelConfig& c = config_;
  int64_t n_tokens = 0;
  for (const auto& ch : chunks) n_tokens += static_cast<int64_t>(ch.tokens.size());
  s.reserve(c, n_tokens);

  embed(chunks, n_tokens, s, pool);
  LLMS_RETURN_IF_ERROR(run_layers(chunks, n_tokens, kv, s, pool));
  const ScopedStepPart part(s.profile_, StepPart::kLogits);
  return compute_logits(chunks, s, pool, out);
}

Status Model::run_layers(std::span<const SequenceChunk> chunks, int64_t n_tokens, KvCache& kv, ForwardState& s,
                         ThreadPool& pool) const {
  const int first = static_cast<int>(shard_.layers.first), end = first + static_cast<int>(shard_.layers.count);
  // Each block's residual pass also norms the rows for the block after it.
  for (int l = first; l < end; ++l) {
    const LayerWeights& L = weights_.layers[static_cast<size_t>(l)];
    LLMS_RETURN_IF_ERROR(attention_block(l, chunks, n_tokens, kv, s, pool, l > first, {&L.ffn_norm, &L.ffn_norm_b}));
    NormWeights next;
    if (l + 1 < end) {
      const LayerWeights& N = weights_.layers[static_cast<size_t>(l + 1)];
      next = {&N.attn_norm, &N.attn_norm_b};
    }
    LLMS_RETURN_IF_ERROR(ffn_block(l, n_tokens, s, pool, true, next));
  }
  return ok_status();
}

void Model::embed(std::span<const SequenceChunk> chunks, int64_t n_tokens, ForwardState& s, ThreadPool& pool) const {
  const ModelConfig& c = config_;
  // Embedding rows: x [n_tokens, n_embd].
  float* x = s.x_.as<float>();
  std::optional<ScopedStepPart> embed_part(std::in_place, s.profile_, StepPart::kElementwise);
  s.slots_.clear();
  for (const auto& ch : chunks) {
    for (size_t i = 0; i < ch.tokens.size(); ++i) {
      s.slots_.push_back({ch.start_pos + static_cast<int64_t>(i), ch.block_table.data()});
    }
  }
  // RoPE's cos and sin, once per token for all layers.
  const int cs_size = c.rope_dim > 0 ? rope_table_size(c.rope_dim, c.rope_style) : 0;
  const bool long_rope = !inv_freq_long_.empty() && s.context_length_ > c.n_ctx_orig;
  const float* inv_freq = long_rope ? inv_freq_long_.data() : inv_freq_.data();
  if (static_cast<int64_t>(s.rope_cs_.size()) < n_tokens * cs_size * 4) {
    s.rope_cs_.resize(static_cast<size_t>(n_tokens * cs_size) * sizeof(float), false);
  }
  float* rope_cs = s.rope_cs_.as<float>();
  std::vector<int32_t>& token_ids = s.token_ids_;
  token_ids.clear();
  for (const auto& ch : chunks) token_ids.insert(token_ids.end(), ch.tokens.begin(), ch.tokens.end());
  group_adapters(chunks, s);
  const Tensor& pos_embd = weights_.position_embd;
  for_rows(pool, n_tokens, [&](int64_t t0, int64_t t1) {
    std::vector<float>& pos_row = position_row_scratch(c.n_embd);
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t pos = s.slots_[static_cast<size_t>(t)].pos;
      if (cs_size > 0) rope_table(pos, inv_freq, c.rope_dim, c.rope_style, rope_cs + t * cs_size);
      if (!shard_.first_stage()) continue;  // a later stage receives its rows
      float* xt = x + t * c.n_embd;
      decode_row(weights_.token_embd.dtype, weights_.token_embd.row(token_ids[static_cast<size_t>(t)]), xt, c.n_embd);
      if (c.learned_positions) {
        // With learned positions, plus the position's row.
        decode_row(pos_embd.dtype, pos_embd.row(pos), pos_row.data(), c.n_embd);
        add_inplace(xt, pos_row.data(), c.n_embd);
      }
      if (c.scale_embedding) {
        const float scale = std::sqrt(static_cast<float>(c.n_embd));
        for (int64_t j = 0; j < c.n_embd; ++j) xt[j] *= scale;
      }
    }
  });
  embed_part.reset();
}

Status Model::attention_block(int l, std::span<const SequenceChunk> chunks, int64_t n, KvCache& kv, ForwardState& s,
                              ThreadPool& pool, bool input_normed, NormWeights next) const {
  const ModelConfig& c = config_;
  const LayerWeights& L = weights_.layers[static_cast<size_t>(l)];
  float* x = s.x_.as<float>();
  float* xn = s.xn_.as<float>();
  float* q = s.q_.as<float>();    // [n, q_dim]
  float* k = s.k_.as<float>();    // [n, kv_dim]
  float* v = s.v_.as<float>();    // [n, kv_dim]
  float* att = s.att_.as<float>();  // [n, q_dim]
  StepProfile* prof = s.profile_;
  std::optional<ScopedStepPart> part;
  if (!input_normed) {
    part.emplace(prof, StepPart::kElementwise);
    norm_rows(x, L.attn_norm, L.attn_norm_b, n, xn, pool);
    part.reset();
  }
  {
    const MatmulOutput outs[] = {{&L.wq, q}, {&L.wk, k}, {&L.wv, v}};
    const char* const whats[] = {"attn_q", "attn_k", "attn_v"};
    products(outs, l, whats, xn, n, s, pool);
  }
  part.emplace(prof, StepPart::kElementwise);
  const KvLayerView layer = kv.layer(l - static_cast<int>(shard_.layers.first));  // a stage's cache holds its layers
  const int cs_size = c.rope_dim > 0 ? rope_table_size(c.rope_dim, c.rope_style) : 0;
  const float* rope_cs = s.rope_cs_.as<float>();
  // Per token: biases, RoPE with the pass's table, and the store of its key and value
  // (each token's own cache row).
  for_rows(pool, n, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      float* qt = q + t * c.q_dim();
      float* kt = k + t * c.kv_dim();
      float* vt = v + t * c.kv_dim();
      if (!L.bq.empty()) {
        add_inplace(qt, L.bq.data(), c.q_dim());
        add_inplace(kt, L.bk.data(), c.kv_dim());
        add_inplace(vt, L.bv.data(), c.kv_dim());
      }
      if (cs_size > 0) {
        rope_with(qt, c.n_head, c.head_dim, c.rope_dim, rope_cs + t * cs_size, c.rope_style);
        rope_with(kt, c.n_head_kv, c.head_dim, c.rope_dim, rope_cs + t * cs_size, c.rope_style);
      }
      const ForwardState::TokenSlot& slot = s.slots_[static_cast<size_t>(t)];
      kv_store(layer, slot.block_table, slot.pos, kt, vt);
    }
  });
  // RoPE's attn_factor multiplies cos and sin for both q and k: the score, its square.
  const float scale = c.rope_attn_factor * c.rope_attn_factor / std::sqrt(static_cast<float>(c.attn_scale_dim));
  s.queries_.clear();
  int64_t first = 0;
  for (const auto& ch : chunks) {
    AttentionQuery query;
    query.q = q + first * c.q_dim();
    query.n_q = static_cast<int>(ch.tokens.size());
    query.first_pos = ch.start_pos;
    query.block_table = ch.block_table.data();
    query.out = att + first * c.q_dim();
    query.softcap = c.attn_softcap;
    query.window = c.window_of(l);
    s.queries_.push_back(query);
    first += query.n_q;
  }
  part.emplace(prof, StepPart::kAttention);
  // Every sequence's attention in one job (all keys of the pass are stored by now, and
  // each query reads only its own sequence's blocks).
  paged_attention_batch(s.queries_, layer, c.n_head, scale, pool);
  part.reset();
  float* tmp = s.tmp_.as<float>();
  product(L.wo, l, "attn_output", att, n, tmp, s, pool);
  // [n, n_embd]: every rank's heads (pipeline stages hold whole layers: nothing to add)
  if (shard_.split()) LLMS_RETURN_IF_ERROR(tensor_ranks_->allreduce_sum(tmp, n * c.n_embd));
  part.emplace(prof, StepPart::kElementwise);
  add_residual(x, tmp, L.bo, L.attn_post_norm, n, pool, next, xn);
  return ok_status();
}

Status Model::ffn_block(int l, int64_t n, ForwardState& s, ThreadPool& pool, bool input_normed,
                        NormWeights next) const {
  const LayerWeights& L = weights_.layers[static_cast<size_t>(l)];
  float* x = s.x_.as<float>();
  float* xn = s.xn_.as<float>();
  float* tmp = s.tmp_.as<float>();
  std::optional<ScopedStepPart> part;
  if (!input_normed) {
    part.emplace(s.profile_, StepPart::kElementwise);
    norm_rows(x, L.ffn_norm, L.ffn_norm_b, n, xn, pool);
    part.reset();
  }
  if (config_.moe()) {
    expert_ffn(l, xn, n, tmp, s, pool);
  } else {
    dense_ffn(l, xn, n, tmp, s, pool);
  }
  if (shard_.split()) LLMS_RETURN_IF_ERROR(tensor_ranks_->allreduce_sum(tmp, n * config_.n_embd));  // [n, n_embd]: every rank's columns
  part.emplace(s.profile_, StepPart::kElementwise);
  add_residual(x, tmp, L.b_down, L.ffn_post_norm, n, pool, next, xn);
  return ok_status();
}

void Model::dense_ffn(int l, const float* xn, int64_t n, float* out, ForwardState& s, ThreadPool& pool) const {
  const ModelConfig& c = config_;
  const LayerWeights& L = weights_.layers[static_cast<size_t>(l)];
  float* gate = s.gate_.as<float>();  // [n, ff]
  float* up = s.up_.as<float>();      // [n, ff]
  StepProfile* prof = s.profile_;
  std::optional<ScopedStepPart> part;
  float* hidden = gate;  // [n, ff]: what ffn_down reads
  const int64_t ff = L.w_up.rows();
  const bool shared = c.moe();  // Qwen2-MoE's shared expert, under its own names
  if (c.ffn != FfnKind::kGelu) {
    const MatmulOutput outs[] = {{&L.w_gate, gate}, {&L.w_up, up}};
    const char* const whats[] = {shared ? "ffn_gate_shexp" : "ffn_gate", shared ? "ffn_up_shexp" : "ffn_up"};
    products(outs, l, whats, xn, n, s, pool);
    part.emplace(prof, StepPart::kElementwise);
    for_rows(pool, n, [&](int64_t t0, int64_t t1) {
      float* g = gate + t0 * ff;
      const float* u = up + t0 * ff;
      const int64_t count = (t1 - t0) * ff;
      if (c.ffn == FfnKind::kSwiGlu) {
        silu_mul(g, u, count, g);
      } else {
        gelu(g, count, g);
        for (int64_t i = 0; i < count; ++i) g[i] *= u[i];
      }
    });
  } else {
    product(L.w_up, l, "ffn_up", xn, n, up, s, pool);
    part.emplace(prof, StepPart::kElementwise);
    for_rows(pool, n, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        if (!L.b_up.empty()) add_inplace(up + t * ff, L.b_up.data(), ff);
      }
      gelu(up + t0 * ff, (t1 - t0) * ff, gate + t0 * ff);
    });
  }
  part.reset();
  product(L.w_down, l, shared ? "ffn_down_shexp" : "ffn_down", hidden, n, out, s, pool);
}

void Model::norm_rows(const float* x, const std::vector<float>& w, const std::vector<float>& b, int64_t n,
                      float* out) const {
  const int64_t d = config_.n_embd;
  for (int64_t t = 0; t < n; ++t) {
    if (config_.norm == NormKind::kRms) {
      rmsnorm(x + t * d, w.data(), d, config_.rms_eps, out + t * d);
    } else {
      layernorm(x + t * d, w.data(), b.empty() ? nullptr : b.data(), d, config_.rms_eps, out + t * d);
    }
  }
}

void Model::norm_rows(const float* x, const std::vector<float>& w, const std::vector<float>& b, int64_t n, float* out,
                      ThreadPool& pool) const {
  const int64_t d = config_.n_embd;
  for_rows(pool, n, [&](int64_t t0, int64_t t1) { norm_rows(x + t0 * d, w, b, t1 - t0, out + t0 * d); });
}

void Model::add_residual(float* x, float* y, const std::vector<float>& bias, const std::vector<float>& post_norm,
                         int64_t n, ThreadPool& pool, NormWeights next, float* xn) const {
  const int64_t d = config_.n_embd;
  for_rows(pool, n, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      float* yt = y + t * d;
      if (!bias.empty()) add_inplace(yt, bias.data(), d);
      if (!post_norm.empty()) norm_rows(yt, post_norm, {}, 1, yt);
      add_inplace(x + t * d, yt, d);
      if (next.w != nullptr) norm_rows(x + t * d, *next.w, *next.b, 1, xn + t * d);
    }
  });
}

void Model::products(std::span<const MatmulOutput> outs, int layer, std::span<const char* const> whats,
                     const float* x, int64_t n, ForwardState& s, ThreadPool& pool) const {
  if (s.observer_ != nullptr) {
    for (size_t i = 0; i < outs.size(); ++i) {
      const std::string name = layer < 0 ? (weights_.tied_output ? "token_embd.weight" : "output.weight")
                                         : fmt::format("blk.{}.{}.weight", layer, whats[i]);
      s.observer_->on_matmul(name, *outs[i].w, x, n);
    }
  }
  // The output head counts as logits (compute_logits times it whole).
  std::optional<ScopedStepPart> part;
  if (layer >= 0) part.emplace(s.profile_, StepPart::kMatmul);
  matmul_shared_input(outs, x, n, pool);
  if (layer >= 0 && s.num_adapter_groups_ > 0) {
    part.emplace(s.profile_, StepPart::kLora);  // the adapters' share of the step, apart from the base's products
    add_adapters(outs, layer, whats, x, s, pool);
  }
}

}  // namespace llms
