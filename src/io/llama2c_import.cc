#include "io/llama2c_import.h"

#include <fmt/format.h>

#include <cctype>
#include <cstring>
#include <vector>

#include "base/mapped_file.h"
#include "io/gguf_writer.h"

namespace llms {

using gguf::Value;

namespace {

Result<Llama2cHeader> read_header(const MappedFile& f) {
  if (f.size() >= 4 && std::memcmp(f.data(), "24ka", 4) == 0) {
    return unimplemented(fmt::format("'{}' is a versioned llama2.c export (magic 'ak42'); only the legacy export "
                                     "(export.py --version 0) is supported",
                                     f.path()));
  }
  if (f.size() < 28) return data_loss(fmt::format("'{}' is {} bytes, too small for a llama2.c header", f.path(), f.size()));
  int32_t h[7];
  std::memcpy(h, f.data(), sizeof(h));
  Llama2cHeader hd{h[0], h[1], h[2], h[3], h[4], h[5], h[6], true};
  if (hd.vocab_size < 0) {
    hd.shared_classifier = false;
    hd.vocab_size = -hd.vocab_size;
  }
  const bool sane = hd.dim > 0 && hd.hidden_dim > 0 && hd.n_layers > 0 && hd.n_heads > 0 && hd.n_kv_heads > 0 &&
                    hd.vocab_size > 0 && hd.seq_len > 0 && hd.dim <= 65536 && hd.hidden_dim <= 262144 &&
                    hd.n_layers <= 1024 && hd.vocab_size <= (1 << 22) && hd.seq_len <= (1 << 22) &&
                    hd.dim % hd.n_heads == 0 && hd.n_heads % hd.n_kv_heads == 0 && (hd.dim / hd.n_heads) % 2 == 0;
  if (!sane) {
    return data_loss(fmt::format("'{}': implausible llama2.c header (dim {}, hidden {}, layers {}, heads {}, kv heads {}, "
                                 "vocab {}, seq_len {})",
                                 f.path(), hd.dim, hd.hidden_dim, hd.n_layers, hd.n_heads, hd.n_kv_heads, hd.vocab_size,
                                 hd.seq_len));
  }
  return hd;
}

bool is_byte_token(const std::string& t) {
  return t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>' && std::isxdigit(static_cast<unsigned char>(t[3])) &&
         std::isxdigit(static_cast<unsigned char>(t[4]));
}

// tokenizer.bin: int32 max_token_length, then per token: float score, int32 length, bytes.
// llama2.c stores SentencePiece's U+2581 as a plain space and BOS/EOS as "\n<s>\n".
Result<SpmVocabulary> read_tokenizer(const std::string& path, int vocab_size) {
  LLMS_ASSIGN_OR_RETURN(MappedFile f, MappedFile::open(path));
  const uint8_t* p = f.data();
  const size_t size = f.size();
  size_t pos = 4;
  if (size < 4) return data_loss(fmt::format("'{}' is too small for a llama2.c tokenizer", path));
  SpmVocabulary v;
  for (int i = 0; i < vocab_size; ++i) {
    if (pos + 8 > size) {
      return data_loss(fmt::format("'{}' ends at token {} of {} (offset {}); does it belong to this model?", path, i,
                                   vocab_size, pos));
    }
    float score;
    int32_t len;
    std::memcpy(&score, p + pos, 4);
    std::memcpy(&len, p + pos + 4, 4);
    pos += 8;
    if (len < 0 || static_cast<size_t>(len) > size - pos) {
      return data_loss(fmt::format("'{}': token {} claims {} bytes at offset {}", path, i, len, pos));
    }
    std::string tok(reinterpret_cast<const char*>(p + pos), static_cast<size_t>(len));
    pos += static_cast<size_t>(len);
    int32_t type = 1;  // normal
    if (i == 0) {
      type = 2;  // unknown
    } else if (i == 1 || i == 2) {
      type = 3;  // control
      tok = i == 1 ? "<s>" : "</s>";
    } else if (is_byte_token(tok)) {
      type = 6;
    } else {
      std::string mapped;
      for (char c : tok) mapped += c == ' ' ? std::string("\xE2\x96\x81") : std::string(1, c);
      tok = std::move(mapped);
    }
    v.tokens.push_back(std::move(tok));
    v.scores.push_back(score);
    v.types.push_back(type);
  }
  return v;
}

}  // namespace

Status convert_llama2c(const std::string& model_path, const std::string& tokenizer_path, const std::string& out_path) {
  LLMS_ASSIGN_OR_RETURN(MappedFile model, MappedFile::open(model_path));
  LLMS_ASSIGN_OR_RETURN(Llama2cHeader h, read_header(model));
  const int64_t d = h.dim, hid = h.hidden_dim, L = h.n_layers, V = h.vocab_size;
  const int64_t hd = d / h.n_heads, kv = hd * h.n_kv_heads;
  // Section sizes in floats, in file order.
  const int64_t sizes[] = {V * d, L * d, L * d * d, L * d * kv, L * d * kv, L * d * d, L * d,
                           L * hid * d, L * d * hid, L * hid * d, d, static_cast<int64_t>(h.seq_len) * hd};
  int64_t floats = 0;
  for (int64_t s : sizes) floats += s;
  if (!h.shared_classifier) floats += V * d;
  const uint64_t expected = 28 + static_cast<uint64_t>(floats) * 4;
  if (model.size() != expected) {
    return data_loss(fmt::format("'{}' is {} bytes but its header (dim {}, layers {}, vocab {}) implies {}", model_path,
                                 model.size(), h.dim, h.n_layers, V, expected));
  }
  LLMS_ASSIGN_OR_RETURN(SpmVocabulary vocab, read_tokenizer(tokenizer_path, h.vocab_size));

  GgufWriter w;
  w.set("general.architecture", Value::string("llama"));
  w.set("general.name", Value::string("llama2.c import"));
  w.set("llama.context_length", Value::u32(static_cast<uint32_t>(h.seq_len)));
  w.set("llama.embedding_length", Value::u32(static_cast<uint32_t>(d)));
  w.set("llama.feed_forward_length", Value::u32(static_cast<uint32_t>(hid)));
  w.set("llama.attention.head_count", Value::u32(static_cast<uint32_t>(h.n_heads)));
  w.set("llama.attention.head_count_kv", Value::u32(static_cast<uint32_t>(h.n_kv_heads)));
  w.set("llama.block_count", Value::u32(static_cast<uint32_t>(L)));
  w.set("llama.rope.dimension_count", Value::u32(static_cast<uint32_t>(hd)));
  w.set("llama.attention.layer_norm_rms_epsilon", Value::f32(1e-5f));
  set_spm_vocabulary(w, vocab);

  const uint8_t* base = model.data() + 28;
  int64_t off = 0;  // in floats
  auto take = [&](int64_t n) {
    std::span<const uint8_t> s(base + off * 4, static_cast<size_t>(n) * 4);
    off += n;
    return s;
  };
  auto per_layer = [&](const std::string& name, std::vector<int64_t> ne) {
    int64_t n = 1;
    for (int64_t x : ne) n *= x;
    std::span<const uint8_t> all = take(n * L);
    for (int64_t l = 0; l < L; ++l) {
      w.add_tensor(fmt::format("blk.{}.{}", l, name), DType::kF32, ne, all.subspan(static_cast<size_t>(l * n * 4), static_cast<size_t>(n * 4)));
    }
  };
  w.add_tensor("token_embd.weight", DType::kF32, {d, V}, take(V * d));
  per_layer("attn_norm.weight", {d});
  per_layer("attn_q.weight", {d, d});
  per_layer("attn_k.weight", {d, kv});
  per_layer("attn_v.weight", {d, kv});
  per_layer("attn_output.weight", {d, d});
  per_layer("ffn_norm.weight", {d});
  per_layer("ffn_gate.weight", {d, hid});
  per_layer("ffn_down.weight", {hid, d});
  per_layer("ffn_up.weight", {d, hid});
  w.add_tensor("output_norm.weight", DType::kF32, {d}, take(d));
  take(static_cast<int64_t>(h.seq_len) * hd);  // RoPE tables: recomputed from the base
  if (!h.shared_classifier) w.add_tensor("output.weight", DType::kF32, {d, V}, take(V * d));
  return w.write(out_path);
}

}  // namespace llms
