// A Hugging Face directory's tensors -> llama.cpp's GGUF tensors: names, and the layouts
// that differ, computed when read (io/hf_model.h).
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <unordered_map>

#include "io/hf_mapping.h"
#include "quant/half.h"

namespace llms {
namespace {

// How a GGUF tensor is made from the directory's.
struct Recipe {
  enum Kind { kInPlace, kPermute, kTranspose, kStack, kVector, kValues } kind = kInPlace;
  std::vector<const SafetensorsTensor*> src;  // kStack: one per expert, in order
  int permute_heads = 0;                      // kPermute, kVector: heads of llama.cpp's rotary order
  float offset = 0.0f;                        // kVector: added (Gemma's norms)
  std::vector<float> values;                  // kValues
};

// Where one directory tensor goes.
struct Target {
  std::string name;           // GGUF name
  int permute_heads = 0;      // Q/K of the LLaMA family
  int expert = -1;            // >= 0: one expert of a stacked tensor
};

float to_f32(const uint8_t* p, DType type) {
  if (type == DType::kF32) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, p, 2);
  return type == DType::kF16 ? f16_to_f32(h) : bits_to_float(static_cast<uint32_t>(h) << 16);
}

class HfSource : public GgufTensorSource {
 public:
  explicit HfSource(HfCheckpoint ckpt) : ckpt_(std::move(ckpt)) {}
  const HfCheckpoint& checkpoint() const { return ckpt_; }
  void add(const std::string& name, Recipe r) { recipes_[name] = std::move(r); }

  void derive(const GgufTensorInfo& t, std::span<uint8_t> out) const override {
    const Recipe& r = recipes_.at(t.name);
    for (const SafetensorsTensor* s : r.src) shard_call(s->data, s->num_bytes, &MappedFile::populate);
    switch (r.kind) {
      case Recipe::kInPlace:
        std::memcpy(out.data(), r.src[0]->data, out.size());
        break;
      case Recipe::kPermute: {
        const SafetensorsTensor& s = *r.src[0];
        permute_rotary_rows(s.data, out.data(), s.shape[0], static_cast<int64_t>(s.num_bytes) / s.shape[0],
                            r.permute_heads, false);
        break;
      }
      case Recipe::kTranspose: {
        const SafetensorsTensor& s = *r.src[0];
        transpose_matrix(s.data, out.data(), s.shape[0], s.shape[1], s.element_size);
        break;
      }
      case Recipe::kStack: {
        size_t at = 0;
        for (const SafetensorsTensor* s : r.src) {
          std::memcpy(out.data() + at, s->data, s->num_bytes);
          at += s->num_bytes;
        }
        break;
      }
      case Recipe::kVector: derive_vector(r, out); break;
      case Recipe::kValues: std::memcpy(out.data(), r.values.data(), out.size()); break;
    }
    // The copy is what the reader keeps: the file's pages it was made from need not
    // stay resident (they read the same if mapped again).
    for (const SafetensorsTensor* s : r.src) release(s->data, s->num_bytes);
  }

  const uint8_t* reordered_rows(const GgufTensorInfo& t, std::vector<int64_t>* order) const override {
    const Recipe& r = recipes_.at(t.name);
    if (r.kind != Recipe::kPermute) return nullptr;
    const SafetensorsTensor& s = *r.src[0];
    shard_call(s.data, s.num_bytes, &MappedFile::populate);
    *order = rotary_row_order(s.shape[0], r.permute_heads);
    return s.data;
  }

  void release_sources(const GgufTensorInfo& t) const override {
    for (const SafetensorsTensor* s : recipes_.at(t.name).src) release(s->data, s->num_bytes);
  }

  void release(const uint8_t* data, uint64_t num_bytes) const override {
    shard_call(data, num_bytes, &MappedFile::release);
  }
  void release_all() const override {
    for (const auto& s : ckpt_.shards()) {
      if (s.mapping() != nullptr) s.mapping()->release(0, s.mapping()->size());
    }
  }
  int64_t resident_bytes() const override {
    int64_t n = 0;
    for (const auto& s : ckpt_.shards()) {
      const int64_t r = s.mapping() != nullptr ? s.mapping()->resident_bytes() : 0;
      if (r < 0) return -1;
      n += r;
    }
    return n;
  }

