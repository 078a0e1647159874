// EngineTarget: one engine as a ServingTarget — a model served at one precision, with
// no routing. A route naming a precision variant is refused (the server holds none).
//
// Thread-safety: as Engine (every member from any thread). The engine is not owned
// and outlives the target.
#pragma once

#include "engine/engine.h"
#include "serving/serving_target.h"

namespace llms {

class EngineTarget : public ServingTarget {
 public:
  explicit EngineTarget(Engine& engine) : engine_(engine) {}

  Status check(const Route& route) const override;
  Result<std::shared_ptr<RequestHandle>> submit(RequestParams params, const Route& route,
                                                double* retry_after_s = nullptr) override;
  std::optional<CachedCompletion> cached(const RequestParams& params, const Route&) override {
    return engine_.cached(params);
  }
  EngineSnapshot snapshot() const override { return engine_.snapshot(); }
  void begin_drain() override { engine_.begin_drain(); }
  void stop() override { engine_.stop(); }

 private:
  Engine& engine_;
};

}  // namespace llms
