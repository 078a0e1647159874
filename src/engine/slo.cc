#include "engine/slo.h"

#include <cmath>

namespace llms {

SloTarget resolve_slo(const RequestParams& p, const SloConfig& config) {
  const SloTarget& lane = p.lane == Lane::kBatch ? config.batch : config.interactive;
  return SloTarget{p.slo.ttft_ms > 0 ? p.slo.ttft_ms : lane.ttft_ms, p.slo.itl_ms > 0 ? p.slo.itl_ms : lane.itl_ms};
}

int64_t ttft_deadline_ns(const Sequence& s) {
  if (s.slo.ttft_ms <= 0) return 0;
  return s.arrival_ns + static_cast<int64_t>(s.slo.ttft_ms * 1e6);
}

double slo_urgency(const Sequence& s, int64_t now_ns) {
  if (s.slo.ttft_ms <= 0 || s.first_token_ns != 0) return 0;
  const int64_t half = static_cast<int64_t>(s.slo.ttft_ms * 0.5e6);
  return now_ns - s.arrival_ns >= half ? 1 : 0;
}

SloOutcome slo_outcome(const Sequence& s, double percentile) {
  SloOutcome o;
  if (s.slo.ttft_ms > 0) {
    o.has_ttft = true;
    o.ttft_met = s.first_token_ns != 0 && s.first_token_ns <= ttft_deadline_ns(s);
  }
  if (s.slo.itl_ms > 0) {
    o.has_itl = true;
    const double allowed = std::floor((1.0 - percentile) * static_cast<double>(s.itl_intervals) + 1e-9);
    o.itl_met = static_cast<double>(s.itl_over) <= allowed;
  }
  return o;
}

void note_itl(Sequence& s, int64_t interval_ns) {
  if (s.slo.itl_ms <= 0) return;
  ++s.itl_intervals;
  if (static_cast<double>(interval_ns) > s.slo.itl_ms * 1e6) ++s.itl_over;
}

}  // namespace llms
