// ServingTarget: what the server hands a request to. One engine (EngineTarget), or
// several behind a routing policy: the precision variants of a model today
// (PrecisionRouter). (LoRA adapters are not a policy: one engine runs them, each
// request naming its adapter in RequestParams; a tensor-parallel group is one engine
// whose runner leads the ranks. Nor are several models per server: each model has its
// own tokenizer and chat template, so the server picks the model, each with a target
// of its own, before it builds the prompt.)
// The server calls only this:
// which engine runs a request, and whose result cache may answer it, is the target's
// business, so no caller reaches into a router's engines.
//
// A new routing policy is a class implementing this interface (one file in
// src/serving/, as precision_router.h); the engines it routes over are plain Engines.
//
// Thread-safety: every member from any thread.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "base/status.h"
#include "engine/engine_status.h"
#include "engine/request.h"
#include "engine/result_cache.h"

namespace llms {

// How a request asks to be routed; empty fields leave the choice to the policy.
struct Route {
  std::string precision;  // "" or "auto": the policy's choice; else a precision variant's name
};

class ServingTarget {
 public:
  virtual ~ServingTarget() = default;

  // INVALID_ARGUMENT, saying what is served here, when `route` names something that is not.
  virtual Status check(const Route& route) const = 0;
  // Starts a request where `route` and the policy send it: check()'s error, or what the
  // chosen engine's submit() answers (retry_after_s set with a full queue).
  virtual Result<std::shared_ptr<RequestHandle>> submit(RequestParams params, const Route& route,
                                                        double* retry_after_s = nullptr) = 0;
  // The stored completion of an identical deterministic request, from the result cache
  // of the engine `route` is sure to run on; none when no engine is sure beforehand.
  virtual std::optional<CachedCompletion> cached(const RequestParams& params, const Route& route) = 0;
  // The status of the primary engine: the one that stands for the target in health,
  // stats and admission answers (with precision variants, the most precise).
  virtual EngineSnapshot snapshot() const = 0;
  // Every engine of the target refuses new requests (graceful shutdown) / stops (what
  // still runs ends "cancelled").
  virtual void begin_drain() = 0;
  virtual void stop() = 0;
};

}  // namespace llms
