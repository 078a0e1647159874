#include "io/rope_scaling.h"

#include <cmath>

namespace llms {

std::vector<float> llama3_rope_divisors(double base, int rope_dim, const Llama3RopeScaling& s) {
  constexpr double kPi = 3.14159265358979323846;
  const double orig = s.original_context;
  std::vector<float> out;
  for (int i = 0; i < rope_dim / 2; ++i) {
    const double freq = std::pow(base, -2.0 * i / rope_dim);
    const double wavelen = 2 * kPi / freq;
    double f = 1.0;
    if (wavelen > orig / s.low_freq_factor) {
      f = s.factor;
    } else if (wavelen >= orig / s.high_freq_factor) {
      const double smooth = (orig / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
      f = 1.0 / ((1.0 - smooth) / s.factor + smooth);
    }
    out.push_back(static_cast<float>(f));
  }
  return out;
}

float longrope_attn_factor(int n_ctx, int n_ctx_orig) {
  const double scale = static_cast<double>(n_ctx) / n_ctx_orig;
  return scale <= 1.0 ? 1.0f : static_cast<float>(std::sqrt(1.0 + std::log(scale) / std::log(double(n_ctx_orig))));
}

}  // namespace llms
