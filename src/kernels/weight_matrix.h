// WeightMatrix: a weight of shape [rows = out features, cols = in features] ready for
// the matmul kernels. It views the model file's bytes (GGUF ne = {cols, rows}) and
// holds the rows repacked at load into the panel layout the kernels stream
// (packed_weights.h). Types without a kernel of their own but with a decoder (Q4_1,
// Q8_1, Q2_K) are converted to Q8_0 at load ("widened"), which keeps their precision
// and costs Q8_0's 8.5 bits per weight in memory and bandwidth.
//
// Thread-safety: immutable after creation; shared by all threads. Copies share the
// packed rows.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "base/status.h"
#include "kernels/packed_weights.h"
#include "tensor/tensor.h"

namespace llms {

// How loading handles a matrix of a type: its own kernel, widened to Q8_0 (decoded
// and re-encoded at load), or not at all.
enum class MatrixSupport { kNative, kWidened, kUnsupported };
MatrixSupport matrix_support(DType type);
// Bytes a [rows, cols] matrix of `type` takes in memory once loaded (its packed panels,
// Q8_0's for a widened type); 0 when unsupported.
int64_t matrix_memory_bytes(DType type, int64_t rows, int64_t cols);

class WeightMatrix {
 public:
  WeightMatrix() = default;
  // INVALID_ARGUMENT unless `t` is 2-D; UNIMPLEMENTED naming the tensor when no
  // kernel handles its type.
  static Result<WeightMatrix> from_tensor(const Tensor& t, std::string_view name);
  // The same for bytes that do not outlive the call (a matrix computed at load, e.g.
  // rows permuted from another format's): tensor() keeps the type and shape but no
  // data, and row() must not be called.
  static Result<WeightMatrix> from_transient(const Tensor& t, std::string_view name);
  // The same for a matrix whose row i is row row_order[i] of `t` (another format's row
  // order, packed straight from its bytes): tensor() keeps the type and shape but no
  // data, and row() must not be called.
  static Result<WeightMatrix> from_reordered(const Tensor& t, std::span<const int64_t> row_order,
                                             std::string_view name);
  // False for a default-constructed matrix (a weight the model does not have).
  bool loaded() const { return packed_ != nullptr; }

  // The file's type and bytes.
  DType dtype() const { return t_.dtype; }
  int64_t rows() const { return t_.ne[1]; }
  int64_t cols() const { return t_.ne[0]; }
  int64_t row_bytes() const { return t_.row_bytes(); }
  int64_t num_bytes() const { return t_.num_bytes(); }
  const uint8_t* row(int64_t r) const { return t_.row(r); }
  const Tensor& tensor() const { return t_; }

  // What the kernels read: the repacked rows, and their type (dtype(), or Q8_0 for a
  // converted type).
  const PackedWeights& packed() const { return *packed_; }
  DType kernel_dtype() const { return packed_kind_dtype(packed_->kind); }
  int64_t packed_bytes() const { return packed_->num_bytes(); }

 private:
  Tensor t_;
  std::shared_ptr<const PackedWeights> packed_;
};

}  // namespace llms
