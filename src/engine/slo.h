// Latency targets (SLOs): what a request is held to, how its urgency grows as its
// time-to-first-token deadline nears, and whether it met its targets.
//
// A request carries its own targets ("slo": {"ttft_ms", "itl_ms"}), else its lane's
// (EngineConfig::slo_interactive / slo_batch); 0 means no target. Urgency works inside
// the priority rules: waiting requests of equal effective priority go earliest TTFT
// deadline first (earliest-deadline-first), and once half of a request's TTFT budget
// has passed without a first token its effective priority rises by one, as a wait of
// aging_s does. The rise is bounded to one level, so a deadline never jumps a request
// over a priority class more than one apart.
//
// Met: TTFT when the first token came within ttft_ms of arrival; ITL when the share
// of its inter-token intervals above itl_ms is at most 1 - slo_percentile (with p99
// and fewer than 100 intervals: none above). Goodput counts the generated tokens of
// requests that met every target they had.
//
// Thread-safety: pure functions over engine-thread state.
#pragma once

#include <cstdint>

#include "engine/engine_config.h"
#include "engine/sequence.h"

namespace llms {

// The targets `p` is held to under `config`.
SloTarget resolve_slo(const RequestParams& p, const SloConfig& config);

// The TTFT deadline of a sequence (0: none): arrival + its ttft_ms.
int64_t ttft_deadline_ns(const Sequence& s);

// 1 while a sequence with a TTFT target has no first token and has used at least half
// of its budget; else 0.
double slo_urgency(const Sequence& s, int64_t now_ns);

struct SloOutcome {
  bool has_ttft = false;
  bool ttft_met = false;
  bool has_itl = false;
  bool itl_met = false;
  bool any() const { return has_ttft || has_itl; }
  bool all_met() const { return (!has_ttft || ttft_met) && (!has_itl || itl_met); }
};

// Whether a finished sequence met its targets.
SloOutcome slo_outcome(const Sequence& s, double percentile);

// Records one inter-token interval of `s` against its ITL target.
void note_itl(Sequence& s, int64_t interval_ns);

}  // namespace llms
