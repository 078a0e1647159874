#include "quant/error_stats.h"

#include <algorithm>
#include <cmath>

namespace llms {

void QuantErrorStats::add(const float* x, const float* q, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const double v = x[i], e = v - q[i];
    sum_sq_ref += v * v;
    sum_sq_err += e * e;
    max_abs_err = std::max(max_abs_err, std::abs(e));
    sum += v;
    sum2 += v * v;
    sum3 += v * v * v;
    sum4 += v * v * v * v;
  }
  count += n;
}

void QuantErrorStats::merge(const QuantErrorStats& o) {
  sum_sq_ref += o.sum_sq_ref;
  sum_sq_err += o.sum_sq_err;
  max_abs_err = std::max(max_abs_err, o.max_abs_err);
  sum += o.sum, sum2 += o.sum2, sum3 += o.sum3, sum4 += o.sum4;
  count += o.count;
}

double QuantErrorStats::relative_rms() const { return sum_sq_ref > 0 ? std::sqrt(sum_sq_err / sum_sq_ref) : 0.0; }

double QuantErrorStats::snr_db() const {
  if (sum_sq_err <= 0) return 200.0;
  return std::min(200.0, 10.0 * std::log10(sum_sq_ref / sum_sq_err));
}

double QuantErrorStats::excess_kurtosis() const {
  if (count < 2) return 0.0;
  const double n = static_cast<double>(count);
  const double m = sum / n;
  // Central moments from raw moments.
  const double m2 = sum2 / n - m * m;
  const double m4 = sum4 / n - 4 * m * sum3 / n + 6 * m * m * sum2 / n - 3 * m * m * m * m;
  if (m2 <= 0) return 0.0;
  return m4 / (m2 * m2) - 3.0;
}

void OutlierCounter::add(const float* x, int64_t n) {
  const double limit = sigmas * stddev;
  for (int64_t i = 0; i < n; ++i) outliers += std::abs(x[i] - mean) > limit;
  count += n;
}

}  // namespace llms
