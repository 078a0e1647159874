// Error-minimising scale searches for one sub-block of a k-quant. Rounding to the
// nearest level with the scale set by the largest value wastes levels when the
// values are unevenly spread; instead, a range of candidate scales is tried, each
// candidate's levels are refit by weighted least squares, and the fit with the
// smallest weighted squared error wins (the approach of the published reference
// quantizers).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>

namespace llms {

// Asymmetric levels: x[i] ~ scale * q[i] - min with q in [0, nmax], scale >= 0,
// min >= 0 (the sub-block's lowest value, or 0 when all values are positive).
// w[i] > 0 are importance weights. Returns scale; writes min and q.
float search_scale_min(const float* x, const float* w, int n, int nmax, float* min, uint8_t* q);

// Symmetric levels: x[i] ~ scale * q[i] with q in [-nmax, nmax - 1]; the scale may be
// negative so that the largest magnitude uses the longer side of the range.
// Weights are x[i]^2 (large values matter most). Returns scale; writes q.
float search_scale_symmetric(const float* x, int n, int nmax, int8_t* q);

}  // namespace llms