 private:
  // `op` (release, populate) on the bytes [data, data + n) of the shard holding them.
  void shard_call(const uint8_t* data, uint64_t n, void (MappedFile::*op)(uint64_t, uint64_t) const) const {
    for (const auto& s : ckpt_.shards()) {
      const MappedFile* m = s.mapping();
      if (m != nullptr && data >= m->data() && data < m->data() + m->size()) (m->*op)(data - m->data(), n);
    }
  }

  // A vector as F32: decoded, offset, and for a Q/K bias permuted as its rows.
  static void derive_vector(const Recipe& r, std::span<uint8_t> out) {
    const SafetensorsTensor& s = *r.src[0];
    const int64_t n = s.num_elements();
    std::vector<float> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = to_f32(s.data + i * s.element_size, *s.dtype) + r.offset;
    if (r.permute_heads > 0) {
      permute_rotary_rows(reinterpret_cast<const uint8_t*>(v.data()), out.data(), n, 4, r.permute_heads, false);
    } else {
      std::memcpy(out.data(), v.data(), out.size());
    }
  }

  HfCheckpoint ckpt_;
  std::unordered_map<std::string, Recipe> recipes_;
};

// "model.layers.12.self_attn.q_proj.weight" -> 12 and "self_attn.q_proj.weight".
bool split_layer(const std::string& name, const std::string& prefix, int* layer, std::string* rest) {
  if (name.compare(0, prefix.size(), prefix) != 0) return false;
  size_t at = prefix.size(), end = at;
  while (end < name.size() && end - at < 6 && std::isdigit(static_cast<unsigned char>(name[end]))) ++end;
  if (end == at || end >= name.size() || name[end] != '.') return false;
  *layer = std::stoi(name.substr(at, end - at));
  *rest = name.substr(end + 1);
  return true;
}

// "experts.7.w1.weight" after `prefix` "experts." -> 7 and "w1.weight".
bool split_expert(const std::string& rest, const std::string& prefix, int* expert, std::string* tail) {
  return split_layer(rest, prefix, expert, tail);
}

// Buffers some checkpoints carry that are not weights.
bool ignored(const std::string& rest) {
  return rest == "self_attn.rotary_emb.inv_freq" || rest == "attn.bias" || rest == "attn.masked_bias";
}

// The expert tensors of Mixtral (block_sparse_moe.experts.E.w1/w2/w3) and Qwen2-MoE
// (mlp.experts.E.gate_proj/up_proj/down_proj).
std::optional<Target> expert_target(const HfPlan& plan, const std::string& rest, int layer) {
  int e = 0;
  std::string tail;
  if (!split_expert(rest, hf_expert_prefix(plan), &e, &tail)) return std::nullopt;
  const std::string_view gguf = find_name(hf_expert_names(plan), tail, false);
  if (gguf.empty()) return std::nullopt;
  return Target{fmt::format("blk.{}.{}", layer, gguf), 0, e};
}

// Where the directory tensor `name` goes; nullopt for a buffer to skip; an error for a
// tensor llmserve knows no place for.
Result<std::optional<Target>> target_of(const HfPlan& plan, std::string name) {
  const bool gpt2 = plan.arch == "gpt2";
  if (gpt2 && name.rfind("transformer.", 0) == 0) name = name.substr(12);
  if (const std::string_view top = find_name(hf_top_names(plan), name, false); !top.empty()) {
    return std::optional<Target>(Target{std::string(top)});
  }
  int layer = 0;
  std::string rest;
  if (split_layer(name, hf_layer_prefix(plan), &layer, &rest) && layer < plan.n_layer) {
    if (ignored(rest)) return std::optional<Target>();
    if (const std::string_view gguf = find_name(hf_layer_names(plan), rest, false); !gguf.empty()) {
      Target t{fmt::format("blk.{}.{}", layer, gguf)};
      if (plan.permute_qk && rest.rfind("self_attn.q_proj.", 0) == 0) t.permute_heads = plan.n_head;
      if (plan.permute_qk && rest.rfind("self_attn.k_proj.", 0) == 0) t.permute_heads = plan.n_head_kv;
      return std::optional<Target>(t);
    }
    if (plan.n_expert > 0) {
      if (auto t = expert_target(plan, rest, layer)) return t;
    }
  }
  return unimplemented(fmt::format("tensor '{}' is not part of a {} as llmserve knows it (no GGUF tensor for it)",
                                   name, plan.hf_arch));
}

GgufTensorInfo info(const std::string& name, DType type, std::vector<int64_t> ne) {
  GgufTensorInfo t;
  t.name = name;
  t.dtype = type;
  t.n_dims = static_cast<int>(ne.size());
  for (size_t i = 0; i < ne.size(); ++i) t.ne[i] = ne[i];
  t.num_bytes = static_cast<uint64_t>(dtype_row_bytes(type, t.ne[0]) * (t.num_elements() / std::max<int64_t>(1, t.ne[0])));
  return t;
}

// Builds the GGUF tensors; experts are gathered into `stacks` first.
class Builder {
 public:
  Builder(const HfPlan& plan, HfSource& source) : plan_(plan), src_(source) {}

