// The independent double-precision reference of the model tests: plain loops over the
// GGUF tensors, sharing no code with model/ or kernels/ (see double_reference.h).
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "io/gguf_file.h"
#include "model/model.h"
#include "quant/half.h"
#include "model/testing/double_reference.h"

namespace llms::reference {

// Reads a tensor as doubles (F32 or F16), row-major in GGUF order.
Vec read(const GgufFile& f, const std::string& name) {
  const GgufTensorInfo* t = f.find_tensor(name);
  EXPECT_NE(t, nullptr) << name;
  if (t == nullptr) return {};
  Vec v(static_cast<size_t>(t->num_elements()));
  for (size_t i = 0; i < v.size(); ++i) {
    if (t->dtype == DType::kF32) {
      v[i] = reinterpret_cast<const float*>(t->data)[i];
    } else {
      v[i] = f16_to_f32(reinterpret_cast<const uint16_t*>(t->data)[i]);
    }
  }
  return v;
}

// y = W x for W stored with ne = {cols, rows}.
Vec matvec(const Vec& w, const Vec& x) {
  const size_t cols = x.size(), rows = w.size() / cols;
  Vec y(rows, 0.0);
  for (size_t r = 0; r < rows; ++r)
    for (size_t c = 0; c < cols; ++c) y[r] += w[r * cols + c] * x[c];
  return y;
}

// True where the engine's product with this weight rounds its input to F16 (F16
// weights, as GGML's F16 products do; see kernels/matmul.cc).
bool half_input(const GgufFile& f, const std::string& name) {
  const GgufTensorInfo* t = f.find_tensor(name);
  return t != nullptr && t->dtype == DType::kF16;
}

Vec to_half(Vec x) {
  for (double& v : x) v = f16_to_f32(f32_to_f16(static_cast<float>(v)));
  return x;
}

// W x for the weight tensor `name`, its input rounded as the engine rounds it.
Vec product(const GgufFile& f, const std::string& name, const Vec& x) {
  return matvec(read(f, name), half_input(f, name) ? to_half(x) : x);
}

Vec rmsnorm(const Vec& x, const Vec& w, double eps) {
  double ss = 0;
  for (double v : x) ss += v * v;
  const double s = 1.0 / std::sqrt(ss / static_cast<double>(x.size()) + eps);
  Vec y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * s * w[i];
  return y;
}

// factors: frequency divisors (LongRoPE), or empty; mscale multiplies cos and sin.
void rope(Vec& v, int n_heads, int hd, int64_t pos, double base, bool neox, const Vec& factors = {},
          double mscale = 1.0) {
  for (int h = 0; h < n_heads; ++h) {
    for (int i = 0; i < hd / 2; ++i) {
      const double theta = static_cast<double>(pos) * std::pow(base, -2.0 * i / hd) / (factors.empty() ? 1.0 : factors[i]);
      const int a = h * hd + (neox ? i : 2 * i), b = h * hd + (neox ? i + hd / 2 : 2 * i + 1);
      const double x0 = v[a], x1 = v[b];
      v[a] = mscale * (x0 * std::cos(theta) - x1 * std::sin(theta));
      v[b] = mscale * (x0 * std::sin(theta) + x1 * std::cos(theta));
    }
  }
}

// Rows [first, first + count) of a row-major matrix with `cols` columns.
Vec rows(const Vec& m, size_t cols, size_t first, size_t count) {
  return Vec(m.begin() + first * cols, m.begin() + (first + count) * cols);
}

Vec swiglu(const Vec& g, const Vec& u) {
  Vec h(g.size());
  for (size_t i = 0; i < g.size(); ++i) h[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
  return h;
}

// A mixture of experts at layer prefix `p` (as Mixtral's and Qwen2-MoE's reference
// code): softmax over the router's logits, the top k experts (ties: lower index),
// their probabilities renormalized (llama) or not (qwen2moe), each a SwiGLU; plus
// Qwen2-MoE's shared expert times sigmoid(gate . x).
Vec moe_reference(const GgufFile& f, const std::string& arch, const std::string& p, const Vec& x) {
  const size_t d = x.size();
  const int k = static_cast<int>(f.get_uint(arch + ".expert_used_count").value());
  const Vec lg = matvec(read(f, p + "ffn_gate_inp.weight"), x);
  double mx = -1e300, sum = 0;
  for (double v : lg) mx = std::max(mx, v);
  Vec prob(lg.size());
  for (size_t e = 0; e < lg.size(); ++e) sum += (prob[e] = std::exp(lg[e] - mx));
  for (double& v : prob) v /= sum;
  std::vector<size_t> chosen;
  double chosen_sum = 0;
  for (int j = 0; j < k; ++j) {
    size_t best = lg.size();
    for (size_t e = 0; e < lg.size(); ++e) {
      if (std::find(chosen.begin(), chosen.end(), e) != chosen.end()) continue;
      if (best == lg.size() || prob[e] > prob[best]) best = e;
    }
    chosen.push_back(best);
    chosen_sum += prob[best];
  }
  const Vec gates = read(f, p + "ffn_gate_exps.weight"), ups = read(f, p + "ffn_up_exps.weight");
  const Vec downs = read(f, p + "ffn_down_exps.weight");
  const size_t ff = gates.size() / d / lg.size();
  const Vec xh = half_input(f, p + "ffn_gate_exps.weight") ? to_half(x) : x;
  Vec out(d, 0.0);
  for (size_t e : chosen) {
    const Vec h = swiglu(matvec(rows(gates, d, e * ff, ff), xh), matvec(rows(ups, d, e * ff, ff), xh));
    const Vec y = matvec(rows(downs, ff, e * d, d), half_input(f, p + "ffn_down_exps.weight") ? to_half(h) : h);
    const double w = arch == "qwen2moe" ? prob[e] : prob[e] / chosen_sum;
    for (size_t i = 0; i < d; ++i) out[i] += w * y[i];
  }
  if (f.find_tensor(p + "ffn_gate_inp_shexp.weight")) {
    const Vec g = read(f, p + "ffn_gate_inp_shexp.weight");
    double dot = 0;
    for (size_t i = 0; i < d; ++i) dot += g[i] * x[i];
    const Vec h = swiglu(product(f, p + "ffn_gate_shexp.weight", x), product(f, p + "ffn_up_shexp.weight", x));
    const Vec y = product(f, p + "ffn_down_shexp.weight", h);
    for (size_t i = 0; i < d; ++i) out[i] += y[i] / (1.0 + std::exp(-dot));
  }
  return out;
}

// Logits at every position of `tokens`; `context` picks LongRoPE's factor set. With
// `exits`, early exit forced (see double_reference.h), and the cache's rows kept there.
std::vector<Vec> reference_logits(const GgufFile& f, const std::vector<int32_t>& tokens, int context,
                                  ExitReference* exits = nullptr) {
  const std::string arch = f.get_string("general.architecture").value();
  const int d = static_cast<int>(f.get_uint(arch + ".embedding_length").value());
  const int n_layer = static_cast<int>(f.get_uint(arch + ".block_count").value());
  const int n_head = static_cast<int>(f.get_uint(arch + ".attention.head_count").value());
  const int n_kv = static_cast<int>(f.get_uint(arch + ".attention.head_count_kv").value());
  const double eps = f.get_float(arch + ".attention.layer_norm_rms_epsilon").value();
  const double base = f.get_float_or(arch + ".rope.freq_base", 10000.0).value();
  const bool neox = arch == "qwen2" || arch == "qwen2moe" || arch == "phi3" || arch == "gemma2";
  const double mscale = f.get_float_or(arch + ".rope.scaling.attn_factor", 1.0).value();
  const std::string orig_key = arch + ".rope.scaling.original_context_length";
  const int64_t orig = f.has(orig_key) ? static_cast<int64_t>(f.get_uint(orig_key).value()) : (1 << 30);
  Vec factors = !f.find_tensor("rope_factors_long.weight") ? Vec()
                : context > orig                           ? read(f, "rope_factors_long.weight")
                                                           : read(f, "rope_factors_short.weight");
  if (f.find_tensor("rope_freqs.weight")) factors = read(f, "rope_freqs.weight");
  if (f.get_string_or(arch + ".rope.scaling.type", "none").value() == "linear") {
    // Positions divided by the factor: the same as every frequency divided by it.
    const double linear = f.get_float(arch + ".rope.scaling.factor").value();
    factors.assign(static_cast<size_t>(d / n_head / 2), linear);
  }
  double mscale_yarn = 1.0;
  if (f.get_string_or(arch + ".rope.scaling.type", "none").value() == "yarn") {
    // YaRN (its paper's NTK-by-parts): pair i keeps its frequency where its wavelength
    // turns more than beta_fast = 32 times over the original context, is divided by
    // the factor where it turns fewer than beta_slow = 1 times, and between mixes the
    // two linearly over the pair index; cos and sin times 1 + 0.1 ln(factor).
    const double s = f.get_float(arch + ".rope.scaling.factor").value();
    const double n_orig = static_cast<double>(f.get_uint(orig_key).value());
    const int dims = d / n_head;
    auto pair_turning = [&](double turns) { return dims * std::log(n_orig / (turns * 2 * M_PI)) / (2 * std::log(base)); };
    const double lo = std::max(0.0, std::floor(pair_turning(32))), hi = std::min(dims - 1.0, std::ceil(pair_turning(1)));
    factors.clear();
    for (int i = 0; i < dims / 2; ++i) {
      const double keep = 1.0 - std::clamp((i - lo) / std::max(0.001, hi - lo), 0.0, 1.0);
      factors.push_back(1.0 / ((1.0 - keep) / s + keep));
    }
    mscale_yarn = 1.0 + 0.1 * std::log(s);
  }
  const std::string key_len = arch + ".attention.key_length";
  const int hd = f.has(key_len) ? static_cast<int>(f.get_uint(key_len).value()) : d / n_head;
  // Gemma-2: embedding times sqrt(d), soft caps, norms after each block, GELU gate.
  const bool gemma2 = arch == "gemma2";
  const int window = static_cast<int>(f.get_uint_or(arch + ".attention.sliding_window", 0).value());
  const bool phi3_window = arch == "phi3" && window < static_cast<int>(f.get_uint(arch + ".context_length").value());
  const double attn_cap = f.get_float_or(arch + ".attn_logit_softcapping", 0.0).value();
  const double final_cap = f.get_float_or(arch + ".final_logit_softcapping", 0.0).value();
  auto cap = [](double v, double c) { return c > 0 ? c * std::tanh(v / c) : v; };
  const Vec emb = read(f, "token_embd.weight");
  const std::string out_name = f.find_tensor("output.weight") ? "output.weight" : "token_embd.weight";
  const Vec out_w = read(f, out_name);
  const Vec out_norm = read(f, "output_norm.weight");
  std::vector<std::vector<Vec>> keys(n_layer), values(n_layer);
  std::vector<Vec> logits;
  for (size_t pos = 0; pos < tokens.size(); ++pos) {
    Vec x(emb.begin() + tokens[pos] * d, emb.begin() + (tokens[pos] + 1) * d);
    if (gemma2) {
      for (double& v : x) v *= std::sqrt(static_cast<double>(d));
    }
    for (int l = 0; l < n_layer; ++l) {
      const std::string p = "blk." + std::to_string(l) + ".";
      const Vec xn = rmsnorm(x, read(f, p + "attn_norm.weight"), eps);
      if (exits != nullptr && l >= exits->exit_layer[pos]) {
        // Skipped: the exited state's keys and values only (as CALM); x stays as it is.
        Vec k = product(f, p + "attn_k.weight", xn), v = product(f, p + "attn_v.weight", xn);
        if (f.find_tensor(p + "attn_k.bias")) {
          const Vec bk = read(f, p + "attn_k.bias"), bv = read(f, p + "attn_v.bias");
          for (size_t i = 0; i < k.size(); ++i) k[i] += bk[i], v[i] += bv[i];
        }
        rope(k, n_kv, hd, static_cast<int64_t>(pos), base, neox, factors, mscale * mscale_yarn);
        keys[l].push_back(k);
        values[l].push_back(v);
        continue;
      }
      Vec q, k, v;
      if (f.find_tensor(p + "attn_qkv.weight")) {
        const Vec w = read(f, p + "attn_qkv.weight");
        const Vec xh = half_input(f, p + "attn_qkv.weight") ? to_half(xn) : xn;
        q = matvec(rows(w, d, 0, n_head * hd), xh);
        k = matvec(rows(w, d, n_head * hd, n_kv * hd), xh);
        v = matvec(rows(w, d, (n_head + n_kv) * hd, n_kv * hd), xh);
      } else {
        q = product(f, p + "attn_q.weight", xn);
        k = product(f, p + "attn_k.weight", xn);
        v = product(f, p + "attn_v.weight", xn);
      }
      if (f.find_tensor(p + "attn_q.bias")) {
        const Vec bq = read(f, p + "attn_q.bias"), bk = read(f, p + "attn_k.bias"), bv = read(f, p + "attn_v.bias");
        for (size_t i = 0; i < q.size(); ++i) q[i] += bq[i];
        for (size_t i = 0; i < k.size(); ++i) k[i] += bk[i], v[i] += bv[i];
      }
      rope(q, n_head, hd, static_cast<int64_t>(pos), base, neox, factors, mscale * mscale_yarn);
      rope(k, n_kv, hd, static_cast<int64_t>(pos), base, neox, factors, mscale * mscale_yarn);
      keys[l].push_back(k);
      values[l].push_back(v);
      Vec att(static_cast<size_t>(n_head * hd), 0.0);
      // Gemma-2's local (even) layers see the last `window` positions.
      // Phi-3's window (when shorter than its context) on every layer.
      const bool windowed = (gemma2 && l % 2 == 0) || (phi3_window && window > 0);
      const size_t from = windowed && window > 0 && pos + 1 > static_cast<size_t>(window) ? pos + 1 - window : 0;
      for (int h = 0; h < n_head; ++h) {
        const int kh = h / (n_head / n_kv);
        Vec s(pos + 1, -1e300);
        double mx = -1e300;
        for (size_t t = from; t <= pos; ++t) {
          double dot = 0;
          for (int i = 0; i < hd; ++i) dot += q[h * hd + i] * keys[l][t][kh * hd + i];
          s[t] = cap(dot / std::sqrt(static_cast<double>(hd)), attn_cap);
          mx = std::max(mx, s[t]);
        }
        double sum = 0;
        for (size_t t = from; t <= pos; ++t) sum += (s[t] = std::exp(s[t] - mx));
        for (size_t t = from; t <= pos; ++t)
          for (int i = 0; i < hd; ++i) att[h * hd + i] += s[t] / sum * values[l][t][kh * hd + i];
      }
      Vec o = product(f, p + "attn_output.weight", att);
      if (gemma2) o = rmsnorm(o, read(f, p + "post_attention_norm.weight"), eps);
      for (int i = 0; i < d; ++i) x[i] += o[i];
      const Vec xn2 = rmsnorm(x, read(f, p + "ffn_norm.weight"), eps);
      if (f.find_tensor(p + "ffn_gate_inp.weight")) {
        const Vec moe = moe_reference(f, arch, p, xn2);
        for (int i = 0; i < d; ++i) x[i] += moe[i];
        continue;
      }
      Vec g, u;
      if (f.find_tensor(p + "ffn_gate.weight")) {
        g = product(f, p + "ffn_gate.weight", xn2);
        u = product(f, p + "ffn_up.weight", xn2);
      } else {  // fused: gate rows, then up rows
        const Vec w = read(f, p + "ffn_up.weight");
        const size_t ff = w.size() / d / 2;
        const Vec xh = half_input(f, p + "ffn_up.weight") ? to_half(xn2) : xn2;
        g = matvec(rows(w, d, 0, ff), xh);
        u = matvec(rows(w, d, ff, ff), xh);
      }
      Vec hid(g.size());
      for (size_t i = 0; i < g.size(); ++i) {
        const double gelu = 0.5 * g[i] * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (g[i] + 0.044715 * g[i] * g[i] * g[i])));
        hid[i] = (gemma2 ? gelu : g[i] / (1.0 + std::exp(-g[i]))) * u[i];
      }
      Vec down = product(f, p + "ffn_down.weight", hid);
      if (gemma2) down = rmsnorm(down, read(f, p + "post_ffw_norm.weight"), eps);
      for (int i = 0; i < d; ++i) x[i] += down[i];
    }
    const Vec xo = rmsnorm(x, out_norm, eps);
    Vec lg = matvec(out_w, half_input(f, out_name) ? to_half(xo) : xo);
    for (double& v : lg) v = cap(v, final_cap);
    logits.push_back(lg);
  }
  if (exits != nullptr) {
    exits->logits = logits;
    exits->keys = keys;
    exits->values = values;
  }
  return logits;
}

