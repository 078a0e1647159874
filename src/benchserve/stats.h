// Summary statistics of latency samples: mean, median, standard deviation and chosen
// percentiles, computed as numpy.percentile does by default (linear interpolation
// between the two nearest ranks), so that numbers match vLLM's reports.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace llms::benchserve {

struct Distribution {
  size_t count = 0;
  double mean = 0, median = 0, std = 0;  // population standard deviation, as numpy.std
  std::vector<std::pair<double, double>> percentiles;  // (p, value)
  // The value at percentile `p` if it was asked for, else 0.
  double at(double p) const;
};

// Percentile `p` in [0, 100] of `sorted` (ascending, non-empty): the value at rank
// p/100 * (n-1), interpolated linearly between neighbours.
double percentile_sorted(const std::vector<double>& sorted, double p);
// All zero when `values` is empty.
Distribution summarize(std::vector<double> values, const std::vector<double>& percentiles);

}  // namespace llms::benchserve
