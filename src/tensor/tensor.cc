#include "tensor/tensor.h"

namespace llms {

std::string Tensor::shape_string() const {
  std::string s = "[";
  for (int i = 0; i < n_dims; ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(ne[i]);
  }
  return s + "]";
}

TensorStorage::TensorStorage(DType dtype, std::array<int64_t, 4> ne, int n_dims) {
  view_.dtype = dtype;
  view_.ne = ne;
  view_.n_dims = n_dims;
  buffer_.resize(static_cast<size_t>(view_.num_bytes()));
  view_.data = buffer_.data();
}

}  // namespace llms
