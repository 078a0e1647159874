// The body of GET /v1/stats: the serving version's window of recent steps and finished
// requests (engine/stats_window.h) as columns, so that a chart takes an array as it
// comes, with the live gauges, the totals since start, percentiles over the window, and
// the loaded versions with the canary share, quality gauges and ratings. docs/api.md lists the
// keys; tests/server_stats_test.cc checks them.
//
// Thread-safety: pure functions over snapshots.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "deploy/feedback.h"
#include "deploy/version_set.h"
#include "engine/engine_status.h"
#include "engine/stats_window.h"
#include "server/json_util.h"

namespace llms {

// Percentile `p` in [0, 100] of `values`, linearly interpolated between ranks; 0 when empty.
double window_percentile(std::vector<double> values, double p);

// {"t_ms": [...], "duration_s": [...], ...}: one array per field, oldest first.
Json step_columns(const std::vector<StepSample>& steps);
Json request_columns(const std::vector<RequestSample>& requests);
// p50/p90/p99 of TTFT, ITL and end-to-end latency over the window, and tokens per
// second of generation over the window's span of steps.
Json window_summary(const StatsWindowSnapshot& w);
// Name, role (current, candidate, previous), share of new requests, outcome counts, the
// quality gauges and people's ratings (count, mean, negative share) of each loaded version.
Json versions_json(const VersionSetState& state, const std::vector<VersionPtr>& loaded, const FeedbackBook& feedback);
// The engine's live gauges.
Json engine_json(const EngineSnapshot& s, int64_t rss_bytes);

}  // namespace llms