  Status add(const SafetensorsTensor& s) {
    LLMS_ASSIGN_OR_RETURN(std::optional<Target> target, target_of(plan_, s.name));
    if (!target) return ok_status();
    if (!s.dtype) {
      return unimplemented(fmt::format("tensor '{}' has dtype {}; weights must be F32, F16 or BF16", s.name, s.dtype_name));
    }
    if (s.shape.empty() || s.shape.size() > 2 || s.num_elements() == 0) {
      return invalid_argument(fmt::format("tensor '{}' has shape {}, expected a vector or a matrix", s.name, s.shape_string()));
    }
    if (target->expert >= 0) {
      auto& slot = stacks_[target->name];
      if (slot.size() <= static_cast<size_t>(target->expert)) slot.resize(static_cast<size_t>(target->expert) + 1);
      slot[static_cast<size_t>(target->expert)] = &s;
      return ok_status();
    }
    if (names_.count(target->name) != 0) {
      return invalid_argument(fmt::format("tensors '{}' and '{}' both map to {}", names_[target->name], s.name, target->name));
    }
    names_[target->name] = s.name;
    const bool vector = s.shape.size() == 1 || target->name.find("ffn_gate_inp_shexp") != std::string::npos;
    if (vector) return add_vector(*target, s);
    return add_matrix(*target, s);
  }

  Status finish(std::vector<GgufTensorInfo>& out) {
    LLMS_RETURN_IF_ERROR(finish_stacks());
    LLMS_RETURN_IF_ERROR(finish_head());
    auto values = [&](const std::string& name, const std::vector<float>& v) {
      if (v.empty()) return;
      Recipe r;
      r.kind = Recipe::kValues;
      r.values = v;
      src_.add(name, std::move(r));
      tensors_.push_back(info(name, DType::kF32, {static_cast<int64_t>(v.size())}));
    };
    values("rope_freqs.weight", plan_.rope_freqs);
    values("rope_factors_long.weight", plan_.rope_long);
    values("rope_factors_short.weight", plan_.rope_short);
    out = std::move(tensors_);
    return ok_status();
  }

 private:
  Status add_vector(const Target& t, const SafetensorsTensor& s) {
    Recipe r;
    r.kind = Recipe::kVector;
    r.src = {&s};
    r.permute_heads = t.permute_heads;
    const bool norm = t.name.size() >= 11 && t.name.compare(t.name.size() - 11, 11, "norm.weight") == 0;
    if (norm) r.offset = plan_.norm_offset;
    src_.add(t.name, std::move(r));
    tensors_.push_back(info(t.name, DType::kF32, {s.num_elements()}));
    return ok_status();
  }

