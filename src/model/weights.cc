#include "model/weights.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <initializer_list>

#include "quant/row_convert.h"

namespace llms {
namespace {

// A rank's rows and columns of a matrix (kAll: all of them).
constexpr ShardRange kAll{0, -1};
struct Cut {
  ShardRange rows = kAll;
  ShardRange cols = kAll;
};

class Loader {
 public:
  explicit Loader(const GgufFile& f) : f_(f) {}

  Result<const GgufTensorInfo*> tensor(const std::string& name, std::initializer_list<int64_t> shape) const {
    const GgufTensorInfo* t = f_.find_tensor(name);
    if (t == nullptr) return not_found(fmt::format("tensor '{}' is missing", name));
    bool ok = t->n_dims == static_cast<int>(shape.size());
    int i = 0;
    for (int64_t d : shape) ok = ok && t->ne[i++] == d;
    if (!ok) {
      std::string want = "[";
      for (int64_t d : shape) want += (want.size() > 1 ? ", " : "") + std::to_string(d);
      return invalid_argument(fmt::format("tensor '{}' has shape {}, expected {}", name, t->view().shape_string(), want + "]"));
    }
    return t;
  }

  // Repacked, so the file's pages of it are released: the weights are resident once.
  // `cut`: the rows and columns this rank holds (tensor_shard.h).
  Result<WeightMatrix> matrix(const std::string& name, int64_t cols, int64_t rows, const Cut& cut = {}) const {
    LLMS_ASSIGN_OR_RETURN(const GgufTensorInfo* t, tensor(name, {cols, rows}));
    std::vector<int64_t> order;  // set for rows stored in another order: packed from them
    const TensorData d = f_.read_rows(*t, &order);
    auto m = order.empty() ? repack_cut(d, d.view(), cut, name) : reordered_cut(d.view(), std::move(order), cut, name);
    f_.release_pages(*t);
    return m;
  }

  // The [rows, cols] matrix `name` cut into row ranges (`parts`, whole rows): the
  // parts of a fused tensor (attn_qkv holds Q, K and V one after the other), read once.
  Result<std::vector<WeightMatrix>> split_rows(const std::string& name, int64_t cols, int64_t rows,
                                               std::initializer_list<ShardRange> parts) const {
    LLMS_ASSIGN_OR_RETURN(const GgufTensorInfo* t, tensor(name, {cols, rows}));
    const TensorData d = f_.read(*t);
    std::vector<WeightMatrix> out;
    for (const ShardRange& part : parts) {
      LLMS_ASSIGN_OR_RETURN(WeightMatrix m, repack_cut(d, d.view(), Cut{part, kAll}, name));
      out.push_back(std::move(m));
    }
    f_.release_pages(*t);
    return out;
  }

  // The `count` [rows, cols] matrices of the 3-D tensor `name` [cols, rows, count]
  // (one per expert), each cut by `cut` and repacked; then the file's pages of it are
  // released.
  Result<std::vector<WeightMatrix>> stacked(const std::string& name, int64_t cols, int64_t rows, int64_t count,
                                            const Cut& cut = {}) const {
    LLMS_ASSIGN_OR_RETURN(const GgufTensorInfo* t, tensor(name, {cols, rows, count}));
    const TensorData d = f_.read(*t);
    std::vector<WeightMatrix> out;
    for (int64_t e = 0; e < count; ++e) {
      Tensor part = d.view();
      part.n_dims = 2;
      part.ne = {cols, rows, 1, 1};
      part.data = d.view().row(e * rows);
      LLMS_ASSIGN_OR_RETURN(WeightMatrix m, repack_cut(d, part, cut, name));
      out.push_back(std::move(m));
    }
    f_.release_pages(*t);
    return out;
  }

  // Elements [first, first + count) of the vector `name` of n elements.
  Result<std::vector<float>> vector_part(const std::string& name, int64_t n, int64_t first, int64_t count) const {
    LLMS_ASSIGN_OR_RETURN(std::vector<float> v, vector(name, n));
    return std::vector<float>(v.begin() + first, v.begin() + first + count);
  }

  // The vector `name` if the file has it, else an empty one.
  Result<std::vector<float>> optional_vector(const std::string& name, int64_t n) const {
    if (!has(name)) return std::vector<float>();
    return vector(name, n);
  }

  Result<std::vector<float>> vector(const std::string& name, int64_t n) const {
    LLMS_ASSIGN_OR_RETURN(const GgufTensorInfo* t, tensor(name, {n}));
    if (!can_dequantize(t->dtype)) {
      return unimplemented(fmt::format("tensor '{}' has type {}, unsupported for vectors", name, dtype_name(t->dtype)));
    }
    std::vector<float> v(static_cast<size_t>(n));
    dequantize_row(t->dtype, f_.read(*t).data(), v.data(), n);
    f_.release_pages(*t);
    return v;
  }

