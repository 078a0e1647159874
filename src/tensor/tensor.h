// Tensor: a non-owning view of typed data with up to four dimensions in GGUF order
// (ne[0] is the innermost, contiguous dimension; a weight matrix [out, in] has
// ne = {in, out}). Rows are ne[0] elements, stored as whole blocks of the dtype.
// TensorStorage owns the bytes for a tensor made at run time (activations, repacks).
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "base/aligned_buffer.h"
#include "tensor/dtype.h"

namespace llms {

struct Tensor {
  DType dtype = DType::kF32;
  int n_dims = 0;
  std::array<int64_t, 4> ne = {1, 1, 1, 1};
  const void* data = nullptr;

  int64_t cols() const { return ne[0]; }
  int64_t rows() const { return ne[1] * ne[2] * ne[3]; }
  int64_t num_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
  int64_t row_bytes() const { return dtype_row_bytes(dtype, ne[0]); }
  int64_t num_bytes() const { return row_bytes() * rows(); }
  const uint8_t* row(int64_t r) const { return static_cast<const uint8_t*>(data) + r * row_bytes(); }
  template <typename T>
  const T* as() const { return static_cast<const T*>(data); }
  // "[64, 512]" in GGUF order.
  std::string shape_string() const;
};

class TensorStorage {
 public:
  TensorStorage() = default;
  TensorStorage(DType dtype, std::array<int64_t, 4> ne, int n_dims);

  const Tensor& view() const { return view_; }
  void* data() { return buffer_.data(); }
  template <typename T>
  T* as() { return buffer_.as<T>(); }

 private:
  AlignedBuffer buffer_;
  Tensor view_;
};

}  // namespace llms
