// VersionSet: the versions a server holds loaded and which one each new request goes
// to. `current` takes the traffic; during a canary, `candidate` takes a share of it;
// `previous` stays loaded (when memory allows) so that a rollback needs no load.
//
// The canary split is deterministic: each new request adds the canary share to a
// credit and goes to the candidate when the credit reaches one, so the candidate's
// share of any run of requests is the asked share within one request.
//
// Versions that no longer take traffic are kept as "retired" until no request holds
// them; reap() (the monitor's thread) then drops them, so an engine is never stopped
// on an HTTP thread.
//
// While a version is swapped for one that cannot be loaded beside it, the set is
// paused: pick_when_ready() holds new requests (their callbacks) until resume() names
// the version that serves, and runs them then, in arrival order.
//
// Thread-safety: every member may be called from any thread (one mutex).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "deploy/serving_version.h"

namespace llms {

using VersionPtr = std::shared_ptr<ServingVersion>;

struct VersionSetState {
  std::string current;
  std::string previous;       // "" when none is loaded
  std::string candidate;      // "" when no canary runs
  double canary_share = 0;
  std::vector<std::string> loaded;
  // Requests routed since the candidate was set up, per side.
  int64_t canary_requests = 0;
  int64_t current_requests = 0;
  bool swapping = false;      // paused: a drain-and-swap deploy holds new requests
};

class VersionSet {
 public:
  explicit VersionSet(VersionPtr current);

  // The version a new request goes to: the one named by `pinned` (a request's
  // x-llmserve-version header) when set, NOT_FOUND when that one is not loaded.
  Result<VersionPtr> pick(const std::string& pinned);
  // `now`: called from pick_when_ready() itself (else later, from resume()'s thread).
  using PickCallback = std::function<void(Result<VersionPtr>, bool now)>;
  // As pick(), calling `done` with the answer now, or, while paused, when resumed
  // (on the resuming thread). Returns whether it answered now.
  bool pick_when_ready(const std::string& pinned, PickCallback done);
  // Null only while paused.
  VersionPtr current() const;
  VersionPtr candidate() const;
  VersionPtr previous() const;
  // Current, candidate and previous: the versions that are loaded for traffic.
  std::vector<VersionPtr> loaded() const;
  VersionSetState state() const;

  // `v` takes all traffic now; the old current becomes previous (kept loaded when
  // `keep_previous`).
  void switch_to(VersionPtr v, bool keep_previous);
  // `v` takes `share` (0 < share < 1) of new requests until promote() or abort().
  void start_canary(VersionPtr v, double share);
  // The candidate becomes current. FAILED_PRECONDITION without a canary.
  Status promote(bool keep_previous);
  // The candidate is dropped. FAILED_PRECONDITION without a canary.
  Status abort();
  // Previous and current trade places. FAILED_PRECONDITION when no previous is loaded.
  Status rollback();

  // Holds new requests and hands back the current version (and drops the previous
  // one) so that the caller can unload it.
  VersionPtr pause();
  bool paused() const;
  // `v` serves; the requests held since pause() are answered.
  void resume(VersionPtr v);

  // Releases retired versions no request holds any more; returns how many.
  int reap();

 private:
  void retire(VersionPtr v);
  Result<VersionPtr> pick_locked(const std::string& pinned);

  mutable std::mutex mu_;
  VersionPtr current_, previous_, candidate_;
  double share_ = 0;
  double credit_ = 0;
  int64_t canary_requests_ = 0, current_requests_ = 0;
  std::vector<VersionPtr> retired_;
  bool paused_ = false;
  std::vector<std::pair<std::string, PickCallback>> held_;
};

}  // namespace llms