ExitReference reference_with_exits(const GgufFile& f, const std::vector<int32_t>& tokens,
                                   const std::vector<int>& exit_layer) {
  ExitReference r;
  r.exit_layer = exit_layer;
  reference_logits(f, tokens, 0, &r);
  return r;
}

Vec layernorm(const Vec& x, const Vec& w, const Vec& b, double eps) {
  double mean = 0, var = 0;
  for (double v : x) mean += v;
  mean /= static_cast<double>(x.size());
  for (double v : x) var += (v - mean) * (v - mean);
  const double s = 1.0 / std::sqrt(var / static_cast<double>(x.size()) + eps);
  Vec y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = (x[i] - mean) * s * w[i] + b[i];
  return y;
}

Vec add(Vec a, const Vec& b) {
  for (size_t i = 0; i < a.size(); ++i) a[i] += b[i];
  return a;
}

// GPT-2 (as in its paper's code): x = wte[token] + wpe[pos]; per layer
// x += proj(attn(ln_1(x))) with fused c_attn, x += mlp(ln_2(x)) with GELU (tanh form);
// logits = head(ln_f(x)). Multi-head attention without RoPE.
std::vector<Vec> gpt2_reference_logits(const GgufFile& f, const std::vector<int32_t>& tokens) {
  const int d = static_cast<int>(f.get_uint("gpt2.embedding_length").value());
  const int n_layer = static_cast<int>(f.get_uint("gpt2.block_count").value());
  const int n_head = static_cast<int>(f.get_uint("gpt2.attention.head_count").value());
  const double eps = f.get_float("gpt2.attention.layer_norm_epsilon").value();
  const int hd = d / n_head;
  const Vec wte = read(f, "token_embd.weight"), wpe = read(f, "position_embd.weight");
  const std::string head_name = f.find_tensor("output.weight") ? "output.weight" : "token_embd.weight";
  const Vec head = read(f, head_name);
  std::vector<std::vector<Vec>> keys(n_layer), values(n_layer);
  std::vector<Vec> logits;
  for (size_t pos = 0; pos < tokens.size(); ++pos) {
    Vec x(static_cast<size_t>(d));
    for (int i = 0; i < d; ++i) x[i] = wte[tokens[pos] * d + i] + wpe[pos * d + i];
    for (int l = 0; l < n_layer; ++l) {
      const std::string p = "blk." + std::to_string(l) + ".";
      const Vec h = layernorm(x, read(f, p + "attn_norm.weight"), read(f, p + "attn_norm.bias"), eps);
      const Vec qkv = add(product(f, p + "attn_qkv.weight", h), read(f, p + "attn_qkv.bias"));
      keys[l].emplace_back(qkv.begin() + d, qkv.begin() + 2 * d);
      values[l].emplace_back(qkv.begin() + 2 * d, qkv.end());
      Vec att(static_cast<size_t>(d), 0.0);
      for (int hh = 0; hh < n_head; ++hh) {
        Vec s(pos + 1);
        double mx = -1e300, sum = 0;
        for (size_t t = 0; t <= pos; ++t) {
          double dot = 0;
          for (int i = 0; i < hd; ++i) dot += qkv[hh * hd + i] * keys[l][t][hh * hd + i];
          mx = std::max(mx, s[t] = dot / std::sqrt(static_cast<double>(hd)));
        }
        for (double& e : s) sum += (e = std::exp(e - mx));
        for (size_t t = 0; t <= pos; ++t)
          for (int i = 0; i < hd; ++i) att[hh * hd + i] += s[t] / sum * values[l][t][hh * hd + i];
      }
      x = add(x, add(product(f, p + "attn_output.weight", att), read(f, p + "attn_output.bias")));
      const Vec h2 = layernorm(x, read(f, p + "ffn_norm.weight"), read(f, p + "ffn_norm.bias"), eps);
      Vec up = add(product(f, p + "ffn_up.weight", h2), read(f, p + "ffn_up.bias"));
      for (double& u : up) u = 0.5 * u * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (u + 0.044715 * u * u * u)));
      x = add(x, add(product(f, p + "ffn_down.weight", up), read(f, p + "ffn_down.bias")));
    }
    const Vec xo = layernorm(x, read(f, "output_norm.weight"), read(f, "output_norm.bias"), eps);
    logits.push_back(matvec(head, half_input(f, head_name) ? to_half(xo) : xo));
  }
  return logits;
}