  bool has(const std::string& name) const { return f_.find_tensor(name) != nullptr; }

 private:
  // `part` of the bytes `d`: a derived tensor's copy ends with the load, so the
  // matrix keeps none of it.
  static Result<WeightMatrix> repack(const TensorData& d, const Tensor& part, const std::string& name) {
    return d.owned() ? WeightMatrix::from_transient(part, name) : WeightMatrix::from_tensor(part, name);
  }

  // The rows and columns `cut` of the 2-D `part` of `d`, repacked. Cut columns are
  // copied out whole blocks at a time (TensorShard::plan() puts them on block boundaries).
  static Result<WeightMatrix> repack_cut(const TensorData& d, Tensor part, const Cut& cut, const std::string& name) {
    if (cut.rows.count >= 0) {
      part.data = part.row(cut.rows.first);
      part.ne[1] = cut.rows.count;
    }
    if (cut.cols.count < 0 || cut.cols.count == part.ne[0]) return repack(d, part, name);
    const DTypeInfo& info = dtype_info(part.dtype);
    if (cut.cols.first % info.block_size != 0 || cut.cols.count % info.block_size != 0) {
      return internal_error(fmt::format("{}: columns [{}, +{}) are not on {}'s blocks", name, cut.cols.first,
                                        cut.cols.count, info.name));
    }
    const int64_t rows = part.ne[1], width = dtype_row_bytes(part.dtype, cut.cols.count);
    const int64_t offset = cut.cols.first / info.block_size * info.type_size;
    std::vector<uint8_t> bytes(static_cast<size_t>(rows * width));  // [rows, cut columns]
    for (int64_t r = 0; r < rows; ++r) std::memcpy(bytes.data() + r * width, part.row(r) + offset, static_cast<size_t>(width));
    part.ne[0] = cut.cols.count;
    part.data = bytes.data();
    return WeightMatrix::from_transient(part, name);
  }

  // The rows `cut` of the 2-D `part` whose row i is stored at row order[i], packed
  // from where they lie. A rank's rows are whole heads and a reordering stays inside
  // a head, so the rank's rows are stored among its own rows.
  static Result<WeightMatrix> reordered_cut(Tensor part, std::vector<int64_t> order, const Cut& cut,
                                            const std::string& name) {
    if (cut.cols.count >= 0 && cut.cols.count != part.ne[0]) {
      return internal_error(fmt::format("{}: rows stored in another order are not cut by columns", name));
    }
    if (cut.rows.count >= 0) {
      const int64_t first = cut.rows.first, count = cut.rows.count;
      std::vector<int64_t> mine(order.begin() + first, order.begin() + first + count);
      for (int64_t& r : mine) {
        r -= first;
        if (r < 0 || r >= count) {
          return internal_error(fmt::format("{}: row order moves rows across the cut [{}, +{})", name, first, count));
        }
      }
      part.data = part.row(first);
      part.ne[1] = count;
      order = std::move(mine);
    }
    return WeightMatrix::from_reordered(part, order, name);
  }

