#include "quant/k_quant_search.h"

#include <algorithm>
#include <cmath>

namespace llms {
namespace {

constexpr int kMaxN = 32;

int nearest_int(float v) { return static_cast<int>(std::nearbyint(v)); }

}  // namespace

float search_scale_min(const float* x, const float* w, int n, int nmax, float* min, uint8_t* q) {
  float lo = x[0], hi = x[0];
  float sum_w = 0.0f, sum_x = 0.0f;
  for (int i = 0; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
    sum_w += w[i];
    sum_x += w[i] * x[i];
  }
  lo = std::min(lo, 0.0f);
  if (hi == lo) {
    std::fill(q, q + n, 0);
    *min = -lo;
    return 0.0f;
  }
  // Candidate levels for a given inverse scale, and their weighted error once the
  // (scale, offset) pair is refit to them.
  uint8_t cand[kMaxN];
  auto levels = [&](float iscale, float offset, uint8_t* out) {
    for (int i = 0; i < n; ++i) out[i] = static_cast<uint8_t>(std::clamp(nearest_int(iscale * (x[i] - offset)), 0, nmax));
  };
  auto error = [&](const uint8_t* l, float scale, float offset) {
    float e = 0.0f;
    for (int i = 0; i < n; ++i) {
      const float diff = scale * static_cast<float>(l[i]) + offset - x[i];
      e += w[i] * diff * diff;
    }
    return e;
  };

  float best_scale = (hi - lo) / static_cast<float>(nmax), best_offset = lo;
  levels(1.0f / best_scale, lo, q);
  float best_err = error(q, best_scale, best_offset);
  constexpr int kSteps = 20;
  constexpr float kFrom = -1.0f, kStep = 0.1f;
  for (int s = 0; s <= kSteps; ++s) {
    const float iscale = (kFrom + kStep * static_cast<float>(s) + static_cast<float>(nmax)) / (hi - lo);
    levels(iscale, lo, cand);
    float sum_l = 0.0f, sum_l2 = 0.0f, sum_xl = 0.0f;
    for (int i = 0; i < n; ++i) {
      const float l = static_cast<float>(cand[i]);
      sum_l += w[i] * l;
      sum_l2 += w[i] * l * l;
      sum_xl += w[i] * l * x[i];
    }
    // Least squares for x ~ scale * l + offset.
    const float det = sum_w * sum_l2 - sum_l * sum_l;
    if (det <= 0.0f) continue;
    float scale = (sum_w * sum_xl - sum_x * sum_l) / det;
    float offset = (sum_l2 * sum_x - sum_l * sum_xl) / det;
    if (offset > 0.0f) {  // the format's offset is -min with min >= 0
      offset = 0.0f;
      scale = sum_xl / sum_l2;
    }
    if (scale <= 0.0f) continue;
    const float err = error(cand, scale, offset);
    if (err < best_err) {
      best_err = err;
      best_scale = scale;
      best_offset = offset;
      std::copy(cand, cand + n, q);
    }
  }
  *min = -best_offset;
  return best_scale;
}

float search_scale_symmetric(const float* x, int n, int nmax, int8_t* q) {
  float amax = 0.0f, max = 0.0f;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  if (amax == 0.0f) {
    std::fill(q, q + n, 0);
    return 0.0f;
  }
  int8_t cand[kMaxN];
  float best_scale = 0.0f, best_score = -1.0f;
  // With weights x^2 and the least-squares scale sum(wlx) / sum(wl^2), the weighted
  // error is sum(w x^2) - sum(wlx)^2 / sum(wl^2): maximising the second term wins.
  for (int s = -9; s <= 9; ++s) {
    const float iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(s)) / max;
    float sum_lx = 0.0f, sum_l2 = 0.0f;
    for (int i = 0; i < n; ++i) {
      const int l = std::clamp(nearest_int(iscale * x[i]), -nmax, nmax - 1);
      cand[i] = static_cast<int8_t>(l);
      const float w = x[i] * x[i];
      sum_lx += w * static_cast<float>(l) * x[i];
      sum_l2 += w * static_cast<float>(l * l);
    }
    if (sum_l2 <= 0.0f) continue;
    const float score = sum_lx * sum_lx / sum_l2;
    if (score > best_score) {
      best_score = score;
      best_scale = sum_lx / sum_l2;
      std::copy(cand, cand + n, q);
    }
  }
  return best_scale;
}

}  // namespace llms
