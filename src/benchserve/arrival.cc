#include "benchserve/arrival.h"

#include <cmath>
#include <random>

namespace llms::benchserve {

std::vector<double> arrival_offsets(int n, double rate, double burstiness, uint64_t seed) {
  std::vector<double> t(static_cast<size_t>(n > 0 ? n : 0), 0.0);
  if (std::isinf(rate) || n <= 1) return t;
  std::mt19937_64 gen(seed);
  std::gamma_distribution<double> gap(burstiness, 1.0 / (rate * burstiness));
  for (size_t i = 1; i < t.size(); ++i) t[i] = t[i - 1] + gap(gen);
  return t;
}

}  // namespace llms::benchserve
