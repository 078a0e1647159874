#include "model/lora.h"

#include <fmt/format.h>

#include <cmath>
#include <type_traits>

#include "model/model.h"
#include "model/rows.h"
#include "quant/half.h"

namespace llms {
namespace {

constexpr std::array<std::string_view, kNumLoraTargets> kTargetNames = {
    "attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"};

const WeightMatrix& base_matrix(const LayerWeights& L, int target) {
  const WeightMatrix* m[kNumLoraTargets] = {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down};
  return *m[target];
}

// "blk.L.NAME.weight" -> (L, target), or an error naming the tensor.
Result<std::pair<int, int>> parse_target(const std::string& name, int n_layer) {
  int layer = -1;
  size_t used = 0;
  if (name.rfind("blk.", 0) == 0) {
    const size_t dot = name.find('.', 4);
    const std::string digits = name.substr(4, dot == std::string::npos ? 0 : dot - 4);
    if (!digits.empty() && digits.find_first_not_of("0123456789") == std::string::npos && digits.size() < 6) {
      layer = std::stoi(digits);
      used = dot + 1;
    }
  }
  if (layer >= 0 && layer < n_layer) {
    const std::string rest = name.substr(used);
    for (int t = 0; t < kNumLoraTargets; ++t) {
      if (rest == std::string(kTargetNames[static_cast<size_t>(t)]) + ".weight") return std::pair<int, int>{layer, t};
    }
  }
  return invalid_argument(fmt::format("'{}' is not a weight an adapter can adapt here (the attention and FFN "
                                      "projections of layers 0..{}: attn_q, attn_k, attn_v, attn_output, ffn_gate, "
                                      "ffn_up, ffn_down)",
                                      name, n_layer - 1));
}

// Whether F16 holds every value exactly (an adapter written in F16, or in BF16 within
// F16's range): the factors are then kept in F16, half the bytes a step reads, with
// the same results (lora.h).
bool is_f16_exact(const std::vector<float>& v) {
  for (const float x : v) {
    const float back = f16_to_f32(f32_to_f16(x));
    if (back != x || std::signbit(back) != std::signbit(x)) return false;
  }
  return true;
}

// m's factors as T in the kernels' layout (lora.h: at[c * rs + j] = A[j, c], ranks past
// m.rank zero; bt[j * rows + o] = B[o, j]), kept in `storage` with *at and *bt pointing
// into it; returns the bytes they hold.
template <typename T>
int64_t pack(const LoraMatrix& m, int64_t rs, std::vector<std::vector<T>>& storage, const T** at, const T** bt) {
  const auto as_t = [](float x) {
    if constexpr (std::is_same_v<T, uint16_t>) {
      return f32_to_f16(x);
    } else {
      return x;
    }
  };
  std::vector<T> a(static_cast<size_t>(m.cols * rs), T{}), b(static_cast<size_t>(m.rank * m.rows));
  for (int64_t j = 0; j < m.rank; ++j) {
    for (int64_t col = 0; col < m.cols; ++col) a[static_cast<size_t>(col * rs + j)] = as_t(m.a[static_cast<size_t>(j * m.cols + col)]);
    for (int64_t o = 0; o < m.rows; ++o) b[static_cast<size_t>(j * m.rows + o)] = as_t(m.b[static_cast<size_t>(o * m.rank + j)]);
  }
  const int64_t bytes = static_cast<int64_t>((a.size() + b.size()) * sizeof(T));
  *at = storage.emplace_back(std::move(a)).data();
  *bt = storage.emplace_back(std::move(b)).data();
  return bytes;
}

}  // namespace

int lora_target_of(std::string_view what) {
  for (int t = 0; t < kNumLoraTargets; ++t) {
    if (kTargetNames[static_cast<size_t>(t)] == what) return t;
  }
  return -1;
}

Result<std::unique_ptr<LoraAdapter>> LoraAdapter::load(const std::string& path, const Model& base, float scale) {
  LLMS_ASSIGN_OR_RETURN(LoraFile file, read_lora(path, base.file()));
  auto adapter = from_file(file, base, scale);
  if (!adapter.ok()) return adapter.status().with_context(path);
  return adapter;
}

Result<std::unique_ptr<LoraAdapter>> LoraAdapter::from_file(const LoraFile& file, const Model& base, float scale) {
  const ModelConfig& c = base.config();
  if (file.arch != c.arch_name) {
    return invalid_argument(fmt::format("the adapter is for architecture '{}', the base model is '{}'", file.arch, c.arch_name));
  }
  if (c.moe()) return unimplemented("adapters on a mixture of experts are not implemented");
  if (!std::isfinite(scale)) return invalid_argument("the adapter's scale must be a finite number");
  std::unique_ptr<LoraAdapter> a(new LoraAdapter());
  a->path_ = file.path;
  a->layers_.resize(static_cast<size_t>(c.n_layer));
  a->base_identity_ = base.identity();
  for (const LoraMatrix& m : file.matrices) {
    LLMS_ASSIGN_OR_RETURN(auto where, parse_target(m.target, c.n_layer));
    const auto [layer, target] = where;
    const WeightMatrix& w = base_matrix(base.weights().layers[static_cast<size_t>(layer)], target);
    if (w.rows() == 0) return invalid_argument(fmt::format("'{}': the base model has no such matrix", m.target));
    if (m.cols != w.cols() || m.rows != w.rows()) {
      return invalid_argument(fmt::format("'{}': the adapter is [{} out, {} in], the base matrix [{} out, {} in]", m.target,
                                          m.rows, m.cols, w.rows(), w.cols()));
    }
    if (m.rank <= 0 || m.rank > kMaxLoraRank) {
      return invalid_argument(fmt::format("'{}': rank {} is outside 1..{}", m.target, m.rank, kMaxLoraRank));
    }
    LoraFactors& f = a->layers_[static_cast<size_t>(layer)][static_cast<size_t>(target)];
    if (f.rank > 0) return invalid_argument(fmt::format("'{}' is adapted twice", m.target));
    const int64_t rs = (m.rank + kLoraRankAlign - 1) / kLoraRankAlign * kLoraRankAlign;
    f = {nullptr, nullptr, m.rank, rs, m.cols, m.rows, file.scale(m.rank) * scale};
    a->bytes_ += is_f16_exact(m.a) && is_f16_exact(m.b) ? pack(m, rs, a->storage_f16_, &f.at_f16, &f.bt_f16)
                                                         : pack(m, rs, a->storage_, &f.at, &f.bt);
    a->max_rank_ = std::max(a->max_rank_, m.rank);
    ++a->num_matrices_;
  }
  if (a->num_matrices_ == 0) return invalid_argument("the adapter adapts no matrix");
  // In layer and target order: the same values make the same identity whatever the
  // file's order of tensors.
  HashBuilder h;
  for (const auto& layer : a->layers_) {
    for (const LoraFactors& f : layer) {
      h.add_pod(f.rank).add_pod(f.scale);
      const size_t na = static_cast<size_t>(f.cols * f.rank_stride), nb = static_cast<size_t>(f.rank * f.rows);
      if (f.at_f16 != nullptr) {
        h.add_span(std::span<const uint16_t>(f.at_f16, na)).add_span(std::span<const uint16_t>(f.bt_f16, nb));
      } else if (f.rank > 0) {
        h.add_span(std::span<const float>(f.at, na)).add_span(std::span<const float>(f.bt, nb));
      }
    }
  }
  a->identity_ = h.finish128();
  return a;
}

}  // namespace llms