  const GgufFile& f_;
};

// Q, K and V of layer prefix `p` (this rank's heads): three tensors, or one fused
// attn_qkv (rows Q then K then V) with an optional fused bias.
Status load_qkv(const Loader& ld, const std::string& p, const ModelConfig& c, const TensorShard& s, LayerWeights& L) {
  const int64_t q = c.q_dim(), kv = c.kv_dim(), d = c.n_embd, hd = c.head_dim;
  const ShardRange qs{s.heads.first * hd, s.heads.count * hd}, kvs{s.kv_heads.first * hd, s.kv_heads.count * hd};
  if (ld.has(p + "attn_qkv.weight")) {
    const ShardRange ks{q + kvs.first, kvs.count}, vs{q + kv + kvs.first, kvs.count};
    LLMS_ASSIGN_OR_RETURN(std::vector<WeightMatrix> qkv, ld.split_rows(p + "attn_qkv.weight", d, q + 2 * kv, {qs, ks, vs}));
    L.wq = std::move(qkv[0]);
    L.wk = std::move(qkv[1]);
    L.wv = std::move(qkv[2]);
    if (ld.has(p + "attn_qkv.bias")) {
      const std::string b = p + "attn_qkv.bias";
      LLMS_ASSIGN_OR_RETURN(L.bq, ld.vector_part(b, q + 2 * kv, qs.first, qs.count));
      LLMS_ASSIGN_OR_RETURN(L.bk, ld.vector_part(b, q + 2 * kv, ks.first, ks.count));
      LLMS_ASSIGN_OR_RETURN(L.bv, ld.vector_part(b, q + 2 * kv, vs.first, vs.count));
    }
    return ok_status();
  }
  LLMS_ASSIGN_OR_RETURN(L.wq, ld.matrix(p + "attn_q.weight", d, q, Cut{qs, kAll}));
  LLMS_ASSIGN_OR_RETURN(L.wk, ld.matrix(p + "attn_k.weight", d, kv, Cut{kvs, kAll}));
  LLMS_ASSIGN_OR_RETURN(L.wv, ld.matrix(p + "attn_v.weight", d, kv, Cut{kvs, kAll}));
  if (ld.has(p + "attn_q.bias")) {
    LLMS_ASSIGN_OR_RETURN(L.bq, ld.vector_part(p + "attn_q.bias", q, qs.first, qs.count));
    LLMS_ASSIGN_OR_RETURN(L.bk, ld.vector_part(p + "attn_k.bias", kv, kvs.first, kvs.count));
    LLMS_ASSIGN_OR_RETURN(L.bv, ld.vector_part(p + "attn_v.bias", kv, kvs.first, kvs.count));
  }
  return ok_status();
}

// A norm's weight, and its bias when the model uses LayerNorm.
Status load_norm(const Loader& ld, const std::string& name, const ModelConfig& c, std::vector<float>& w,
                 std::vector<float>& b) {
  LLMS_ASSIGN_OR_RETURN(w, ld.vector(name + ".weight", c.n_embd));
  if (c.norm == NormKind::kLayer) {
    LLMS_ASSIGN_OR_RETURN(b, ld.vector(name + ".bias", c.n_embd));
  }
  return ok_status();
}

// A mixture of experts' router and experts (each cut within: this rank's hidden
// columns of every expert), and Qwen2-MoE's shared expert. Files that store each
// expert as tensors of its own (ffn_gate.E.weight, from converters before the stacked
// layout) are refused by name.
Status load_experts(const Loader& ld, const std::string& p, const ModelConfig& c, const TensorShard& s,
                    LayerWeights& L) {
  const int64_t d = c.n_embd, ff = c.n_ff_exp, n = c.n_expert;
  if (!ld.has(p + "ffn_gate_exps.weight") && ld.has(p + "ffn_gate.0.weight")) {
    return unimplemented(fmt::format("{}ffn_gate.0.weight: experts stored one tensor each (an older layout) are not "
                                     "supported; convert the model again for stacked ffn_*_exps tensors", p));
  }
  LLMS_ASSIGN_OR_RETURN(L.router, ld.matrix(p + "ffn_gate_inp.weight", d, n));
  LLMS_ASSIGN_OR_RETURN(std::vector<WeightMatrix> gates, ld.stacked(p + "ffn_gate_exps.weight", d, ff, n, Cut{s.ff_exp, kAll}));
  LLMS_ASSIGN_OR_RETURN(std::vector<WeightMatrix> ups, ld.stacked(p + "ffn_up_exps.weight", d, ff, n, Cut{s.ff_exp, kAll}));
  LLMS_ASSIGN_OR_RETURN(std::vector<WeightMatrix> downs,
                        ld.stacked(p + "ffn_down_exps.weight", ff, d, n, Cut{kAll, s.ff_exp}));
  for (int64_t e = 0; e < n; ++e) {
    L.experts.push_back({std::move(gates[e]), std::move(ups[e]), std::move(downs[e])});
  }
  if (c.n_ff_shexp > 0) {
    const int64_t sh = c.n_ff_shexp;
    LLMS_ASSIGN_OR_RETURN(L.shexp_gate, ld.vector(p + "ffn_gate_inp_shexp.weight", d));
    LLMS_ASSIGN_OR_RETURN(L.w_gate, ld.matrix(p + "ffn_gate_shexp.weight", d, sh, Cut{s.ff_shexp, kAll}));
    LLMS_ASSIGN_OR_RETURN(L.w_up, ld.matrix(p + "ffn_up_shexp.weight", d, sh, Cut{s.ff_shexp, kAll}));
    LLMS_ASSIGN_OR_RETURN(L.w_down, ld.matrix(p + "ffn_down_shexp.weight", sh, d, Cut{kAll, s.ff_shexp}));
  }
  return ok_status();
}

Status load_layer(const Loader& ld, int l, const ModelConfig& c, const TensorShard& s, LayerWeights& L) {
  const std::string p = fmt::format("blk.{}.", l);
  const int64_t d = c.n_embd, ff = c.n_ff;
  LLMS_RETURN_IF_ERROR(load_norm(ld, p + "attn_norm", c, L.attn_norm, L.attn_norm_b));
  LLMS_RETURN_IF_ERROR(load_qkv(ld, p, c, s, L));
  const ShardRange o_cols{s.heads.first * c.head_dim, s.heads.count * c.head_dim};
  LLMS_ASSIGN_OR_RETURN(L.wo, ld.matrix(p + "attn_output.weight", c.q_dim(), d, Cut{kAll, o_cols}));
  LLMS_ASSIGN_OR_RETURN(L.bo, ld.optional_vector(p + "attn_output.bias", d));
  if (c.arch == Architecture::kGemma2) {
    LLMS_ASSIGN_OR_RETURN(L.attn_post_norm, ld.vector(p + "post_attention_norm.weight", d));
    LLMS_ASSIGN_OR_RETURN(L.ffn_post_norm, ld.vector(p + "post_ffw_norm.weight", d));
  }
  LLMS_RETURN_IF_ERROR(load_norm(ld, p + "ffn_norm", c, L.ffn_norm, L.ffn_norm_b));
  if (c.moe()) return load_experts(ld, p, c, s, L);
  const bool gated = c.ffn != FfnKind::kGelu;
  const Cut rows{s.ff, kAll};
  if (gated && !ld.has(p + "ffn_gate.weight")) {
    // Fused (Phi-3): ffn_up holds the gate's rows, then the up rows.
    LLMS_ASSIGN_OR_RETURN(std::vector<WeightMatrix> gate_up,
                          ld.split_rows(p + "ffn_up.weight", d, 2 * ff, {s.ff, ShardRange{ff + s.ff.first, s.ff.count}}));
    L.w_gate = std::move(gate_up[0]);
    L.w_up = std::move(gate_up[1]);
  } else {
    if (gated) {
      LLMS_ASSIGN_OR_RETURN(L.w_gate, ld.matrix(p + "ffn_gate.weight", d, ff, rows));
    }
    LLMS_ASSIGN_OR_RETURN(L.w_up, ld.matrix(p + "ffn_up.weight", d, ff, rows));
  }
  LLMS_ASSIGN_OR_RETURN(L.w_down, ld.matrix(p + "ffn_down.weight", ff, d, Cut{kAll, s.ff}));
  if (ld.has(p + "ffn_up.bias")) {
    LLMS_ASSIGN_OR_RETURN(L.b_up, ld.vector_part(p + "ffn_up.bias", ff, s.ff.first, s.ff.count));
  }
  LLMS_ASSIGN_OR_RETURN(L.b_down, ld.optional_vector(p + "ffn_down.bias", d));
  return ok_status();
}

// A [rows, cols] table read in place, one row per use (embeddings).
Result<Tensor> load_table(const Loader& ld, const std::string& name, int64_t cols, int64_t rows) {
  LLMS_ASSIGN_OR_RETURN(const GgufTensorInfo* t, ld.tensor(name, {cols, rows}));
  if (t->data == nullptr) return internal_error(fmt::format("{} is computed at load; tables are read in place", name));
  if (!can_dequantize(t->dtype)) {
    return unimplemented(fmt::format("{} has type {}, which cannot be decoded", name, dtype_name(t->dtype)));
  }
  return t->view();
}

// An optional set of RoPE frequency divisors: positive and finite.
Result<std::vector<float>> load_rope_factors(const Loader& ld, const std::string& name, const ModelConfig& c) {
  LLMS_ASSIGN_OR_RETURN(std::vector<float> v, ld.optional_vector(name, c.rope_dim / 2));
  for (float f : v) {
    if (!(f > 0.0f) || !std::isfinite(f)) return invalid_argument(fmt::format("tensor '{}' holds {}: factors must be positive", name, f));
  }
  return v;
}

}  // namespace

Result<ModelWeights> ModelWeights::load(const GgufFile& file, const ModelConfig& c) {
  LLMS_ASSIGN_OR_RETURN(const TensorShard whole, TensorShard::plan(file, c, 0, 1));
  return load(file, c, whole);
}

Result<ModelWeights> ModelWeights::load(const GgufFile& file, const ModelConfig& c, const TensorShard& s) {
  Loader ld(file);
  ModelWeights w;
  LLMS_ASSIGN_OR_RETURN(w.token_embd, load_table(ld, "token_embd.weight", c.n_embd, c.n_vocab));
  if (c.learned_positions) {
    LLMS_ASSIGN_OR_RETURN(w.position_embd, load_table(ld, "position_embd.weight", c.n_embd, c.n_ctx_train));
  }
  w.tied_output = !ld.has("output.weight");
  if (s.last_stage()) {  // under pipeline parallelism the last stage alone runs the head
    LLMS_RETURN_IF_ERROR(load_norm(ld, "output_norm", c, w.output_norm, w.output_norm_b));
    const std::string out_name = w.tied_output ? "token_embd.weight" : "output.weight";
    LLMS_ASSIGN_OR_RETURN(w.output, ld.matrix(out_name, c.n_embd, c.n_vocab, Cut{s.vocab, kAll}));
  }
  LLMS_ASSIGN_OR_RETURN(w.rope_freqs, load_rope_factors(ld, "rope_freqs.weight", c));
  LLMS_ASSIGN_OR_RETURN(w.rope_factors_short, load_rope_factors(ld, "rope_factors_short.weight", c));
  LLMS_ASSIGN_OR_RETURN(w.rope_factors_long, load_rope_factors(ld, "rope_factors_long.weight", c));
  if (w.rope_factors_short.empty() != w.rope_factors_long.empty()) {
    return invalid_argument("LongRoPE needs both rope_factors_short.weight and rope_factors_long.weight");
  }
  w.experts_used = c.n_expert_used;
  w.layers.resize(static_cast<size_t>(c.n_layer));
  // A pipeline stage holds its layers only; the others stay empty.
  for (int64_t l = s.layers.first; l < s.layers.first + s.layers.count; ++l) {
    LLMS_RETURN_IF_ERROR(load_layer(ld, static_cast<int>(l), c, s, w.layers[static_cast<size_t>(l)]));
  }
  return w;
}

std::vector<const WeightMatrix*> LayerWeights::dense_matrices() const {
  std::vector<const WeightMatrix*> out;
  for (const WeightMatrix* w : {&wq, &wk, &wv, &wo, &w_gate, &w_up, &w_down}) {
    if (w->loaded()) out.push_back(w);  // a GELU MLP has no gate; most MoE no shared expert
  }
  return out;
}

WeightsMemory ModelWeights::memory() const {
  WeightsMemory m;
  auto add_vector = [&](const std::vector<float>& v) { m.owned_bytes += static_cast<int64_t>(v.size() * sizeof(float)); };
  if (output.loaded()) m.owned_bytes += output.packed_bytes();
  for (const auto* v : {&output_norm, &output_norm_b, &rope_freqs, &rope_factors_short, &rope_factors_long}) {
    add_vector(*v);
  }
  for (const auto& L : layers) {
    for (const WeightMatrix* w : L.dense_matrices()) m.owned_bytes += w->packed_bytes();
    if (L.router.loaded()) m.owned_bytes += L.router.packed_bytes();
    for (const auto& e : L.experts) m.owned_bytes += e.gate.packed_bytes() + e.up.packed_bytes() + e.down.packed_bytes();
    for (const auto* v : {&L.attn_norm, &L.attn_norm_b, &L.bq, &L.bk, &L.bv, &L.bo, &L.attn_post_norm, &L.ffn_norm,
                          &L.ffn_norm_b, &L.ffn_post_norm, &L.b_up, &L.b_down, &L.shexp_gate}) {
      add_vector(*v);
    }
  }
  m.mapped_bytes = token_embd.num_bytes() + (position_embd.data != nullptr ? position_embd.num_bytes() : 0);
  return m;
}

namespace {

// What `f` sums over the matrices one token reads (its chosen experts counted as
// `used` times the first one).
template <typename F>
int64_t per_token(const ModelWeights& w, F&& f) {
  int64_t total = w.output.loaded() ? f(w.output) : 0;
  for (const auto& L : w.layers) {
    for (const WeightMatrix* m : L.dense_matrices()) total += f(*m);
    if (!L.experts.empty()) {
      const auto& e = L.experts.front();
      total += f(L.router) + w.experts_used * (f(e.gate) + f(e.up) + f(e.down));
    }
  }
  return total;
}

}  // namespace

int64_t ModelWeights::bytes_per_token() const {
  int64_t bytes = per_token(*this, [](const WeightMatrix& m) { return m.num_bytes(); }) + token_embd.row_bytes();
  if (position_embd.data != nullptr) bytes += position_embd.row_bytes();
  return bytes;
}

int64_t ModelWeights::macs_per_token() const {
  return per_token(*this, [](const WeightMatrix& m) { return m.rows() * m.cols(); });
}

}  // namespace llms
