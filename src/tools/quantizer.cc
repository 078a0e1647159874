#include "tools/quantizer.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <mutex>

#include "base/log.h"
#include "base/thread_pool.h"
#include "io/gguf_file.h"
#include "io/gguf_writer.h"
#include "io/hf_model.h"
#include "kernels/convert.h"
#include "tools/model_vocabulary.h"
#include "quant/error_stats.h"
#include "quant/row_convert.h"

namespace llms {
namespace {

// Types in order of precision, with bits per weight.
struct Rung {
  DType type;
  double bpw;
};
constexpr Rung kLadder[] = {{DType::kQ3_K, 3.4375}, {DType::kIQ4_XS, 4.25}, {DType::kQ4_0, 4.5},
                            {DType::kIQ4_NL, 4.5},  {DType::kQ4_K, 4.5},    {DType::kQ5_0, 5.5},
                            {DType::kQ5_K, 5.5},    {DType::kQ6_K, 6.5625}, {DType::kQ8_0, 8.5},
                            {DType::kBF16, 16},     {DType::kF16, 16},      {DType::kF32, 32}};

int rung_of(DType t) {
  for (int i = 0; i < static_cast<int>(std::size(kLadder)); ++i)
    if (kLadder[i].type == t) return i;
  return -1;
}

// The type nearest to `want` in bits per weight whose blocks fit rows of `cols`,
// preferring the more precise one on ties.
DType nearest_fitting(DType want, int64_t cols) {
  const double target = kLadder[rung_of(want)].bpw;
  DType best = DType::kF32;
  double best_diff = 1e9;
  for (int i = static_cast<int>(std::size(kLadder)) - 1; i >= 0; --i) {
    if (!row_fits_blocks(kLadder[i].type, cols)) continue;
    const double diff = std::abs(kLadder[i].bpw - target);
    if (diff < best_diff) best = kLadder[i].type, best_diff = diff;
  }
  return best;
}

// The next more precise type that fits, or nullopt at the top.
std::optional<DType> promote(DType t, int64_t cols) {
  for (int i = rung_of(t) + 1; i < static_cast<int>(std::size(kLadder)); ++i) {
    if (kLadder[i].type == DType::kBF16) continue;  // prefer F16 as the 16-bit step
    if (row_fits_blocks(kLadder[i].type, cols)) return kLadder[i].type;
  }
  return std::nullopt;
}

DType protected_type(DType target) {
  switch (target) {
    case DType::kQ3_K: case DType::kIQ4_XS: case DType::kQ4_0: case DType::kIQ4_NL: case DType::kQ4_K:
    case DType::kQ5_0: case DType::kQ5_K: case DType::kQ6_K: return DType::kQ8_0;
    case DType::kQ8_0: return DType::kF16;
    default: return target;
  }
}

}  // namespace

bool is_expert_router(const std::string& name) { return name.find(".ffn_gate_inp.") != std::string::npos; }

namespace {

// Layer index (from 0) of "blk.N.*", or -1.
int layer_of(const std::string& name) {
  if (name.rfind("blk.", 0) != 0) return -1;
  return std::atoi(name.c_str() + 4);
}

// The importance of `t`'s input channels: [cols], or [n_expert * cols] for a stacked
// expert tensor; empty when there is none (check_importance_fits refused misfits).
std::vector<float> importance_of(const GgufTensorInfo& t, const QuantizeOptions& o) {
  if (o.importance == nullptr || t.n_dims < 2) return {};
  std::vector<float> imp = o.importance->tensor_importance(t.name);
  const auto n = static_cast<int64_t>(imp.size());
  return n == t.ne[0] || n == t.num_elements() / t.ne[1] ? imp : std::vector<float>{};
}

// The weights for row `r` of `t`: the whole vector, or its expert's slice of it.
const float* row_importance(const std::vector<float>& imp, const GgufTensorInfo& t, int64_t r) {
  if (imp.empty()) return nullptr;
  return static_cast<int64_t>(imp.size()) == t.ne[0] ? imp.data() : imp.data() + (r / t.ne[1]) * t.ne[0];
}

struct Measured {
  QuantErrorStats stats;
  double weighted_error = -1;
};

// Error of encoding `t` (its bytes `data`, decoded from its source type) in `type`,
// over all rows.
Measured measure(const GgufTensorInfo& t, const uint8_t* data, DType type, const std::vector<float>& imp, ThreadPool& pool) {
  const int64_t cols = t.ne[0], rows = t.num_elements() / cols;
  const int64_t src_row = dtype_row_bytes(t.dtype, cols);
  std::mutex mu;
  Measured total;
  double werr = 0, wref = 0;
  const bool weighted = !imp.empty();
  pool.parallel_for(rows, 1, 8, [&](int64_t r0, int64_t r1) {
    std::vector<float> x(static_cast<size_t>(cols)), y(static_cast<size_t>(cols));
    std::vector<uint8_t> q(static_cast<size_t>(dtype_row_bytes(type, cols)));
    QuantErrorStats local;
    double le = 0, lr = 0;
    for (int64_t r = r0; r < r1; ++r) {
      const float* w = row_importance(imp, t, r);
      decode_row(t.dtype, data + r * src_row, x.data(), cols);
      quantize_row_weighted(type, x.data(), w, q.data(), cols);
      decode_row(type, q.data(), y.data(), cols);
      local.add(x.data(), y.data(), cols);
      for (int64_t c = 0; w != nullptr && c < cols; ++c) {
        le += w[c] * static_cast<double>(x[c] - y[c]) * (x[c] - y[c]);
        lr += w[c] * static_cast<double>(x[c]) * x[c];
      }
    }
    std::lock_guard<std::mutex> lock(mu);
    total.stats.merge(local);
    werr += le, wref += lr;
  });
  if (weighted) total.weighted_error = wref > 0 ? werr / wref : 0;
  return total;
}

TensorDecision decide(const GgufTensorInfo& t, const uint8_t* data, const QuantizeOptions& o, int n_layers,
                      ThreadPool& pool) {
  TensorDecision d;
  d.name = t.name;
  d.from = t.dtype;
  const int64_t cols = t.ne[0];
  if (t.n_dims < 2) {
    d.to = DType::kF32;
    d.reason = "vector (norm or bias): kept F32";
    return d;
  }
  if (is_expert_router(t.name)) {
    d.to = DType::kF32;
    d.reason = "expert router: kept F32";
    return d;
  }
  d.to = o.type;
  const std::vector<float> imp = importance_of(t, o);
  if (const auto it = o.plan.find(t.name); it != o.plan.end()) {
    d.to = it->second;
    d.reason = "plan";
    const Measured m = measure(t, data, d.to, imp, pool);
    d.relative_rms = m.stats.relative_rms();
    d.weighted_error = m.weighted_error;
    return d;
  }
  for (const auto& rule : o.keep) {
    const bool hit = std::any_of(rule.patterns.begin(), rule.patterns.end(),
                                 [&](const std::string& p) { return t.name.find(p) != std::string::npos; });
    if (hit) {
      d.to = rule.type;
      d.reason = fmt::format("--keep {}", dtype_name(rule.type));
      break;
    }
  }
  if (d.reason.empty() && o.protect_embeddings && (t.name == "output.weight" || t.name == "token_embd.weight") &&
      protected_type(o.type) != o.type) {
    d.to = protected_type(o.type);
    d.reason = "output head / token embedding kept at higher precision";
  }
  if (!row_fits_blocks(d.to, cols)) {
    const DType fit = nearest_fitting(d.to, cols);
    d.reason = fmt::format("rows of {} are not whole {} blocks: nearest type that fits", cols, dtype_name(d.to));
    d.to = fit;
  }
  Measured err = measure(t, data, d.to, imp, pool);
  if (o.policy == QuantPolicy::kDepth && d.reason.rfind("--keep", 0) != 0) {
    const int layer = layer_of(t.name);
    const double tol = layer < 0 ? o.tolerance : o.tolerance * (layer + 1) / n_layers;
    while (err.stats.relative_rms() > tol) {
      const auto up = promote(d.to, cols);
      if (!up) break;
      d.reason = fmt::format("promoted from {}: error {:.4f} > tolerance {:.4f}", dtype_name(d.to),
                             err.stats.relative_rms(), tol);
      d.to = *up;
      err = measure(t, data, d.to, imp, pool);
    }
  }
  d.relative_rms = err.stats.relative_rms();
  d.weighted_error = err.weighted_error;
  return d;
}

}  // namespace

Result<KeepRule> parse_keep_rule(const std::string& text) {
  const auto colon = text.find(':');
  if (colon == std::string::npos || colon + 1 >= text.size()) {
    return invalid_argument("--keep expects TYPE:PATTERN[,PATTERN...], got '" + text + "'");
  }
  KeepRule r;
  const auto type = dtype_from_name(text.substr(0, colon));
  if (!type || (!quantize_target_supported(*type) && *type != DType::kF32)) {
    return invalid_argument("--keep: '" + text.substr(0, colon) + "' is not a type quantize can write");
  }
  r.type = *type;
  std::string rest = text.substr(colon + 1);
  size_t at = 0;
  while (at <= rest.size()) {
    const size_t comma = rest.find(',', at);
    const std::string p = rest.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    if (!p.empty()) r.patterns.push_back(p);
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  if (r.patterns.empty()) return invalid_argument("--keep '" + text + "' has no pattern");
  return r;
}

bool quantize_target_supported(DType type) { return rung_of(type) >= 0 && can_quantize(type); }

bool type_fits_rows(DType type, int64_t cols) { return row_fits_blocks(type, cols); }

Result<QuantizeReport> quantize_model(const std::string& in_path, const std::string& out_path,
                                      const QuantizeOptions& o) {
  for (const auto& [name, type] : o.plan) {
    if (!quantize_target_supported(type)) return invalid_argument(fmt::format("plan: cannot write {} as {}", name, dtype_name(type)));
  }
  if (!quantize_target_supported(o.type)) {
    return invalid_argument(fmt::format("cannot quantize to {} (f32, f16, bf16, q8_0, q6_k, q4_k, q4_0)", dtype_name(o.type)));
  }
  if (!(o.tolerance > 0)) return invalid_argument("--tolerance must be > 0");
  if (in_path == out_path) return invalid_argument("the output must be a different file than the input");
  LLMS_ASSIGN_OR_RETURN(GgufFile in, open_model_file(in_path));
  const auto arch = in.get_string_or("general.architecture", "");
  const auto blocks = in.get_uint_or((arch.ok() ? *arch : std::string()) + ".block_count", 1);
  const int n_layers = std::max<int>(1, blocks.ok() ? static_cast<int>(*blocks) : 1);
  if (o.importance != nullptr) LLMS_RETURN_IF_ERROR(check_importance_fits(*o.importance, in));
  for (const auto& t : in.tensors()) {
    if (!can_dequantize(t.dtype)) {
      return unimplemented(fmt::format("tensor '{}' has type {}, which cannot be decoded", t.name, dtype_name(t.dtype)));
    }
  }
  ThreadPool pool(o.threads);
  GgufWriter w(in.alignment());
  for (const auto& [key, value] : in.metadata()) {
    if (key != "general.alignment") w.set(key, value);
  }
  LLMS_RETURN_IF_ERROR(add_vocabulary(in, o.vocab_from, w));
  QuantizeReport report;
  std::vector<std::string> kept;
  for (const auto& t : in.tensors()) {
    const LoraMerge* merge = o.lora != nullptr && o.lora->adapts(t.name) ? o.lora : nullptr;
    TensorDecision d;
    if (merge != nullptr) {  // decided on the merged weights, as they will be written
      const std::vector<float> merged = merge->merged(in, t, pool);
      GgufTensorInfo f32 = t;
      f32.dtype = DType::kF32;
      f32.num_bytes = merged.size() * sizeof(float);
      d = decide(f32, reinterpret_cast<const uint8_t*>(merged.data()), o, n_layers, pool);
      d.from = t.dtype;
    } else {
      d = decide(t, in.read(t).data(), o, n_layers, pool);
    }
    std::vector<int64_t> ne(t.ne.begin(), t.ne.begin() + t.n_dims);
    d.bytes = static_cast<uint64_t>(dtype_row_bytes(d.to, t.ne[0]) * (t.num_elements() / t.ne[0]));
    report.bytes_in += t.num_bytes;
    report.bytes_out += d.bytes;
    if (!d.reason.empty() && t.n_dims >= 2) kept.push_back(fmt::format("{}: {} ({})", d.name, dtype_name(d.to), d.reason));
    const GgufTensorInfo* src = &t;
    const DType to = d.to;
    w.add_tensor(t.name, to, ne, [src, to, merge, imp = importance_of(t, o), &pool, &in](std::span<uint8_t> out) {
      const int64_t cols = src->ne[0], rows = src->num_elements() / cols;
      if (merge != nullptr) {  // merged again here, so that one tensor at a time is held
        const std::vector<float> merged = merge->merged(in, *src, pool);
        const int64_t out_row = dtype_row_bytes(to, cols);
        pool.parallel_for(rows, 1, 8, [&](int64_t r0, int64_t r1) {
          for (int64_t r = r0; r < r1; ++r) {
            quantize_row_weighted(to, merged.data() + r * cols, row_importance(imp, *src, r), out.data() + r * out_row,
                                  cols);
          }
        });
        return;
      }
      const TensorData bytes = in.read(*src);  // computed once, for a tensor of a model directory
      const int64_t in_row = dtype_row_bytes(src->dtype, cols), out_row = dtype_row_bytes(to, cols);
      pool.parallel_for(rows, 1, 8, [&](int64_t r0, int64_t r1) {
        std::vector<float> x(static_cast<size_t>(cols));
        for (int64_t r = r0; r < r1; ++r) {
          decode_row(src->dtype, bytes.data() + r * in_row, x.data(), cols);
          quantize_row_weighted(to, x.data(), row_importance(imp, *src, r), out.data() + r * out_row, cols);
        }
      });
    });
    report.tensors.push_back(std::move(d));
  }
  // A plan's file type is the type that holds the most weights.
  DType file_type = o.type;
  if (!o.plan.empty()) {
    std::map<DType, uint64_t> held;
    for (const auto& t : in.tensors()) {
      if (const auto it = o.plan.find(t.name); it != o.plan.end()) held[it->second] += static_cast<uint64_t>(t.num_elements());
    }
    file_type = std::max_element(held.begin(), held.end(), [](const auto& a, const auto& b) { return a.second < b.second; })->first;
  }
  w.set("general.file_type", gguf::Value::u32(gguf_file_type(file_type)));
  w.set("llmserve.quantize.type", gguf::Value::string(o.plan.empty() ? std::string(dtype_name(o.type)) : "plan"));
  w.set("llmserve.quantize.policy", gguf::Value::string(o.policy == QuantPolicy::kDepth
                                                            ? fmt::format("depth (tolerance {})", o.tolerance)
                                                            : std::string("default")));
  w.set("llmserve.quantize.kept", gguf::Value::string_array(kept));
  if (o.importance != nullptr) {
    w.set("llmserve.quantize.imatrix", gguf::Value::string_array(o.importance->datasets));
  }
  if (o.lora != nullptr) w.set("llmserve.quantize.lora", gguf::Value::string(o.lora->describe()));
  for (const auto& [key, value] : o.metadata) w.set(key, gguf::Value::string(value));
  LLMS_RETURN_IF_ERROR(w.write(out_path));
  return report;
}

Result<std::unique_ptr<Model>> quantized_model(const std::string& path, DType type, int threads) {
  if (!quantize_target_supported(type)) {
    return invalid_argument(fmt::format("precision variant '{}' is not a type quantize can write", dtype_name(type)));
  }
  static std::atomic<int> serial{0};
  const std::string out = (std::filesystem::temp_directory_path() /
                           fmt::format("llmserve-variant-{}-{}-{}.gguf", getpid(), serial.fetch_add(1), dtype_name(type)))
                              .string();
  QuantizeOptions q;
  q.type = type;
  q.threads = threads;
  auto report = quantize_model(path, out, q);
  if (!report.ok()) {
    std::remove(out.c_str());
    return Status(report.status().code(),
                  fmt::format("precision variant {}: {}", dtype_name(type), report.status().message()));
  }
  auto model = Model::load(out);
  std::remove(out.c_str());  // the mapping keeps what the model reads
  if (model.ok()) {
    log_info("precision variant {}: {:.2f} MiB of weights", dtype_name(type),
             static_cast<double>(report->bytes_out) / (1 << 20));
  }
  return model;
}

}  // namespace llms
