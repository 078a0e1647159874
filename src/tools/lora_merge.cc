#include "tools/lora_merge.h"

#include <fmt/format.h>

#include <cmath>

#include "kernels/convert.h"
#include "quant/row_convert.h"

namespace llms {

Result<LoraMerge> LoraMerge::prepare(const std::string& path, const GgufFile& base, float scale) {
  if (!std::isfinite(scale)) return invalid_argument(fmt::format("--lora-scale {} is not a number", scale));
  LoraMerge m;
  LLMS_ASSIGN_OR_RETURN(m.file_, read_lora(path, base));
  m.scale_ = scale;
  for (size_t i = 0; i < m.file_.matrices.size(); ++i) {
    const LoraMatrix& x = m.file_.matrices[i];
    const GgufTensorInfo* t = base.find_tensor(x.target);
    if (t == nullptr) {
      return invalid_argument(fmt::format("{}: the adapter changes '{}', which the base model does not have", path,
                                          x.target));
    }
    if (t->n_dims != 2 || t->ne[0] != x.cols || t->ne[1] != x.rows) {
      return invalid_argument(fmt::format("{}: the adapter's '{}' is {}x{} (rows x columns), the base's is {}x{}",
                                          path, x.target, x.rows, x.cols, t->n_dims == 2 ? t->ne[1] : -1, t->ne[0]));
    }
    if (!m.by_target_.emplace(x.target, i).second) {
      return invalid_argument(fmt::format("{}: the adapter changes '{}' twice", path, x.target));
    }
  }
  if (m.by_target_.empty()) return invalid_argument(fmt::format("{}: the adapter changes no matrix", path));
  return m;
}

std::vector<float> LoraMerge::merged(const GgufFile& base, const GgufTensorInfo& t, ThreadPool& pool) const {
  const LoraMatrix& m = file_.matrices[by_target_.at(t.name)];
  const int64_t cols = m.cols, rows = m.rows, rank = m.rank;
  const double s = static_cast<double>(scale_) * file_.scale(rank);
  std::vector<float> out(static_cast<size_t>(rows * cols));  // [rows, cols]
  const TensorData bytes = base.read(t);
  const int64_t in_row = dtype_row_bytes(t.dtype, cols);
  pool.parallel_for(rows, 1, 8, [&](int64_t r0, int64_t r1) {
    std::vector<double> delta(static_cast<size_t>(cols));
    for (int64_t r = r0; r < r1; ++r) {
      float* w = out.data() + r * cols;
      decode_row(t.dtype, bytes.data() + r * in_row, w, cols);
      std::fill(delta.begin(), delta.end(), 0.0);
      for (int64_t j = 0; j < rank; ++j) {
        const double b = m.b[static_cast<size_t>(r * rank + j)];
        const float* a = m.a.data() + j * cols;  // A's row j: [cols]
        for (int64_t c = 0; c < cols; ++c) delta[static_cast<size_t>(c)] += b * a[c];
      }
      for (int64_t c = 0; c < cols; ++c) w[c] = static_cast<float>(w[c] + s * delta[static_cast<size_t>(c)]);
    }
  });
  return out;
}

std::string LoraMerge::describe() const {
  return fmt::format("{} ({}, {} matrices, scale {} x the adapter's own)", file_.path, file_.format,
                     file_.matrices.size(), scale_);
}

}  // namespace llms
