// SloShedder: past its capacity a server cannot give every request its first token
// in time; this refuses, as soon as it is known, a waiting request whose TTFT target
// can no longer be met, so that the requests it keeps meet theirs. Without it the
// queue grows until every request waits longer than its target (goodput near 0).
//
// Forecast. The waiting queue's service rate is measured, not modelled: requests
// leaving the queue for the first time, per second, over the scheduling intervals that
// began with work left waiting. In such an interval the queue drains as fast as the
// engine lets it, whatever binds (token budget, running cap, KV room), so the rate is
// the capacity, not the arrival rate. The last kWindow backlogged intervals count;
// idle time and intervals without a backlog do not. The window is long against a
// sequence's lifetime: when sequences of one length finish together, admissions come
// in bursts a lifetime apart, and a window that holds one or two bursts misjudges the
// rate by the phase it happens to cover (a window that ends with a burst overstates
// it). A window counted in steps does not begin where a burst does, as one counted in
// admissions would, so it does not lean high; its length bounds the error.
// A request at position k of the ordered queue (0: next, scheduled at this very step)
// is forecast to leave it after k / rate seconds and to have its first token
// ceil(prompt / room) steps later, a step being the mean backlogged interval and the
// room what the step budget leaves after one token for each decoding sequence (they
// are scheduled first; at least 1). Under
// light load the queue is short and the forecast is a step or two: nothing is shed.
//
// Shedding. In queue order, a request never scheduled, with a TTFT target, whose
// forecast first token falls after its deadline is refused (FinishReason::kRejected,
// HTTP 503 with a Retry-After of the queue's forecast drain time); the requests
// behind it move up a place. Requests already started (preempted ones back in the
// queue) and requests without a TTFT target are never shed and count as ahead. No
// forecast until the window holds kMinAdmissions admissions: nothing is shed then.
//
// Thread-safety: engine thread only.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "engine/sequence.h"

namespace llms {

struct ShedDecision {
  Sequence* seq = nullptr;
  double forecast_ttft_s = 0;  // from arrival to the forecast first token
};

class SloShedder {
 public:
  static constexpr size_t kWindow = 256;
  static constexpr int64_t kMinAdmissions = 4;

  // A scheduling point at `now_ns`: `admitted` requests left the queue for the first
  // time; `backlog`: a step ran and work was still waiting after it.
  void on_schedule(int64_t now_ns, int64_t admitted, bool backlog);

  // Requests per second leaving the queue under backlog; 0 while unknown.
  double service_rate() const;
  // The mean backlogged interval (a step), seconds; 0 while unknown.
  double step_s() const;

  // Of `ordered` (the waiting queue, best first), the requests to refuse at `now_ns`,
  // in queue order. `budget_tokens`: the step token budget; `decoding`: the running
  // sequences, each of which takes a token of it before any prompt does.
  std::vector<ShedDecision> unattainable(const std::vector<Sequence*>& ordered, int64_t now_ns,
                                         int64_t budget_tokens, int64_t decoding = 0) const;

  // How long a queue of `waiting` requests takes to drain at the measured rate, at
  // least one second: the Retry-After of a refused request.
  double retry_after_s(size_t waiting) const;

 private:
  struct Interval {
    int64_t ns;
    int64_t admitted;
  };
  std::deque<Interval> window_;
  int64_t window_ns_ = 0;
  int64_t window_admitted_ = 0;
  int64_t last_ns_ = 0;
  bool last_backlog_ = false;
};

}  // namespace llms
