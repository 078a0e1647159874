#include "kernels/weight_matrix.h"

#include <fmt/format.h>

#include <vector>

#include "base/log.h"
#include "kernels/matmul.h"
#include "quant/row_convert.h"

namespace llms {
namespace {

// Decodes every row and encodes it as Q8_0 into `storage`; returns the view.
Tensor convert_to_q8_0(const Tensor& t, std::vector<uint8_t>& storage) {
  const int64_t cols = t.ne[0], rows = t.ne[1];
  const int64_t out_row = dtype_row_bytes(DType::kQ8_0, cols);
  storage.resize(static_cast<size_t>(out_row * rows));
  std::vector<float> row(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    dequantize_row(t.dtype, t.row(r), row.data(), cols);
    quantize_row(DType::kQ8_0, row.data(), storage.data() + r * out_row, cols);
  }
  Tensor out = t;
  out.dtype = DType::kQ8_0;
  out.data = storage.data();
  return out;
}

}  // namespace

MatrixSupport matrix_support(DType type) {
  PackedKind kind;
  if (packed_kind_for(type, &kind)) return MatrixSupport::kNative;
  return matmul_supports(type) ? MatrixSupport::kWidened : MatrixSupport::kUnsupported;
}

int64_t matrix_memory_bytes(DType type, int64_t rows, int64_t cols) {
  PackedKind kind;
  switch (matrix_support(type)) {
    case MatrixSupport::kNative: packed_kind_for(type, &kind); break;
    case MatrixSupport::kWidened: kind = PackedKind::kQ8_0; break;
    case MatrixSupport::kUnsupported: return 0;
  }
  PackedWeights geometry;
  packed_geometry(kind, rows, cols, &geometry);
  return geometry.num_bytes();
}

Result<WeightMatrix> WeightMatrix::from_tensor(const Tensor& t, std::string_view name) {
  return from_reordered(t, {}, name);
}

Result<WeightMatrix> WeightMatrix::from_reordered(const Tensor& t, std::span<const int64_t> row_order,
                                                  std::string_view name) {
  if (t.n_dims != 2) {
    return invalid_argument(fmt::format("tensor '{}' has shape {}, expected a 2-D matrix", name, t.shape_string()));
  }
  if (!matmul_supports(t.dtype)) {
    return unimplemented(fmt::format("tensor '{}' has type {}, which the matrix kernels do not support", name,
                                     dtype_name(t.dtype)));
  }
  if (!row_order.empty() && static_cast<int64_t>(row_order.size()) != t.ne[1]) {
    return invalid_argument(fmt::format("tensor '{}': a row order of {} rows for {} rows", name, row_order.size(),
                                        t.ne[1]));
  }
  WeightMatrix w;
  w.t_ = t;
  if (!row_order.empty()) w.t_.data = nullptr;  // its rows are not in the matrix's order
  auto packed = std::make_shared<PackedWeights>();
  PackedKind kind;
  if (packed_kind_for(t.dtype, &kind)) {
    pack_weights(t, packed.get(), row_order);
  } else {
    log_debug("tensor '{}': {} has no kernel of its own, converted to q8_0", name, dtype_name(t.dtype));
    std::vector<uint8_t> storage;  // converted row by row, so the rows keep the tensor's order
    pack_weights(convert_to_q8_0(t, storage), packed.get(), row_order);
  }
  w.packed_ = std::move(packed);
  return w;
}

Result<WeightMatrix> WeightMatrix::from_transient(const Tensor& t, std::string_view name) {
  LLMS_ASSIGN_OR_RETURN(WeightMatrix w, from_tensor(t, name));
  w.t_.data = nullptr;
  return w;
}

}  // namespace llms