  Status add_matrix(const Target& t, const SafetensorsTensor& s) {
    const int64_t rows = s.shape[0], cols = s.shape[1];
    // GPT-2's Conv1D stores [in, out]; the embeddings and head are nn.Embedding/Linear.
    const bool conv1d = plan_.conv1d && t.name.rfind("blk.", 0) == 0;
    GgufTensorInfo g = info(t.name, *s.dtype, conv1d ? std::vector<int64_t>{rows, cols} : std::vector<int64_t>{cols, rows});
    g.offset = s.offset;
    Recipe r;
    r.src = {&s};
    if (conv1d) {
      r.kind = Recipe::kTranspose;
    } else if (t.permute_heads > 0) {
      if (rows % (2 * t.permute_heads) != 0) {
        return invalid_argument(fmt::format("tensor '{}' has {} rows, not whole heads of {} for rotary order", s.name,
                                            rows, t.permute_heads));
      }
      r.kind = Recipe::kPermute;
      r.permute_heads = t.permute_heads;
    } else {
      g.data = s.data;  // read in place
    }
    if (r.kind != Recipe::kInPlace) src_.add(t.name, std::move(r));
    tensors_.push_back(g);
    return ok_status();
  }

  Status finish_stacks() {
    for (auto& [name, parts] : stacks_) {
      if (static_cast<int>(parts.size()) != plan_.n_expert ||
          std::find(parts.begin(), parts.end(), nullptr) != parts.end()) {
        return invalid_argument(fmt::format("{}: the directory holds {} of the {} experts' tensors", name,
                                            std::count_if(parts.begin(), parts.end(), [](auto* p) { return p != nullptr; }),
                                            plan_.n_expert));
      }
      for (const SafetensorsTensor* p : parts) {
        if (p->shape != parts[0]->shape || p->dtype != parts[0]->dtype) {
          return invalid_argument(fmt::format("experts of {} differ in shape or dtype ({} {} vs {} {})", name,
                                              p->shape_string(), p->dtype_name, parts[0]->shape_string(),
                                              parts[0]->dtype_name));
        }
      }
      Recipe r;
      r.kind = Recipe::kStack;
      r.src = parts;
      src_.add(name, std::move(r));
      tensors_.push_back(info(name, *parts[0]->dtype, {parts[0]->shape[1], parts[0]->shape[0], plan_.n_expert}));
    }
    return ok_status();
  }

  // Tied heads: the embedding is the head, stored under either name. GPT-2 files
  // carry output.weight too (llama.cpp's converter copies the embedding; here it is
  // the same bytes).
  Status finish_head() {
    auto find = [&](const std::string& n) -> GgufTensorInfo* {
      for (auto& t : tensors_) {
        if (t.name == n) return &t;
      }
      return nullptr;
    };
    GgufTensorInfo* embd = find("token_embd.weight");
    GgufTensorInfo* head = find("output.weight");
    if (plan_.tied && head != nullptr) {
      if (embd == nullptr) {
        head->name = "token_embd.weight";  // only lm_head stored: it is the embedding too
        embd = head;
        head = nullptr;
      } else if (plan_.arch != "gpt2") {
        tensors_.erase(tensors_.begin() + (head - tensors_.data()));
        embd = find("token_embd.weight");
        head = nullptr;
      }
    }
    if (embd == nullptr) return not_found("the token embedding (model.embed_tokens.weight) is missing");
    if (!plan_.tied && head == nullptr) {
      return not_found("lm_head.weight is missing and config.json does not tie it to the embedding "
                       "(tie_word_embeddings)");
    }
    if (plan_.arch == "gpt2" && head == nullptr) {
      GgufTensorInfo copy = *embd;
      copy.name = "output.weight";
      tensors_.push_back(copy);
    }
    return ok_status();
  }

  const HfPlan& plan_;
  HfSource& src_;
  std::vector<GgufTensorInfo> tensors_;
  std::map<std::string, std::string> names_;  // GGUF name -> directory name
  std::map<std::string, std::vector<const SafetensorsTensor*>> stacks_;
};

}  // namespace

