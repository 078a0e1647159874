// The open-loop arrival process: when each request is sent, relative to the start.
// Inter-arrival times are gamma distributed with shape k = burstiness and mean
// 1/rate (scale 1/(rate*k)), as vLLM's `bench serve` draws them: k = 1 is a Poisson
// process (exponential gaps, coefficient of variation 1); k < 1 is burstier
// (CV = 1/sqrt(k) > 1), k > 1 more regular. An infinite rate sends everything at 0.
//
// Thread-safety: a pure function of its arguments.
#pragma once

#include <cstdint>
#include <vector>

namespace llms::benchserve {

// `n` send times in seconds, non-decreasing, the first at 0; the same for the same seed.
std::vector<double> arrival_offsets(int n, double rate, double burstiness, uint64_t seed);

}  // namespace llms::benchserve
