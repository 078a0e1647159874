// ServerContext: what the request handlers share — the loaded versions of the model
// (each with its engine and tokenizer) and the deployer that changes them, the
// configuration, the served model's name, the metrics, the admin token, the draining
// flag, and the count of completion requests in flight (graceful shutdown waits on it).
//
// Thread-safety: the references are to thread-safe or immutable objects; the
// counters and flags are atomic or under the internal mutex. Any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "deploy/deployer.h"
#include "deploy/feedback.h"
#include "deploy/version_set.h"
#include "metrics/metrics.h"
#include "server/server_config.h"
#include "server/grammar_pool.h"
#include "server/http_metrics.h"
#include "server/api_keys.h"
#include "server/review_log.h"

namespace llms {

// A model served beside the default one (server/model_list.h): one version, loaded at
// start and never deployed over (deploys change the default model's versions only).
struct OtherModel {
  std::string name;
  std::vector<std::string> aliases;
  VersionPtr version;
};

class ServerContext {
 public:
  ServerContext(VersionSet& versions, Deployer& deployer, const ServeConfig& config, Registry& registry,
                HttpMetrics& metrics, std::string admin_token);

  VersionSet& versions;
  Deployer& deployer;
  const ServeConfig& config;
  Registry& registry;               // the server's own metrics (the versions' are in theirs)
  HttpMetrics& metrics;
  const std::string model_name;
  const std::string admin_token;    // "" = the admin API is off
  const int64_t created;            // unix seconds at start
  FeedbackBook feedback;            // ratings of recent requests, per version
  std::unique_ptr<ReviewLog> review;  // null: no review sampling (set before serving)
  ApiKeys review_excluded;          // requests with these keys are never reviewed (set before serving)
  // The LoRA adapters served (each version holds its own copy of their weights, bound to
  // its model: ServingVersion::loras()); set before serving, never null after.
  std::shared_ptr<LoraCatalog> loras = std::make_shared<LoraCatalog>();
  // Several models per server: the default model's other names, and the models served
  // beside it, in the order given (both set before serving; empty with one model).
  std::vector<std::string> default_aliases;
  std::vector<OtherModel> other_models;

  // Every served model's name, the default first.
  std::vector<std::string> model_names() const;
  // Whether `asked` (a request's model) names the default model: "", its name or an alias.
  bool names_default_model(std::string_view asked) const;
  // The other model `asked` names (its name or an alias); null when it names none.
  const OtherModel* other_model(std::string_view asked) const;
  // The version a request for model `asked` runs on (NOT_FOUND for another model's
  // version pinned by `pinned`): the other model's one version, else the default
  // model's versions' pick (VersionSet::pick_when_ready()).
  bool pick_when_ready(std::string_view asked, const std::string& pinned, VersionSet::PickCallback done);
  Result<VersionPtr> pick(std::string_view asked, const std::string& pinned);
  // The model name a version serves (the default model's for its versions).
  const std::string& model_of(const ServingVersion& v) const;

  // Every registry /metrics renders: the server's, and each loaded version's under
  // its version label.
  std::string render_metrics() const;

  // A fresh response id: prefix + 24 hex digits.
  std::string next_id(const char* prefix);

  GrammarPool& grammars() { return *grammars_; }

  // A request's prefix-cache salt (RequestParams::cache_salt): its `cache_salt` field
  // and, with API keys and prefix_cache_scope "key", the key its Authorization header
  // carries, hashed with a secret of this process; 0 when neither applies (the shared
  // scope).
  uint64_t cache_salt(std::string_view authorization, std::string_view cache_salt) const;

  void set_draining() { draining_.store(true); }
  bool draining() const { return draining_.load(); }
  // Shutting down but still serving (shutdown_delay): /ready says 503 so that load
  // balancers take the server out of rotation before it stops accepting.
  void set_leaving() { leaving_.store(true); }
  bool leaving() const { return leaving_.load(); }

  void request_started();
  void request_finished();
  int active_requests() const;
  // Waits until no request is in flight or `deadline_ns` (now_ns clock) passes.
  bool wait_idle(int64_t deadline_ns);

 private:
  std::atomic<bool> draining_{false};
  std::atomic<bool> leaving_{false};
  std::atomic<uint64_t> next_id_{1};
  uint64_t id_salt_;
  uint64_t scope_secret_;
  std::unique_ptr<GrammarPool> grammars_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  int active_ = 0;
};

}  // namespace llms