const HfNameTable& hf_top_names(const HfPlan& plan) {
  static const HfNameTable kLlama = {{"model.embed_tokens.weight", "token_embd.weight"},
                                     {"model.norm.weight", "output_norm.weight"},
                                     {"lm_head.weight", "output.weight"}};
  static const HfNameTable kGpt2 = {{"wte.weight", "token_embd.weight"},     {"wpe.weight", "position_embd.weight"},
                                    {"ln_f.weight", "output_norm.weight"},    {"ln_f.bias", "output_norm.bias"},
                                    {"lm_head.weight", "output.weight"}};
  return plan.arch == "gpt2" ? kGpt2 : kLlama;
}

const HfNameTable& hf_layer_names(const HfPlan& plan) {
  // LLaMA, Mistral, Qwen2 (biases when the model has them); the MoE ones replace the MLP.
  static const HfNameTable kAttention = {
      {"input_layernorm.weight", "attn_norm.weight"},   {"self_attn.q_proj.weight", "attn_q.weight"},
      {"self_attn.k_proj.weight", "attn_k.weight"},     {"self_attn.v_proj.weight", "attn_v.weight"},
      {"self_attn.q_proj.bias", "attn_q.bias"},         {"self_attn.k_proj.bias", "attn_k.bias"},
      {"self_attn.v_proj.bias", "attn_v.bias"},         {"self_attn.o_proj.weight", "attn_output.weight"},
      {"self_attn.o_proj.bias", "attn_output.bias"},    {"post_attention_layernorm.weight", "ffn_norm.weight"}};
  auto with = [](HfNameTable t, const HfNameTable& more) {
    t.insert(t.end(), more.begin(), more.end());
    return t;
  };
  static const HfNameTable kLlama = with(kAttention, {{"mlp.gate_proj.weight", "ffn_gate.weight"},
                                                      {"mlp.up_proj.weight", "ffn_up.weight"},
                                                      {"mlp.down_proj.weight", "ffn_down.weight"}});
  static const HfNameTable kMixtral = with(kAttention, {{"block_sparse_moe.gate.weight", "ffn_gate_inp.weight"}});
  static const HfNameTable kQwen2Moe = with(kAttention, {{"mlp.gate.weight", "ffn_gate_inp.weight"},
                                                         {"mlp.shared_expert.gate_proj.weight", "ffn_gate_shexp.weight"},
                                                         {"mlp.shared_expert.up_proj.weight", "ffn_up_shexp.weight"},
                                                         {"mlp.shared_expert.down_proj.weight", "ffn_down_shexp.weight"},
                                                         {"mlp.shared_expert_gate.weight", "ffn_gate_inp_shexp.weight"}});
  static const HfNameTable kPhi3 = {
      {"input_layernorm.weight", "attn_norm.weight"},   {"self_attn.qkv_proj.weight", "attn_qkv.weight"},
      {"self_attn.o_proj.weight", "attn_output.weight"}, {"post_attention_layernorm.weight", "ffn_norm.weight"},
      {"mlp.gate_up_proj.weight", "ffn_up.weight"},     {"mlp.down_proj.weight", "ffn_down.weight"}};
  static const HfNameTable kGemma2 = {
      {"input_layernorm.weight", "attn_norm.weight"},   {"self_attn.q_proj.weight", "attn_q.weight"},
      {"self_attn.k_proj.weight", "attn_k.weight"},     {"self_attn.v_proj.weight", "attn_v.weight"},
      {"self_attn.o_proj.weight", "attn_output.weight"},
      {"post_attention_layernorm.weight", "post_attention_norm.weight"},
      {"pre_feedforward_layernorm.weight", "ffn_norm.weight"},
      {"post_feedforward_layernorm.weight", "post_ffw_norm.weight"},
      {"mlp.gate_proj.weight", "ffn_gate.weight"},      {"mlp.up_proj.weight", "ffn_up.weight"},
      {"mlp.down_proj.weight", "ffn_down.weight"}};
  static const HfNameTable kGpt2 = {
      {"ln_1.weight", "attn_norm.weight"},          {"ln_1.bias", "attn_norm.bias"},
      {"attn.c_attn.weight", "attn_qkv.weight"},    {"attn.c_attn.bias", "attn_qkv.bias"},
      {"attn.c_proj.weight", "attn_output.weight"}, {"attn.c_proj.bias", "attn_output.bias"},
      {"ln_2.weight", "ffn_norm.weight"},           {"ln_2.bias", "ffn_norm.bias"},
      {"mlp.c_fc.weight", "ffn_up.weight"},         {"mlp.c_fc.bias", "ffn_up.bias"},
      {"mlp.c_proj.weight", "ffn_down.weight"},     {"mlp.c_proj.bias", "ffn_down.bias"}};
  if (plan.arch == "gemma2") return kGemma2;
  if (plan.arch == "gpt2") return kGpt2;
  if (plan.arch == "phi3") return kPhi3;
  if (plan.arch == "qwen2moe") return kQwen2Moe;
  return plan.n_expert > 0 ? kMixtral : kLlama;
}

