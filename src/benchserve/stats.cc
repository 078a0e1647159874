#include "benchserve/stats.h"

#include <algorithm>
#include <cmath>

#include "base/check.h"

namespace llms::benchserve {

double Distribution::at(double p) const {
  for (const auto& [q, v] : percentiles) {
    if (q == p) return v;
  }
  return 0;
}

double percentile_sorted(const std::vector<double>& sorted, double p) {
  LLMS_CHECK(!sorted.empty(), "percentile of no samples");
  const double rank = p / 100.0 * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = rank - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

Distribution summarize(std::vector<double> values, const std::vector<double>& percentiles) {
  Distribution d;
  d.count = values.size();
  for (double p : percentiles) d.percentiles.emplace_back(p, 0.0);
  if (values.empty()) return d;
  std::sort(values.begin(), values.end());
  double sum = 0;
  for (double v : values) sum += v;
  d.mean = sum / static_cast<double>(values.size());
  double sq = 0;
  for (double v : values) sq += (v - d.mean) * (v - d.mean);
  d.std = std::sqrt(sq / static_cast<double>(values.size()));
  d.median = percentile_sorted(values, 50);
  for (auto& [p, v] : d.percentiles) v = percentile_sorted(values, p);
  return d;
}

}  // namespace llms::benchserve
