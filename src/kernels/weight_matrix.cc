#include "kernels/weight_matrix.h"

#include <fmt/format.h>

#include "kernels/matmul.h"

namespace llms {

Result<WeightMatrix> WeightMatrix::from_tensor(const Tensor& t, std::string_view name) {
  if (t.n_dims != 2) {
    return invalid_argument(fmt::format("tensor '{}' has shape {}, expected a 2-D matrix", name, t.shape_string()));
  }
  if (!matmul_supports(t.dtype)) {
    return unimplemented(fmt::format("tensor '{}' has type {}, which the matrix kernels do not support", name,
                                     dtype_name(t.dtype)));
  }
  WeightMatrix w;
  w.t_ = t;
  return w;
}

}  // namespace llms