std::string hf_expert_prefix(const HfPlan& plan) {
  return plan.arch == "qwen2moe" ? "mlp.experts." : "block_sparse_moe.experts.";
}

const HfNameTable& hf_expert_names(const HfPlan& plan) {
  static const HfNameTable kMixtral = {
      {"w1.weight", "ffn_gate_exps.weight"}, {"w3.weight", "ffn_up_exps.weight"}, {"w2.weight", "ffn_down_exps.weight"}};
  static const HfNameTable kQwen2Moe = {{"gate_proj.weight", "ffn_gate_exps.weight"},
                                        {"up_proj.weight", "ffn_up_exps.weight"},
                                        {"down_proj.weight", "ffn_down_exps.weight"}};
  return plan.arch == "qwen2moe" ? kQwen2Moe : kMixtral;
}

std::string hf_layer_prefix(const HfPlan& plan) { return plan.arch == "gpt2" ? "h." : "model.layers."; }

std::string_view find_name(const HfNameTable& table, std::string_view key, bool reverse) {
  for (const auto& [hf, gguf] : table) {
    if ((reverse ? gguf : hf) == key) return reverse ? hf : gguf;
  }
  return {};
}

std::vector<int64_t> rotary_row_order(int64_t rows, int n_head) {
  const int64_t hd = rows / n_head, half = hd / 2;
  std::vector<int64_t> order(static_cast<size_t>(rows));
  for (int64_t h = 0; h < n_head; ++h) {
    for (int64_t i = 0; i < half; ++i) {
      for (int64_t s = 0; s < 2; ++s) order[static_cast<size_t>(h * hd + i * 2 + s)] = h * hd + s * half + i;
    }
  }
  return order;
}

void permute_rotary_rows(const uint8_t* src, uint8_t* dst, int64_t rows, int64_t row_bytes, int n_head, bool inverse) {
  const std::vector<int64_t> order = rotary_row_order(rows, n_head);
  for (int64_t g = 0; g < rows; ++g) {
    const int64_t hf = order[static_cast<size_t>(g)];
    const int64_t to = inverse ? hf : g, from = inverse ? g : hf;
    std::memcpy(dst + to * row_bytes, src + from * row_bytes, static_cast<size_t>(row_bytes));
  }
}

void transpose_matrix(const uint8_t* src, uint8_t* dst, int64_t rows, int64_t cols, int64_t elem) {
  constexpr int64_t kTile = 32;  // tiles keep both sides in cache
  for (int64_t r0 = 0; r0 < rows; r0 += kTile) {
    for (int64_t c0 = 0; c0 < cols; c0 += kTile) {
      for (int64_t r = r0; r < std::min(rows, r0 + kTile); ++r) {
        for (int64_t c = c0; c < std::min(cols, c0 + kTile); ++c) {
          std::memcpy(dst + (c * rows + r) * elem, src + (r * cols + c) * elem, static_cast<size_t>(elem));
        }
      }
    }
  }
}

Result<HfTensors> hf_tensors_to_gguf(HfCheckpoint ckpt, const HfPlan& plan) {
  auto source = std::make_unique<HfSource>(std::move(ckpt));
  Builder b(plan, *source);
  for (const SafetensorsTensor* t : source->checkpoint().tensors()) LLMS_RETURN_IF_ERROR(b.add(*t));
  HfTensors out;
  LLMS_RETURN_IF_ERROR(b.finish(out.tensors));
  out.source = std::move(source);
  return out;
}

}  // namespace llms
