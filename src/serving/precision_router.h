// PrecisionRouter: serves requests on one of several precision variants of a model
// (each its own Engine, cheapest first), chosen per request by the estimator of
// serving/precision_policy.h, and moves a request up one variant mid-generation when
// the serving variant's token entropy stays high (tiered fallback).
//
// A routed request has one outer RequestHandle, the client's. Its events are those of
// the inner request on the serving variant, forwarded as they come. On a fallback the
// router submits the prompt plus the tokens emitted so far to the next variant (which
// recomputes that KV, through its own prefix cache), cancels the inner request on the
// old one and forwards from the new one; the client sees one stream. The finish event
// counts the original prompt and every emitted token. A fallback the next variant
// refuses (queue full, ...) leaves the request where it is.
//
// Constrained requests (a grammar) are routed but never moved: the grammar's state
// lives in the inner request. A request that names a variant stays on it.
//
// Limits stated plainly: a stop string that straddles the switch point is not matched
// across it, and a sampled request's random stream starts over on the new variant.
//
// Metrics (in the registry given): llmserve_precision_requests_total{variant} (routed
// there first), llmserve_precision_tokens_total{variant} (emitted there),
// llmserve_precision_fallbacks_total{from,to}, llmserve_precision_weight_bytes_total
// {variant} (prompt and generated tokens processed there times the variant's weight
// bytes: a token's share of reading the weights) and llmserve_precision_compute_share
// {variant} (that counter's share of the sum).
//
// A ServingTarget: the server submits to it as to one engine. Its result cache is the
// most precise variant's, consulted only for requests pinned to that variant (an
// automatic request's variant is not known before it runs). The engines are not owned;
// begin_drain() and stop() reach every one of them.
//
// Thread-safety: every member from any thread; the engines must be running (start()).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/status.h"
#include "engine/engine.h"
#include "metrics/metrics.h"
#include "serving/precision_policy.h"
#include "serving/serving_target.h"

namespace llms {

struct PrecisionVariant {
  std::string name;           // "q4_k", "q8_0", "f16", ...
  Engine* engine = nullptr;   // not owned
  uint64_t weight_bytes = 0;  // of the variant's weights (what one token's pass reads)
};

class PrecisionRouter : public ServingTarget {
 public:
  // `variants` cheapest first; the policy must validate for their count.
  PrecisionRouter(std::vector<PrecisionVariant> variants, PrecisionPolicy policy, Registry& registry);

  // `route.precision`: "" or "auto" for the estimator, else a variant's name (pinned).
  // INVALID_ARGUMENT for an unknown name.
  Status check(const Route& route) const override;
  // check()'s error, or what the chosen engine's submit() answers.
  Result<std::shared_ptr<RequestHandle>> submit(RequestParams params, const Route& route,
                                                double* retry_after_s = nullptr) override;
  // The most precise variant's cache, for requests pinned to it.
  std::optional<CachedCompletion> cached(const RequestParams& params, const Route& route) override;
  // The most precise variant's.
  EngineSnapshot snapshot() const override { return variants_.back().engine->snapshot(); }
  void begin_drain() override;
  void stop() override;

  // -1 when no variant has that name.
  int find(const std::string& name) const;
  const std::vector<PrecisionVariant>& variants() const { return variants_; }
  const PrecisionPolicy& policy() const { return policy_; }
  // "q4_k, q8_0, f16": for error messages.
  std::string names() const;

  struct Counts {
    std::vector<int64_t> requests, tokens;  // per variant
    int64_t fallbacks = 0;
  };
  // Read from the metrics above.
  Counts counts() const;

 private:
  struct Routed;
  // Submits `r`'s continuation to variant `v` and makes it the one forwarded from.
  Status attach(const std::shared_ptr<Routed>& r, int v, double* retry_after_s);
  void on_inner_events(const std::shared_ptr<Routed>& r, int generation);
  void add_work(int v, int64_t tokens);

  std::vector<PrecisionVariant> variants_;
  PrecisionPolicy policy_;
  std::vector<Counter*> requests_, tokens_, weight_bytes_;
  std::vector<Gauge*> share_;
  Family<Counter>& fallbacks_;
  std::atomic<uint64_t> next_id_{1};

  mutable std::mutex mu_;  // work_ and the shares set from it
  std::vector<double> work_;
};

}  // namespace llms
