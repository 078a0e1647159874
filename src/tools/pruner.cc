#include "tools/pruner.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <mutex>
#include <numeric>
#include <span>

#include "base/check.h"
#include "base/thread_pool.h"
#include "io/gguf_file.h"
#include "io/gguf_writer.h"
#include "quant/row_convert.h"

namespace llms {
namespace {

// Suffixes of the matrices of a linear layer, as GGUF names them inside "blk.N.".
constexpr const char* kLinear[] = {"attn_q",         "attn_k",         "attn_v",         "attn_qkv",
                                   "attn_output",    "ffn_gate",       "ffn_up",         "ffn_down",
                                   "ffn_gate_exps",  "ffn_up_exps",    "ffn_down_exps",  "ffn_gate_shexp",
                                   "ffn_up_shexp",   "ffn_down_shexp"};

// Layer index (from 0) of "blk.N.*", or -1.
int layer_of(const std::string& name) {
  if (name.rfind("blk.", 0) != 0) return -1;
  size_t i = 4;
  int layer = 0;
  if (i >= name.size() || !std::isdigit(static_cast<unsigned char>(name[i]))) return -1;
  while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i]))) layer = layer * 10 + (name[i++] - '0');
  return i < name.size() && name[i] == '.' ? layer : -1;
}

// Positions 0..n-1 ordered by (key, position): the first k are the ones to zero.
std::vector<int64_t> smallest_first(const std::vector<double>& key, int64_t k) {
  std::vector<int64_t> order(key.size());
  std::iota(order.begin(), order.end(), 0);
  auto less = [&](int64_t a, int64_t b) { return key[a] < key[b] || (key[a] == key[b] && a < b); };
  if (k < static_cast<int64_t>(order.size())) std::nth_element(order.begin(), order.begin() + k, order.end(), less);
  order.resize(static_cast<size_t>(k));
  return order;
}

}  // namespace

Result<PruneSpec> parse_prune_pattern(const std::string& text) {
  if (text == "unstructured") return PruneSpec{PrunePattern::kUnstructured, 0};
  if (text == "2:4") return PruneSpec{PrunePattern::kTwoFour, 0};
  if (text.rfind("block:", 0) == 0) {
    const std::string n = text.substr(6);
    const bool digits = !n.empty() && n.size() <= 6 && std::all_of(n.begin(), n.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!digits || std::stoi(n) < 1) {
      return invalid_argument("--pattern block:N needs a block width N >= 1, got '" + text + "'");
    }
    return PruneSpec{PrunePattern::kBlock, std::stoi(n)};
  }
  return invalid_argument("unknown --pattern '" + text + "': use unstructured, 2:4 or block:N");
}

std::string prune_pattern_name(const PruneSpec& spec) {
  switch (spec.pattern) {
    case PrunePattern::kUnstructured: return "unstructured";
    case PrunePattern::kTwoFour: return "2:4";
    case PrunePattern::kBlock: return fmt::format("block:{}", spec.block);
  }
  return "?";
}

Result<SparsitySchedule> parse_sparsity_schedule(const std::string& text) {
  if (text == "uniform") return SparsitySchedule::kUniform;
  if (text == "depth") return SparsitySchedule::kDepth;
  return invalid_argument("unknown --schedule '" + text + "': use uniform or depth");
}

std::vector<double> layer_sparsities(double sparsity, int num_layers, SparsitySchedule schedule) {
  const auto n = static_cast<size_t>(std::max(num_layers, 0));
  std::vector<double> s(n, sparsity);
  if (schedule == SparsitySchedule::kUniform || n == 0 || sparsity >= kMaxLayerSparsity) return s;
  // Water-filling: layers at the cap stay there, the rest share what is left of the
  // budget (S * n) in proportion to their depth l = 1..n.
  std::vector<bool> capped(n, false);
  for (;;) {
    double budget = sparsity * static_cast<double>(n), weight = 0;
    for (size_t l = 0; l < n; ++l) {
      if (capped[l]) budget -= kMaxLayerSparsity;
      else weight += static_cast<double>(l + 1);
    }
    bool changed = false;
    for (size_t l = 0; l < n; ++l) {
      if (capped[l]) continue;
      s[l] = budget * static_cast<double>(l + 1) / weight;
      if (s[l] > kMaxLayerSparsity) capped[l] = changed = true;
    }
    if (!changed) break;
  }
  for (size_t l = 0; l < n; ++l)
    if (capped[l]) s[l] = kMaxLayerSparsity;
  return s;
}

