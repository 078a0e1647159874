// WeightMatrix: a weight of shape [rows = out features, cols = in features] ready for
// the matmul kernels. It views the model file's bytes (GGUF ne = {cols, rows}); a
// kernel may keep a repacked copy where another layout streams better.
//
// Thread-safety: immutable after creation; shared by all threads.
#pragma once

#include <cstdint>
#include <string_view>

#include "base/status.h"
#include "tensor/tensor.h"

namespace llms {

class WeightMatrix {
 public:
  WeightMatrix() = default;
  // UNIMPLEMENTED naming the tensor when no matmul kernel handles its type.
  static Result<WeightMatrix> from_tensor(const Tensor& t, std::string_view name);

  DType dtype() const { return t_.dtype; }
  int64_t rows() const { return t_.ne[1]; }
  int64_t cols() const { return t_.ne[0]; }
  int64_t row_bytes() const { return t_.row_bytes(); }
  int64_t num_bytes() const { return t_.num_bytes(); }
  const uint8_t* row(int64_t r) const { return t_.row(r); }
  const Tensor& tensor() const { return t_; }

 private:
  Tensor t_;
};

}  // namespace llms
