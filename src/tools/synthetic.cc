#include "tools/synthetic.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <set>

#include "base/hash.h"
#include "base/random.h"
#include "base/thread_pool.h"
#include "io/gguf_writer.h"
#include "io/hf_export.h"
#include "io/rope_scaling.h"
#include "model/config.h"
#include "quant/row_convert.h"

namespace llms {

using gguf::Value;

Status SyntheticSpec::validate() const {
  if (arch != "llama" && arch != "qwen2" && arch != "qwen2moe" && arch != "gpt2" && arch != "phi3" && arch != "gemma2") {
    return invalid_argument("architecture must be llama, qwen2, qwen2moe, phi3, gemma2 or gpt2, got '" + arch + "'");
  }
  if (n_expert < 0 || n_expert_used < 0 || n_ff_exp < 0 || n_ff_shexp < 0) {
    return invalid_argument("expert counts and sizes must not be negative");
  }
  if (n_expert > 0 && arch != "llama" && arch != "qwen2moe") {
    return invalid_argument("experts are for llama (Mixtral) and qwen2moe, not " + arch);
  }
  if (arch == "qwen2moe" && n_expert == 0) return invalid_argument("qwen2moe needs experts (--experts N)");
  if (n_expert > 0 && (n_expert_used < 1 || n_expert_used > n_expert)) {
    return invalid_argument(fmt::format("experts used per token ({}) must be 1 to the expert count ({})", n_expert_used,
                                        n_expert));
  }
  if (head_dim != 0 && (head_dim < 0 || arch != "gemma2")) {
    return invalid_argument("a head size of its own is for gemma2 only");
  }
  if (n_vocab < 259) return invalid_argument(fmt::format("vocab size {} is below 259 (3 specials + 256 bytes)", n_vocab));
  if (n_embd <= 0 || n_layer <= 0 || n_head <= 0 || n_head_kv <= 0 || n_ff <= 0 || n_ctx <= 0) {
    return invalid_argument("every dimension must be positive");
  }
  if (head_dim == 0 && n_embd % n_head != 0) return invalid_argument(fmt::format("dim {} is not a multiple of heads {}", n_embd, n_head));
  if (n_head % n_head_kv != 0) return invalid_argument(fmt::format("heads {} not a multiple of KV heads {}", n_head, n_head_kv));
  if (rope_scaling != "none" && rope_scaling != "linear" && rope_scaling != "llama3" && rope_scaling != "yarn") {
    return invalid_argument("rope scaling must be none, linear, yarn or llama3, got '" + rope_scaling + "'");
  }
  if (arch != "gpt2" && head_size() % 2 != 0) return invalid_argument("head size must be even (RoPE rotates pairs)");
  if (arch == "gpt2" && n_head_kv != n_head) return invalid_argument("gpt2 has as many KV heads as heads");
  for (int64_t cols : {static_cast<int64_t>(n_embd), static_cast<int64_t>(n_ff), static_cast<int64_t>(expert_ffn()),
                       static_cast<int64_t>(shared_ffn())}) {
    if (!row_fits_blocks(weight_type, cols)) {
      return invalid_argument(fmt::format("type {} needs rows in multiples of {}; dim {} / ffn {} do not fit",
                                          dtype_name(weight_type), dtype_info(weight_type).block_size, n_embd, n_ff));
    }
  }
  if (!can_quantize(weight_type)) {
    return unimplemented(fmt::format("synthetic weights of type {} are not supported", dtype_name(weight_type)));
  }
  return ok_status();
}

std::vector<std::string> synthetic_preset_names() {
  return {"tiny",      "llama-110m", "tinyllama-1.1b", "llama-7b",     "gpt2-small",
          "gpt2-large", "phi3-mini", "gemma2-2b",      "mixtral-8x7b", "qwen2moe-a2.7b"};
}

Result<SyntheticSpec> synthetic_preset(std::string_view name) {
  SyntheticSpec s;
  s.preset = std::string(name);
  if (name == "tiny") {
    s.n_vocab = 512, s.n_embd = 64, s.n_layer = 2, s.n_head = 4, s.n_head_kv = 2, s.n_ff = 192, s.n_ctx = 512;
  } else if (name == "llama-110m") {
    s.n_vocab = 32000, s.n_embd = 768, s.n_layer = 12, s.n_head = 12, s.n_head_kv = 12, s.n_ff = 2048, s.n_ctx = 1024;
  } else if (name == "tinyllama-1.1b") {
    s.n_vocab = 32000, s.n_embd = 2048, s.n_layer = 22, s.n_head = 32, s.n_head_kv = 4, s.n_ff = 5632, s.n_ctx = 2048;
  } else if (name == "llama-7b") {
    s.n_vocab = 32000, s.n_embd = 4096, s.n_layer = 32, s.n_head = 32, s.n_head_kv = 32, s.n_ff = 11008, s.n_ctx = 4096;
  } else if (name == "phi3-mini") {  // Phi-3-mini-128k: LongRoPE from 4k to 128k
    s.arch = "phi3";
    s.n_vocab = 32064, s.n_embd = 3072, s.n_layer = 32, s.n_head = 32, s.n_head_kv = 32, s.n_ff = 8192;
    s.n_ctx = 131072;
  } else if (name == "gemma2-2b") {  // heads of 256, window 4096 on a context of 8192
    s.arch = "gemma2", s.tied_output = true;
    s.n_vocab = 256000, s.n_embd = 2304, s.n_layer = 26, s.n_head = 8, s.n_head_kv = 4, s.n_ff = 9216;
    s.head_dim = 256, s.n_ctx = 8192;
  } else if (name == "mixtral-8x7b") {  // 8 experts of 14336, 2 per token
    s.n_vocab = 32000, s.n_embd = 4096, s.n_layer = 32, s.n_head = 32, s.n_head_kv = 8, s.n_ff = 14336;
    s.n_ctx = 32768, s.rope_base = 1e6f, s.n_expert = 8, s.n_expert_used = 2;
  } else if (name == "qwen2moe-a2.7b") {  // Qwen1.5-MoE-A2.7B: 60 experts of 1408, 4 per token, a shared 5632
    s.arch = "qwen2moe";
    s.n_vocab = 151936, s.n_embd = 2048, s.n_layer = 24, s.n_head = 16, s.n_head_kv = 16, s.n_ff = 5632;
    s.n_ctx = 8192, s.rope_base = 1e6f, s.n_expert = 60, s.n_expert_used = 4, s.n_ff_exp = 1408;  // shared: n_ff
  } else if (name == "gpt2-small") {  // 124M; tied output head, as the released weights
    s.arch = "gpt2", s.tied_output = true;
    s.n_vocab = 50257, s.n_embd = 768, s.n_layer = 12, s.n_head = 12, s.n_head_kv = 12, s.n_ff = 3072, s.n_ctx = 1024;
  } else if (name == "gpt2-large") {  // 774M
    s.arch = "gpt2", s.tied_output = true;
    s.n_vocab = 50257, s.n_embd = 1280, s.n_layer = 36, s.n_head = 20, s.n_head_kv = 20, s.n_ff = 5120, s.n_ctx = 1024;
  } else {
    std::string names;
    for (const auto& n : synthetic_preset_names()) names += (names.empty() ? "" : ", ") + n;
    return not_found(fmt::format("unknown preset '{}' (presets: {})", name, names));
  }
  return s;
}

SpmVocabulary make_synthetic_vocab(int n_vocab) {
  SpmVocabulary v;
  auto add = [&](std::string tok, float score, int32_t type) {
    v.tokens.push_back(std::move(tok));
    v.scores.push_back(score);
    v.types.push_back(type);
  };
  add("<unk>", 0.0f, 2);
  add("<s>", 0.0f, 3);
  add("</s>", 0.0f, 3);
  for (int b = 0; b < 256; ++b) add(fmt::format("<0x{:02X}>", b), 0.0f, 6);
  // Word pieces: every prefix of each word (with the SentencePiece space mark), so
  // that each piece is the merge of a shorter piece and one character.
  static const char* kWords[] = {
      "the", "and", "was", "she", "he", "they", "a", "to", "of", "in", "it", "that", "with", "for", "on", "said",
      "once", "upon", "time", "there", "little", "girl", "boy", "named", "day", "big", "happy", "friend", "play",
      "went", "saw", "had", "her", "his", "mom", "dog", "cat", "tree", "park", "sun", "ball", "red", "very", "loved",
      "wanted", "what", "is", "you", "I", "we", "can", "do", "not", "be", "this", "are", "have", "from", "at", "one",
      "all", "your", "when", "up", "out", "so", "if", "about", "who", "get", "which", "go", "me", "make", "like",
      "time", "no", "just", "him", "know", "take", "people", "into", "year", "good", "some", "could", "them", "see",
      "other", "than", "then", "now", "look", "only", "come", "its", "over", "think", "also", "back", "after", "use",
      "two", "how", "our", "work", "first", "well", "way", "even", "new", "want", "because", "any", "these", "give",
      "most", "us", "server", "model", "token", "hello", "world", "question", "answer", "story"};
  std::set<std::string> seen(v.tokens.begin(), v.tokens.end());
  const std::string mark = "\xE2\x96\x81";  // U+2581, SentencePiece's space
  auto add_piece = [&](const std::string& p) {
    if (static_cast<int>(v.tokens.size()) >= n_vocab || !seen.insert(p).second) return;
    add(p, -static_cast<float>(v.tokens.size()), 1);
  };
  add_piece(mark);
  for (char c = 32; c < 127; ++c) add_piece(std::string(1, c));
  for (const char* w : kWords) {
    const std::string word = mark + w;
    for (size_t len = mark.size() + 1; len <= word.size(); ++len) add_piece(word.substr(0, len));
    const std::string bare = w;
    for (size_t len = 2; len <= bare.size(); ++len) add_piece(bare.substr(0, len));
  }
  for (int i = static_cast<int>(v.tokens.size()); i < n_vocab; ++i) add(fmt::format("<unused{}>", i), -1e9f, 5);
  return v;
}

namespace {

// Fills a tensor with N(mean, std) values encoded row by row in `type`. Each row has
// its own generator (seeded by the model seed, the tensor name and the row), so rows
// are filled on all cores and the file is the same whatever the core count.
GgufWriter::Filler random_filler(DType type, int64_t cols, uint64_t seed, const std::string& name, float std_dev,
                                 ThreadPool* pool, float mean = 0.0f) {
  return [=](std::span<uint8_t> out) {
    const uint64_t base = seed ^ hash64(name.data(), name.size());
    const int64_t rb = dtype_row_bytes(type, cols);
    const int64_t rows = static_cast<int64_t>(out.size()) / rb;
    pool->parallel_for(rows, 1, 2, [&](int64_t r0, int64_t r1) {
      std::vector<float> row(static_cast<size_t>(cols));
      for (int64_t r = r0; r < r1; ++r) {
        Rng rng(base + static_cast<uint64_t>(r) * 0x9E3779B97F4A7C15ULL);
        for (auto& x : row) x = mean + static_cast<float>(rng.normal()) * std_dev;
        quantize_row(type, row.data(), out.data() + r * rb, cols);
      }
    });
  };
}

GgufWriter::Filler const_filler(float value) {
  return [=](std::span<uint8_t> out) {
    for (size_t i = 0; i + 4 <= out.size(); i += 4) std::memcpy(out.data() + i, &value, 4);
  };
}

}  // namespace

namespace {

// The tensors a writer adds: matrices of the spec's weight type, F32 vectors.
struct TensorSink {
  const SyntheticSpec& s;
  GgufWriter& w;
  ThreadPool& pool;