bool is_prunable_tensor(const std::string& name) {
  if (layer_of(name) < 0) return false;
  const size_t dot = name.find('.', 4);
  const std::string rest = name.substr(dot + 1);
  for (const char* k : kLinear)
    if (rest == std::string(k) + ".weight") return true;
  return false;
}

int64_t prune_row(float* row, int64_t n, double sparsity, const PruneSpec& spec) {
  if (spec.pattern == PrunePattern::kTwoFour) {
    LLMS_CHECK(n % 4 == 0, "prune_row: 2:4 needs whole groups of 4");
    for (int64_t g = 0; g < n; g += 4) {
      std::vector<double> mag(4);
      for (int i = 0; i < 4; ++i) mag[i] = std::fabs(row[g + i]);
      for (int64_t i : smallest_first(mag, 2)) row[g + i] = 0.0f;
    }
    return n / 2;
  }
  const int64_t width = spec.pattern == PrunePattern::kBlock ? spec.block : 1;
  LLMS_CHECK(width >= 1 && n % width == 0, "prune_row: the block width must divide the row");
  const int64_t units = n / width;
  const auto k = std::min<int64_t>(units, std::llround(sparsity * static_cast<double>(units)));
  if (k <= 0) return 0;
  std::vector<double> key(static_cast<size_t>(units), 0.0);
  for (int64_t u = 0; u < units; ++u) {
    // |w| for single weights; the squared L2 norm orders blocks as the norm does.
    for (int64_t i = 0; i < width; ++i) {
      const double w = row[u * width + i];
      key[u] += width == 1 ? std::fabs(w) : w * w;
    }
  }
  for (int64_t u : smallest_first(key, k)) std::fill_n(row + u * width, width, 0.0f);
  return k * width;
}

namespace {

struct Plan {
  const GgufTensorInfo* tensor;
  int layer;
  double target;
};

Status check_options(const PruneOptions& o) {
  if (o.pattern.pattern == PrunePattern::kTwoFour) {
    if (o.sparsity && *o.sparsity != 0.5) {
      return invalid_argument(fmt::format("--pattern 2:4 keeps 2 of every 4 weights, so its sparsity is 0.5; "
                                          "--sparsity {} does not apply (leave it out or give 0.5)", *o.sparsity));
    }
    if (o.schedule != SparsitySchedule::kUniform) {
      return invalid_argument("--pattern 2:4 has the same 50% sparsity in every layer: --schedule depth does not apply");
    }
    return Status();
  }
  if (!o.sparsity) return invalid_argument("--sparsity S is required for --pattern " + prune_pattern_name(o.pattern));
  if (!(*o.sparsity >= 0 && *o.sparsity < 1)) {
    return invalid_argument(fmt::format("--sparsity must be in [0, 1), got {}", *o.sparsity));
  }
  if (o.pattern.pattern == PrunePattern::kBlock && o.pattern.block < 1) {
    return invalid_argument("--pattern block:N needs N >= 1");
  }
  return Status();
}

// The prunable tensors of `in` with their targets, or the first reason the file cannot
// be pruned as asked.
Result<std::vector<Plan>> plan_tensors(const GgufFile& in, const PruneOptions& o) {
  int num_layers = 0;
  for (const auto& t : in.tensors())
    if (is_prunable_tensor(t.name)) num_layers = std::max(num_layers, layer_of(t.name) + 1);
  if (num_layers == 0) {
    return invalid_argument(in.path() + ": no linear-layer weight matrices (blk.N.attn_q.weight, ...) to prune");
  }
  const double s = o.pattern.pattern == PrunePattern::kTwoFour ? 0.5 : *o.sparsity;
  const std::vector<double> per_layer = layer_sparsities(s, num_layers, o.schedule);
  std::vector<Plan> plans;
  for (const auto& t : in.tensors()) {
    if (!is_prunable_tensor(t.name)) continue;
    if (!can_dequantize(t.dtype) || !can_quantize(t.dtype)) {
      return unimplemented(fmt::format("tensor '{}' has type {}, which prune cannot decode and re-encode", t.name,
                                       dtype_name(t.dtype)));
    }
    const int64_t cols = t.ne[0];
    if (o.pattern.pattern == PrunePattern::kTwoFour && cols % 4 != 0) {
      return invalid_argument(fmt::format("--pattern 2:4: rows of '{}' are {} wide, not whole groups of 4", t.name, cols));
    }
    if (o.pattern.pattern == PrunePattern::kBlock && cols % o.pattern.block != 0) {
      return invalid_argument(fmt::format("--pattern block:{}: rows of '{}' are {} wide, which {} does not divide",
                                          o.pattern.block, t.name, cols, o.pattern.block));
    }
    const int layer = layer_of(t.name);
    plans.push_back({&t, layer, per_layer[static_cast<size_t>(layer)]});
  }
  return plans;
}

int64_t count_zeros(const float* x, int64_t n) {
  return std::count(x, x + n, 0.0f);
}

// Writes the pruned rows of `p` into `out` and returns the zeros they hold.
int64_t prune_tensor(const Plan& p, const PruneSpec& spec, std::span<uint8_t> out, ThreadPool& pool) {
  const GgufTensorInfo& t = *p.tensor;
  const int64_t cols = t.ne[0], rows = t.num_elements() / cols;
  const int64_t row_bytes = dtype_row_bytes(t.dtype, cols);
  std::mutex mu;
  int64_t zeros = 0;
  pool.parallel_for(rows, 1, 8, [&](int64_t r0, int64_t r1) {
    std::vector<float> x(static_cast<size_t>(cols)), kept(static_cast<size_t>(cols));
    int64_t local = 0;
    for (int64_t r = r0; r < r1; ++r) {
      const uint8_t* src = t.data + r * row_bytes;
      uint8_t* dst = out.data() + r * row_bytes;
      dequantize_row(t.dtype, src, x.data(), cols);
      kept = x;
      prune_row(kept.data(), cols, p.target, spec);
      if (kept == x) {
        // Nothing changed (S = 0, or only zeros selected): the row keeps its bytes.
        std::memcpy(dst, src, static_cast<size_t>(row_bytes));
      } else {
        quantize_row(t.dtype, kept.data(), dst, cols);
        dequantize_row(t.dtype, dst, x.data(), cols);
      }
      local += count_zeros(x.data(), cols);
    }
    std::lock_guard<std::mutex> lock(mu);
    zeros += local;
  });
  return zeros;
}

}  // namespace

