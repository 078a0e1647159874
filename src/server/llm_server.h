// LlmServer: the whole serving process minus signal handling — loads the model (the
// file, or the current version of a model root) with its engine, and each other model
// served beside it (server/model_list.h) with engines of its own, starts the deployer,
// then opens the HTTP port (so the port answers only once the model is loaded), and
// shuts down gracefully on request.
//
// Shutdown: stop accepting; /ready says draining; new completion requests get 503;
// requests in flight get up to shutdown_timeout seconds to finish; the rest are
// cancelled (clients get finish_reason "cancelled"); then connections close.
//
// Logging: start() applies log_level, log_format and log_file; every exchange goes to
// the access log when one is set.
//
// Thread-safety: start() once; shutdown() and reload() from one thread (shutdown()
// idempotent); port(), context() from any thread.
#pragma once

#include <memory>
#include <mutex>
#include <string_view>

#include "base/status.h"
#include "deploy/deployer.h"
#include "deploy/version_set.h"
#include "kvevents/kv_event_publisher.h"
#include "metrics/metrics.h"
#include "server/access_log.h"
#include "server/http_server.h"
#include "server/model_list.h"
#include "server/router.h"
#include "server/server_config.h"
#include "server/server_context.h"
#include "server/http_metrics.h"

namespace llms {

class LlmServer {
 public:
  static Result<std::unique_ptr<LlmServer>> start(const ServeConfig& config);
  ~LlmServer();
  LlmServer(const LlmServer&) = delete;
  LlmServer& operator=(const LlmServer&) = delete;

  int port() const { return http_->port(); }
  ServerContext& context() { return *ctx_; }
  void shutdown();
  // SIGHUP: applies `next`'s reloadable keys (config_reload.h), reopens the log file
  // and the access log, and logs every key that changed. INVALID_ARGUMENT (nothing
  // applied) when `next` is not valid. Call from the thread that calls shutdown().
  Status reload(const ServeConfig& next);

 private:
  explicit LlmServer(const ServeConfig& config) : config_(config) {}
  Status init();
  // A model's one version; with `several` models, an error names the model.
  static Result<VersionPtr> load_model(const VersionLoadOptions& o, bool several);
  // The models after the first (the default, holding `held_bytes`), each with its
  // engines, in order.
  Result<std::vector<OtherModel>> load_other_models(const std::vector<ModelEntry>& models,
                                                    const VersionSettings& settings, int64_t held_bytes);
  // Opens (or reopens, or closes) the access log for config_.server.access_log.
  Status open_access_log();
  void log_exchange(const HttpExchangeRecord& r, std::string_view endpoint);

  ServeConfig config_;
  std::unique_ptr<Registry> registry_;
  std::shared_ptr<KvEventPublisher> kv_events_;  // kv_events; also held by every engine
  std::unique_ptr<HttpMetrics> metrics_;
  std::unique_ptr<VersionSet> versions_;
  std::unique_ptr<Deployer> deployer_;
  std::unique_ptr<ServerContext> ctx_;
  std::unique_ptr<Router> router_;
  std::unique_ptr<HttpServer> http_;
  bool shut_down_ = false;
  std::mutex access_mu_;                   // guards access_log_ (I/O threads write, reload() swaps)
  std::shared_ptr<AccessLog> access_log_;  // null: no access log
};

}  // namespace llms
