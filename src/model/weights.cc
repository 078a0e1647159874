#include "model/weights.h"

#include <fmt/format.h>

#include <initializer_list>

#include "quant/row_convert.h"

namespace llms {
namespace {

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
  Result<WeightMatrix> matrix(const std::string& name, int64_t cols, int64_t rows) const {
    LLMS_ASSIGN_OR_RETURN(const GgufTensorInfo* t, tensor(name, {cols, rows}));
    auto m = WeightMatrix::from_tensor(t->view(), name);
    f_.release_pages(*t);
    return m;
  }

  Result<std::vector<float>> vector(const std::string& name, int64_t n) const {
    LLMS_ASSIGN_OR_RETURN(const GgufTensorInfo* t, tensor(name, {n}));
    if (!can_dequantize(t->dtype)) {
      return unimplemented(fmt::format("tensor '{}' has type {}, unsupported for vectors", name, dtype_name(t->dtype)));
    }
    std::vector<float> v(static_cast<size_t>(n));
    dequantize_row(t->dtype, t->data, v.data(), n);
    f_.release_pages(*t);
    return v;
  }

  bool has(const std::string& name) const { return f_.find_tensor(name) != nullptr; }

 private:
  const GgufFile& f_;
};

}  // namespace

Result<ModelWeights> ModelWeights::load(const GgufFile& file, const ModelConfig& c) {
  Loader ld(file);
  ModelWeights w;
  LLMS_ASSIGN_OR_RETURN(const GgufTensorInfo* emb, ld.tensor("token_embd.weight", {c.n_embd, c.n_vocab}));
  if (!can_dequantize(emb->dtype)) {
    return unimplemented(fmt::format("token_embd.weight has type {}, which cannot be decoded", dtype_name(emb->dtype)));
  }
  w.token_embd = emb->view();
  LLMS_ASSIGN_OR_RETURN(w.output_norm, ld.vector("output_norm.weight", c.n_embd));
  w.tied_output = !ld.has("output.weight");
  const std::string out_name = w.tied_output ? "token_embd.weight" : "output.weight";
  LLMS_ASSIGN_OR_RETURN(w.output, ld.matrix(out_name, c.n_embd, c.n_vocab));

  const bool qkv_bias = ld.has("blk.0.attn_q.bias");
  w.layers.resize(static_cast<size_t>(c.n_layer));
  for (int l = 0; l < c.n_layer; ++l) {
    LayerWeights& L = w.layers[static_cast<size_t>(l)];
    const std::string p = fmt::format("blk.{}.", l);
    LLMS_ASSIGN_OR_RETURN(L.attn_norm, ld.vector(p + "attn_norm.weight", c.n_embd));
    LLMS_ASSIGN_OR_RETURN(L.wq, ld.matrix(p + "attn_q.weight", c.n_embd, c.q_dim()));
    LLMS_ASSIGN_OR_RETURN(L.wk, ld.matrix(p + "attn_k.weight", c.n_embd, c.kv_dim()));
    LLMS_ASSIGN_OR_RETURN(L.wv, ld.matrix(p + "attn_v.weight", c.n_embd, c.kv_dim()));
    LLMS_ASSIGN_OR_RETURN(L.wo, ld.matrix(p + "attn_output.weight", c.q_dim(), c.n_embd));
    if (qkv_bias) {
      LLMS_ASSIGN_OR_RETURN(L.bq, ld.vector(p + "attn_q.bias", c.q_dim()));
      LLMS_ASSIGN_OR_RETURN(L.bk, ld.vector(p + "attn_k.bias", c.kv_dim()));
      LLMS_ASSIGN_OR_RETURN(L.bv, ld.vector(p + "attn_v.bias", c.kv_dim()));
    }
    LLMS_ASSIGN_OR_RETURN(L.ffn_norm, ld.vector(p + "ffn_norm.weight", c.n_embd));
    LLMS_ASSIGN_OR_RETURN(L.w_gate, ld.matrix(p + "ffn_gate.weight", c.n_embd, c.n_ff));
    LLMS_ASSIGN_OR_RETURN(L.w_up, ld.matrix(p + "ffn_up.weight", c.n_embd, c.n_ff));
    LLMS_ASSIGN_OR_RETURN(L.w_down, ld.matrix(p + "ffn_down.weight", c.n_ff, c.n_embd));
  }
  return w;
}

WeightsMemory ModelWeights::memory() const {
  WeightsMemory m;
  auto add_vector = [&](const std::vector<float>& v) { m.owned_bytes += static_cast<int64_t>(v.size() * sizeof(float)); };
  m.owned_bytes += output.packed_bytes();
  add_vector(output_norm);
  for (const auto& L : layers) {
    for (const WeightMatrix* w : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down}) {
      m.owned_bytes += w->packed_bytes();
    }
    for (const auto* v : {&L.attn_norm, &L.bq, &L.bk, &L.bv, &L.ffn_norm}) add_vector(*v);
  }
  m.mapped_bytes = token_embd.num_bytes();
  return m;
}

int64_t ModelWeights::bytes_per_token() const {
  int64_t bytes = output.num_bytes() + token_embd.row_bytes();
  for (const auto& L : layers) {
    for (const WeightMatrix* m : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down}) bytes += m->num_bytes();
  }
  return bytes;
}

}  // namespace llms
