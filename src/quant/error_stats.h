// How much a quantization changes a tensor, and how hard the tensor is to quantize:
// error measures (relative RMS, max abs, SNR) between original and reconstructed
// values, and the tail heaviness of the original distribution (excess kurtosis, share
// of outliers). Accumulated row by row, so tensors never need to be in memory whole.
// Not thread-safe; merge() combines per-thread accumulators.
#pragma once

#include <cstdint>

namespace llms {

struct QuantErrorStats {
  double sum_sq_ref = 0;   // sum of x^2
  double sum_sq_err = 0;   // sum of (x - q)^2
  double max_abs_err = 0;
  double sum = 0, sum2 = 0, sum3 = 0, sum4 = 0;  // moments of x
  int64_t count = 0;

  void add(const float* x, const float* q, int64_t n);
  void merge(const QuantErrorStats& o);

  // ||x - q|| / ||x|| (0 for an all-zero tensor).
  double relative_rms() const;
  // 10 log10(sum x^2 / sum (x - q)^2), capped at 200 dB for exact reconstructions.
  double snr_db() const;
  // Fourth standardized moment minus 3 (0 for a normal distribution).
  double excess_kurtosis() const;
};

// Share of values farther than `sigmas` standard deviations from the mean; needs a
// second pass with the mean and deviation of the first.
struct OutlierCounter {
  double mean = 0, stddev = 0, sigmas = 6.0;
  int64_t outliers = 0, count = 0;
  void add(const float* x, int64_t n);
  double share() const { return count ? static_cast<double>(outliers) / static_cast<double>(count) : 0.0; }
};

}  // namespace llms