Result<PruneReport> prune_model(const std::string& in_path, const std::string& out_path, const PruneOptions& o) {
  LLMS_RETURN_IF_ERROR(check_options(o));
  if (in_path == out_path) return invalid_argument("the output must be a different file than the input");
  LLMS_ASSIGN_OR_RETURN(GgufFile in, GgufFile::open(in_path));
  LLMS_ASSIGN_OR_RETURN(std::vector<Plan> plans, plan_tensors(in, o));

  ThreadPool pool(o.threads);
  GgufWriter w(in.alignment());
  for (const auto& [key, value] : in.metadata()) {
    if (key != "general.alignment") w.set(key, value);
  }
  const double s = o.pattern.pattern == PrunePattern::kTwoFour ? 0.5 : *o.sparsity;
  w.set("llmserve.prune.pattern", gguf::Value::string(prune_pattern_name(o.pattern)));
  w.set("llmserve.prune.sparsity", gguf::Value::f32(static_cast<float>(s)));
  w.set("llmserve.prune.schedule",
        gguf::Value::string(o.schedule == SparsitySchedule::kDepth ? "depth" : "uniform"));

  PruneReport report;
  report.tensors.resize(plans.size());
  size_t next = 0;
  for (const auto& t : in.tensors()) {
    report.total_elements += t.num_elements();
    std::vector<int64_t> ne(t.ne.begin(), t.ne.begin() + t.n_dims);
    if (next < plans.size() && plans[next].tensor == &t) {
      TensorPruneReport* r = &report.tensors[next];
      *r = {t.name, t.dtype, plans[next].layer, plans[next].target, 0, 0, t.num_elements()};
      w.add_tensor(t.name, t.dtype, ne, [plan = plans[next], spec = o.pattern, r, &pool](std::span<uint8_t> out) {
        r->zeros = prune_tensor(plan, spec, out, pool);
        r->achieved = static_cast<double>(r->zeros) / static_cast<double>(r->elements);
      });
      ++next;
    } else {
      w.add_tensor(t.name, t.dtype, ne, std::span<const uint8_t>(t.data, t.num_bytes));
    }
  }
  LLMS_RETURN_IF_ERROR(w.write(out_path));
  for (const auto& r : report.tensors) {
    report.pruned_elements += r.elements;
    report.zero_elements += r.zeros;
  }
  return report;
}

}  // namespace llms