  float layer_std = 0.02f;  // the default of matrix()

  void matrix(const std::string& name, int64_t cols, int64_t rows, float std_dev = -1.0f) {
    if (std_dev < 0.0f) std_dev = layer_std;
    w.add_tensor(name, s.weight_type, {cols, rows}, random_filler(s.weight_type, cols, s.seed, name, std_dev, &pool));
  }
  // `count` [rows, cols] matrices stacked in one [cols, rows, count] tensor (experts).
  void stacked(const std::string& name, int64_t cols, int64_t rows, int64_t count) {
    w.add_tensor(name, s.weight_type, {cols, rows, count},
                 random_filler(s.weight_type, cols, s.seed, name, layer_std, &pool));
  }
  void random_vec(const std::string& name, int64_t n, float std_dev = 0.02f, float mean = 0.0f) {
    w.add_tensor(name, DType::kF32, {n}, random_filler(DType::kF32, n, s.seed, name, std_dev, &pool, mean));
  }
  void ones(const std::string& name, int64_t n) { w.add_tensor(name, DType::kF32, {n}, const_filler(1.0f)); }
};

// GPT-2 and Phi-3: the embedding is small (std 0.14 in GPT-2's released weights) and
// the layers' matrices larger than the LLaMA presets' 0.02, so that what the layers
// add (attention, positions) outweighs the embedding and shows in the logits, and a
// tied head does not just predict the input token again.
constexpr float kGpt2EmbdStd = 0.14f;
constexpr float kGpt2WeightStd = 0.04f;

// Llama-3.1's frequency divisors (factor 8, low/high frequency factors 1 and 4, an
// original context of 8192), as its converter computes them.
void add_llama3_rope_freqs(TensorSink& t) {
  const SyntheticSpec& s = t.s;
  const std::vector<float> f = llama3_rope_divisors(s.rope_base, s.head_size(), Llama3RopeScaling{});
  t.w.add_tensor("rope_freqs.weight", DType::kF32, {static_cast<int64_t>(f.size())}, [f](std::span<uint8_t> out) {
    std::memcpy(out.data(), f.data(), out.size());
  });
}

// A mixture of experts' FFN tensors in layer prefix `p`, as the converters write
// them: the F32 router, the experts' stacked SwiGLU matrices and, for qwen2moe, the
// shared expert and its gate vector. The router's weights are larger (std 0.1) so
// that its logits spread and near-ties between experts are rare.
void add_experts(TensorSink& t, const std::string& p) {
  const SyntheticSpec& s = t.s;
  const int64_t d = s.n_embd, ff = s.expert_ffn(), n = s.n_expert;
  t.w.add_tensor(p + "ffn_gate_inp.weight", DType::kF32, {d, n},
                 random_filler(DType::kF32, d, s.seed, p + "ffn_gate_inp.weight", 0.1f, &t.pool));
  t.stacked(p + "ffn_gate_exps.weight", d, ff, n);
  t.stacked(p + "ffn_up_exps.weight", d, ff, n);
  t.stacked(p + "ffn_down_exps.weight", ff, d, n);
  if (s.arch != "qwen2moe") return;
  const int64_t sh = s.shared_ffn();
  t.random_vec(p + "ffn_gate_inp_shexp.weight", d, 0.1f);
  t.matrix(p + "ffn_gate_shexp.weight", d, sh);
  t.matrix(p + "ffn_up_shexp.weight", d, sh);
  t.matrix(p + "ffn_down_shexp.weight", sh, d);
}

// LLaMA and Qwen2: separate Q, K, V (Qwen2 with biases), RMSNorm, SwiGLU.
void add_llama_layers(TensorSink& t) {
  const SyntheticSpec& s = t.s;
  const int64_t d = s.n_embd, ff = s.n_ff, hd = s.head_size();
  const int64_t q_dim = hd * s.n_head, kv_dim = hd * s.n_head_kv;
  t.ones("output_norm.weight", d);
  if (!s.tied_output) t.matrix("output.weight", d, s.n_vocab);
  if (s.rope_scaling == "llama3") add_llama3_rope_freqs(t);
  for (int l = 0; l < s.n_layer; ++l) {
    const std::string p = fmt::format("blk.{}.", l);
    t.ones(p + "attn_norm.weight", d);
    t.matrix(p + "attn_q.weight", d, q_dim);
    t.matrix(p + "attn_k.weight", d, kv_dim);
    t.matrix(p + "attn_v.weight", d, kv_dim);
    if (s.arch == "qwen2" || s.arch == "qwen2moe") {
      t.random_vec(p + "attn_q.bias", q_dim);
      t.random_vec(p + "attn_k.bias", kv_dim);
      t.random_vec(p + "attn_v.bias", kv_dim);
    }
    t.matrix(p + "attn_output.weight", q_dim, d);
    t.ones(p + "ffn_norm.weight", d);
    if (s.n_expert > 0) {
      add_experts(t, p);
      continue;
    }
    t.matrix(p + "ffn_gate.weight", d, ff);
    t.matrix(p + "ffn_up.weight", d, ff);
    t.matrix(p + "ffn_down.weight", ff, d);
  }
}


// GPT-2: learned positions, LayerNorm with bias, fused QKV with bias, GELU MLP with
// biases. Norm weights and every bias are random (not 1 and 0), so that a weight or
// bias left out changes the output.
void add_gpt2_layers(TensorSink& t) {
  const SyntheticSpec& s = t.s;
  const int64_t d = s.n_embd, ff = s.n_ff;
  auto norm = [&](const std::string& name) {
    t.random_vec(name + ".weight", d, 0.2f, 1.0f);
    t.random_vec(name + ".bias", d, 0.2f);
  };
  t.matrix("position_embd.weight", d, s.n_ctx, 0.05f);
  norm("output_norm");
  // GPT-2 files carry output.weight even when the head is tied (the converter copies
  // the embedding; llama.cpp requires it): a tied head is written as that copy.
  if (s.tied_output) {
    t.w.add_tensor("output.weight", s.weight_type, {d, s.n_vocab},
                   random_filler(s.weight_type, d, s.seed, "token_embd.weight", kGpt2EmbdStd, &t.pool));
  } else {
    t.matrix("output.weight", d, s.n_vocab);
  }
  for (int l = 0; l < s.n_layer; ++l) {
    const std::string p = fmt::format("blk.{}.", l);
    norm(p + "attn_norm");
    t.matrix(p + "attn_qkv.weight", d, 3 * d, kGpt2WeightStd);
    t.random_vec(p + "attn_qkv.bias", 3 * d);
    t.matrix(p + "attn_output.weight", d, d, kGpt2WeightStd);
    t.random_vec(p + "attn_output.bias", d);
    norm(p + "ffn_norm");
    t.matrix(p + "ffn_up.weight", d, ff, kGpt2WeightStd);
    t.random_vec(p + "ffn_up.bias", ff);
    t.matrix(p + "ffn_down.weight", ff, d, kGpt2WeightStd);
    t.random_vec(p + "ffn_down.bias", d);
  }
}

// Phi-3 (128k): fused QKV and gate/up, NeoX RoPE over the whole head with LongRoPE
// factors (short and long sets rising across the frequencies, as the released ones
// do) and the attention factor sqrt(1 + ln(ctx / orig) / ln(orig)). Norm weights are
// random around 1, so that one left out changes the output.
void add_phi3_layers(TensorSink& t) {
  const SyntheticSpec& s = t.s;
  const int64_t d = s.n_embd, ff = s.n_ff, hd = s.head_size();
  const int64_t q_dim = hd * s.n_head, kv_dim = hd * s.n_head_kv, half = hd / 2;
  auto factors = [&](const std::string& name, float top) {
    t.w.add_tensor(name, DType::kF32, {half}, [=](std::span<uint8_t> out) {
      for (int64_t i = 0; i < half; ++i) {
        const float x = static_cast<float>(i) / static_cast<float>(half);
        const float v = 1.0f + (top - 1.0f) * x * x;
        std::memcpy(out.data() + 4 * i, &v, 4);
      }
    });
  };
  t.random_vec("output_norm.weight", d, 0.2f, 1.0f);
  t.matrix("output.weight", d, s.n_vocab, kGpt2EmbdStd);
  factors("rope_factors_long.weight", 40.0f);
  factors("rope_factors_short.weight", 1.5f);
  for (int l = 0; l < s.n_layer; ++l) {
    const std::string p = fmt::format("blk.{}.", l);
    t.random_vec(p + "attn_norm.weight", d, 0.2f, 1.0f);
    t.matrix(p + "attn_qkv.weight", d, q_dim + 2 * kv_dim, kGpt2WeightStd);
    t.matrix(p + "attn_output.weight", q_dim, d, kGpt2WeightStd);
    t.random_vec(p + "ffn_norm.weight", d, 0.2f, 1.0f);
    t.matrix(p + "ffn_up.weight", d, 2 * ff, kGpt2WeightStd);
    t.matrix(p + "ffn_down.weight", ff, d, kGpt2WeightStd);
  }
}

// Gemma-2: RMSNorm before and after each block (weights around 1: the files store
// 1 + w), GELU-gated FFN, a tied head, heads of their own size. Larger matrices (0.06)
// than the others, so that attention scores reach the soft cap.
void add_gemma2_layers(TensorSink& t) {
  const SyntheticSpec& s = t.s;
  const int64_t d = s.n_embd, ff = s.n_ff, hd = s.head_size();
  const int64_t q_dim = hd * s.n_head, kv_dim = hd * s.n_head_kv;
  constexpr float kStd = 0.06f;
  t.random_vec("output_norm.weight", d, 0.2f, 1.0f);
  if (!s.tied_output) t.matrix("output.weight", d, s.n_vocab, kGpt2EmbdStd);
  for (int l = 0; l < s.n_layer; ++l) {
    const std::string p = fmt::format("blk.{}.", l);
    t.random_vec(p + "attn_norm.weight", d, 0.2f, 1.0f);
    t.matrix(p + "attn_q.weight", d, q_dim, kStd);
    t.matrix(p + "attn_k.weight", d, kv_dim, kStd);
    t.matrix(p + "attn_v.weight", d, kv_dim, kStd);
    t.matrix(p + "attn_output.weight", q_dim, d, kStd);
    t.random_vec(p + "post_attention_norm.weight", d, 0.2f, 1.0f);
    t.random_vec(p + "ffn_norm.weight", d, 0.2f, 1.0f);
    t.matrix(p + "ffn_gate.weight", d, ff, kStd);
    t.matrix(p + "ffn_up.weight", d, ff, kStd);
    t.matrix(p + "ffn_down.weight", ff, d, kStd);
    t.random_vec(p + "post_ffw_norm.weight", d, 0.2f, 1.0f);
  }
}

// The original context LongRoPE extends (Phi-3's 4k).
constexpr int kPhi3OrigCtx = 4096;

}  // namespace

Status write_synthetic_model(const SyntheticSpec& s, const std::string& path) {
  LLMS_RETURN_IF_ERROR(s.validate());
  ThreadPool pool(0);
  GgufWriter w;
  const std::string a = s.arch + ".";
  const bool gpt2 = s.arch == "gpt2";
  w.set("general.architecture", Value::string(s.arch));
  w.set("general.name", Value::string(fmt::format("synthetic {} (random weights)", s.preset)));
  w.set(kSyntheticKey, Value::boolean(true));
  w.set(a + "context_length", Value::u32(static_cast<uint32_t>(s.n_ctx)));
  w.set(a + "embedding_length", Value::u32(static_cast<uint32_t>(s.n_embd)));
  w.set(a + "block_count", Value::u32(static_cast<uint32_t>(s.n_layer)));
  w.set(a + "feed_forward_length", Value::u32(static_cast<uint32_t>(s.n_ff)));
  w.set(a + "attention.head_count", Value::u32(static_cast<uint32_t>(s.n_head)));
  if (gpt2) {
    w.set(a + "attention.layer_norm_epsilon", Value::f32(1e-5f));
  } else {
    w.set(a + "attention.head_count_kv", Value::u32(static_cast<uint32_t>(s.n_head_kv)));
    w.set(a + "rope.dimension_count", Value::u32(static_cast<uint32_t>(s.head_size())));
    w.set(a + "rope.freq_base", Value::f32(s.rope_base));
    w.set(a + "attention.layer_norm_rms_epsilon", Value::f32(1e-5f));
  }
  if (s.n_expert > 0) {
    w.set(a + "expert_count", Value::u32(static_cast<uint32_t>(s.n_expert)));
    w.set(a + "expert_used_count", Value::u32(static_cast<uint32_t>(s.n_expert_used)));
  }
  if (s.arch == "qwen2moe") {
    w.set(a + "expert_feed_forward_length", Value::u32(static_cast<uint32_t>(s.expert_ffn())));
    w.set(a + "expert_shared_feed_forward_length", Value::u32(static_cast<uint32_t>(s.shared_ffn())));
  }
  if (s.rope_scaling == "yarn") {  // as Qwen2.5's long-context setting: factor 4 over a quarter of the context
    w.set(a + "rope.scaling.type", Value::string("yarn"));
    w.set(a + "rope.scaling.factor", Value::f32(4.0f));
    w.set(a + "rope.scaling.original_context_length", Value::u32(static_cast<uint32_t>(std::max(1, s.n_ctx / 4))));
  }
  if (s.rope_scaling == "linear") {
    w.set(a + "rope.scaling.type", Value::string("linear"));
    w.set(a + "rope.scaling.factor", Value::f32(4.0f));
  }
  if (s.arch == "gemma2") {
    w.set(a + "attention.key_length", Value::u32(static_cast<uint32_t>(s.head_size())));
    w.set(a + "attention.value_length", Value::u32(static_cast<uint32_t>(s.head_size())));
    w.set(a + "attention.sliding_window",
          Value::u32(static_cast<uint32_t>(s.sliding_window > 0 ? s.sliding_window : std::min(s.n_ctx, 4096))));
    w.set(a + "attn_logit_softcapping", Value::f32(s.attn_softcap));
    w.set(a + "final_logit_softcapping", Value::f32(s.final_softcap));
  }
  if (s.arch == "llama" && s.sliding_window > 0) {
    w.set(a + "attention.sliding_window", Value::u32(static_cast<uint32_t>(s.sliding_window)));
  }
  if (s.arch == "phi3") {
    w.set(a + "rope.scaling.original_context_length", Value::u32(kPhi3OrigCtx));
    w.set(a + "rope.scaling.attn_factor", Value::f32(longrope_attn_factor(s.n_ctx, kPhi3OrigCtx)));
    // As the 128k files: a window as long as the context, so attention is full.
    w.set(a + "attention.sliding_window",
          Value::u32(static_cast<uint32_t>(s.sliding_window > 0 ? s.sliding_window : s.n_ctx)));
  }
  w.set("general.file_type", Value::u32(gguf_file_type(s.weight_type)));
  SpmVocabulary vocab = make_synthetic_vocab(s.n_vocab);
  if (s.arch == "phi3") {
    // Phi-3's chat control tokens (llama.cpp looks them up), in place of the last fillers.
    const char* const specials[] = {"<|endoftext|>", "<|assistant|>", "<|system|>", "<|end|>", "<|user|>"};
    size_t at = vocab.tokens.size() - std::size(specials);
    for (const char* sp : specials) vocab.tokens[at] = sp, vocab.scores[at] = 0.0f, vocab.types[at++] = 3;
  }
  set_spm_vocabulary(w, vocab);

  TensorSink t{s, w, pool};
  if (s.strong_layers) t.layer_std = kGpt2WeightStd;
  // GPT-2's embedding is small (std 0.14 in the released weights): its head is tied,
  // and the logits should spread as a trained model's, neither flat nor one-hot.
  const bool small_embd = gpt2 || s.arch == "phi3" || s.strong_layers;
  t.matrix("token_embd.weight", s.n_embd, s.n_vocab, small_embd ? kGpt2EmbdStd : 1.0f);
  if (gpt2) {
    add_gpt2_layers(t);
  } else if (s.arch == "phi3") {
    add_phi3_layers(t);
  } else if (s.arch == "gemma2") {
    add_gemma2_layers(t);
  } else {
    add_llama_layers(t);
  }
  return w.write(path);
}

Status write_synthetic_hf_model(const SyntheticSpec& spec, const std::string& dir) {
  const std::string tmp = dir + ".gguf.tmp";
  LLMS_RETURN_IF_ERROR(write_synthetic_model(spec, tmp));
  Status s = [&]() -> Status {
    LLMS_ASSIGN_OR_RETURN(GgufFile f, GgufFile::open(tmp));
    return write_hf_model(f, dir);
  }();
  std::remove(tmp.c_str());
  return s;
}

}  // namespace llms