// max |a - b| over the row divided by max |b|: relative to the row's scale, so that
// logits near zero do not turn rounding noise into huge ratios.
double row_error(const float* a, const Vec& b) {
  double max_diff = 0, max_ref = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    max_diff = std::max(max_diff, std::abs(a[i] - b[i]));
    max_ref = std::max(max_ref, std::abs(b[i]));
  }
  return max_diff / max_ref;
}

void check_model(const std::string& path, const std::vector<int32_t>& tokens, int context) {
  auto model = Model::load(path);
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  auto file = GgufFile::open(path);
  ASSERT_TRUE(file.ok());
  const bool gpt2 = file->get_string("general.architecture").value() == "gpt2";
  const auto ref = gpt2 ? gpt2_reference_logits(*file, tokens) : reference_logits(*file, tokens, context);
  const ModelConfig& c = (*model)->config();

  const int block_size = kMinKvBlockSize;  // small blocks: many block boundaries
  const int32_t n_blocks = static_cast<int32_t>(tokens.size() / block_size + 2);
  KvCache kv((*model)->kv_config(n_blocks, block_size, DType::kF32, DType::kF32));
  std::vector<int32_t> table;
  for (int32_t b = n_blocks - 1; b >= 0; --b) table.push_back(b);  // scattered blocks on purpose
  ForwardState state;
  state.set_context_length(context);
  ThreadPool pool(2);
  ForwardOutput out;

  // The whole prompt in one chunk, logits everywhere.
  SequenceChunk all{tokens, 0, table, LogitsWanted::kAll};
  ASSERT_TRUE((*model)->forward({&all, 1}, kv, state, pool, out).ok());
  double worst = 0;
  for (size_t p = 0; p < tokens.size(); ++p) worst = std::max(worst, row_error(out.row(static_cast<int64_t>(p)), ref[p]));
  EXPECT_LT(worst, 1e-4) << "prefill";

  // One token at a time through the cache.
  worst = 0;
  for (size_t p = 0; p < tokens.size(); ++p) {
    SequenceChunk one{std::span<const int32_t>(tokens).subspan(p, 1), static_cast<int64_t>(p), table, LogitsWanted::kLast};
    ASSERT_TRUE((*model)->forward({&one, 1}, kv, state, pool, out).ok());
    ASSERT_EQ(out.n_vocab, c.n_vocab);
    worst = std::max(worst, row_error(out.row(0), ref[p]));
  }
  EXPECT_LT(worst, 1e-4) << "decode";
}

}  // namespace llms::reference
