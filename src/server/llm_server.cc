#include "server/llm_server.h"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "base/clock.h"
#include "base/memory.h"
#include "base/log.h"
#include "deploy/admin_client.h"
#include "server/api_error.h"
#include "server/config_reload.h"
#include "server/endpoints.h"
#include "server/model_list.h"
#include "server/prompt_builder.h"

namespace llms {
namespace {

constexpr double kCancelFlushSeconds = 5.0;

// The events' pod id: configured, else $POD_NAME (set from the downward API), else the host name.
std::string kv_events_pod(const ServerConfig& c) {
  if (!c.kv_events_pod.empty()) return c.kv_events_pod;
  if (const char* pod = std::getenv("POD_NAME"); pod && *pod) return pod;
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) == 0 && host[0]) return host;
  return "llmserve";
}

Result<std::string> read_admin_token(const std::string& path) {
  if (path.empty()) return std::string();
  auto token = read_admin_token_file(path);
  if (!token.ok()) return token.status().with_context("admin_token_file");
  if (token->size() < 16) {
    return invalid_argument(fmt::format("admin_token_file: the token in {} is shorter than 16 characters", path));
  }
  return token;
}

void count_transport_event(HttpMetrics& m, HttpEvent e) {
  switch (e) {
    case HttpEvent::kRefusedTotal: return m.refused_connections.with({"max_connections"}).inc();
    case HttpEvent::kRefusedPerClient: return m.refused_connections.with({"max_connections_per_client"}).inc();
    case HttpEvent::kHeaderTimeout: return m.client_timeouts.with({"header"}).inc();
    case HttpEvent::kBodyTimeout: return m.client_timeouts.with({"body"}).inc();
    case HttpEvent::kWriteStall: return m.client_timeouts.with({"stream_stall"}).inc();
  }
}

// The transport's share of the configuration.
HttpServerOptions transport_options(const ServerConfig& sc) {
  HttpServerOptions o;
  o.host = sc.host;
  o.port = sc.port;
  o.io_threads = sc.io_threads;
  o.max_body_bytes = sc.max_body_bytes;
  o.idle_timeout_s = sc.idle_timeout_s;
  o.header_timeout_s = sc.header_timeout_s;
  o.body_timeout_s = sc.body_timeout_s;
  o.stall_timeout_s = sc.stream_stall_timeout_s;
  o.stream_buffer_bytes = sc.stream_buffer_bytes;
  // A whole answer is at most max_response_bytes (CompletionJob refuses larger ones
  // before compute), so the transport's cap on unsent bytes never cuts one.
  o.max_buffered_bytes = std::max<int64_t>(o.max_buffered_bytes, sc.max_response_bytes + (1 << 20));
  o.max_connections = sc.max_connections;
  o.max_connections_per_client = sc.max_connections_per_client;
  return o;
}

Status apply_log_settings(const ServerConfig& c) {
  if (!c.log_level.empty()) set_log_level(*parse_log_level(c.log_level));
  set_log_format(*parse_log_format(c.log_format));
  return set_log_file(c.log_file);
}

}  // namespace

Result<std::unique_ptr<LlmServer>> LlmServer::start(const ServeConfig& config) {
  LLMS_RETURN_IF_ERROR(config.validate());
  LLMS_RETURN_IF_ERROR(apply_log_settings(config.server));
  std::unique_ptr<LlmServer> s(new LlmServer(config));
  LLMS_RETURN_IF_ERROR(s->init());
  return s;
}

Status LlmServer::init() {
  LLMS_ASSIGN_OR_RETURN(ApiKeys keys, ApiKeys::load(config_.server));  // a bad key file fails before the model loads
  if (keys.enabled()) {
    log_info("API keys: {} configured; requests need 'Authorization: Bearer KEY' (open: /health, /ready{}{}; "
             "/admin/* takes the admin token only)",
             keys.size(), config_.server.protect_metrics ? "" : ", /metrics", config_.server.ui ? ", the page at / and /ui/" : "");
  }
  LLMS_ASSIGN_OR_RETURN(const std::string admin_token, read_admin_token(config_.server.admin_token_file));
  if (keys.contains(admin_token)) {
    return invalid_argument("admin_token_file: the admin token is also an API key; an API key must never open the "
                            "admin API, so give them different values");
  }
  LLMS_ASSIGN_OR_RETURN(BrowserPolicy browser, BrowserPolicy::create(config_.server));
  LLMS_ASSIGN_OR_RETURN(std::unique_ptr<ReviewLog> review, open_review_log(config_.server));
  ApiKeys review_excluded;
  if (!config_.server.review_exclude_key_file.empty()) {
    ServerConfig keys_only;
    keys_only.api_key_file = config_.server.review_exclude_key_file;
    auto loaded = ApiKeys::load(keys_only);
    if (!loaded.ok()) return loaded.status().with_context("review_exclude_key_file");
    review_excluded = std::move(loaded).value();
  }
  LLMS_RETURN_IF_ERROR(open_access_log());
  registry_ = std::make_unique<Registry>();
  if (!config_.server.kv_events.empty()) {
    KvEventPublisherOptions ko;
    ko.endpoint = config_.server.kv_events;
    ko.pod = kv_events_pod(config_.server);
    ko.model = served_model_name(config_.server);
    ko.sha256_cbor = config_.server.prefix_hash == "sha256-cbor";
    ko.hash_seed = config_.server.prefix_hash_seed;
    LLMS_ASSIGN_OR_RETURN(kv_events_, KvEventPublisher::create(ko, *registry_));
  }
  config_.deploy.threads = config_.engine.threads;
  // Every version's engines publish their blocks to kv_events_.
  LLMS_ASSIGN_OR_RETURN(std::vector<LoraSpec> loras,
                        parse_lora_specs(config_.server.lora, served_model_name(config_.server)));
  const VersionSettings settings{&config_.engine, &config_.precision, config_.server.chat_template, kv_events_,
                                 config_.deploy.cross.share, std::make_shared<LoraCatalog>(std::move(loras)),
                                 config_.server.lora_memory};
  LLMS_ASSIGN_OR_RETURN(const std::vector<ModelEntry> models, list_models(config_.server));
  VersionLoadOptions first;
  first.settings = settings;
  std::unique_ptr<ModelRoot> root;
  if (!config_.server.model_root.empty()) {
    LLMS_ASSIGN_OR_RETURN(ModelRoot r, ModelRoot::open(config_.server.model_root, false));
    const auto current = r.current();
    if (!current) {
      return not_found(fmt::format("model root {} has no current version (llmserve deploy --root {} --version NAME "
                                   "--from FILE.gguf makes one)",
                                   r.dir(), r.dir()));
    }
    first.name = *current;
    first.model_path = r.model_path(*current);
    LLMS_ASSIGN_OR_RETURN(first.meta, read_version_meta(r.meta_path(*current)));
    root = std::make_unique<ModelRoot>(std::move(r));
  } else {
    first.name = models.front().name;
    first.model_path = models.front().path;
  }
  LLMS_ASSIGN_OR_RETURN(VersionPtr version, load_model(first, models.size() > 1));
  LLMS_ASSIGN_OR_RETURN(std::vector<OtherModel> others, load_other_models(models, settings, version->resident_bytes()));
  metrics_ = std::make_unique<HttpMetrics>(*registry_);
  versions_ = std::make_unique<VersionSet>(std::move(version));
  deployer_ = std::make_unique<Deployer>(std::move(root), *versions_, config_.deploy, settings, *registry_);
  ctx_ = std::make_unique<ServerContext>(*versions_, *deployer_, config_, *registry_, *metrics_, admin_token);
  ctx_->loras = settings.loras;
  ctx_->default_aliases = models.front().aliases;
  ctx_->other_models = std::move(others);
  ctx_->review = std::move(review);
  ctx_->review_excluded = std::move(review_excluded);
  router_ = std::make_unique<Router>(*ctx_, std::move(keys), std::move(browser));
  deployer_->set_feedback(&ctx_->feedback);
  deployer_->start();

  HttpServerOptions o = transport_options(config_.server);
  o.error_response = transport_error_response;
  HttpMetrics* m = metrics_.get();
  const Router* routes = router_.get();
  // The version that answered (its response header), "-" for answers no version gave
  // (health, admin, errors before routing).
  o.recorded_header = kVersionHeader;
  o.on_exchange = [this, m, routes](const HttpExchangeRecord& r) {
    const std::string endpoint(routes->endpoint_label(r.path));
    const std::string version = r.header_value.empty() ? "-" : r.header_value;
    m->http_requests.with({endpoint, std::string(method_label(r.method)), std::to_string(r.status), version}).inc();
    m->http_duration.with({endpoint, version}).observe(r.seconds);
    log_exchange(r, endpoint);
  };
  o.on_connection = [m](int delta) { m->open_connections.add(delta); };
  o.on_event = [m](HttpEvent e) { count_transport_event(*m, e); };
  Router* router = router_.get();
  http_ = std::make_unique<HttpServer>(std::move(o), [router](HttpRequest req, std::shared_ptr<HttpExchange> ex) {
    router->handle(std::move(req), std::move(ex));
  });
  return http_->start();
}

Result<VersionPtr> LlmServer::load_model(const VersionLoadOptions& o, bool several) {
  auto v = ServingVersion::load(o);
  if (!v.ok() && several) return v.status().with_context(fmt::format("model '{}' ({})", o.name, o.model_path));
  return v;
}

namespace {

// The models loaded so far and `v`, the next, must fit under the low memory watermark
// together, as each engine alone must (Engine::create()).
Status check_fits_beside(const ServingVersion& v, int64_t held_before, const AdmissionConfig& a) {
  const int64_t bytes = v.resident_bytes();
  if (held_before + bytes <= a.low_mark_bytes()) return ok_status();
  constexpr double kMiB = 1 << 20;
  return invalid_argument(fmt::format(
      "model '{}' ({}): its weights and KV cache ({:.1f} MiB) with the {:.1f} MiB the models loaded before it hold "
      "exceed {}; lower kv_cache_memory, serve fewer models or raise memory_limit_bytes",
      v.name(), v.model_path(), static_cast<double>(bytes) / kMiB, static_cast<double>(held_before) / kMiB,
      a.describe_low_mark()));
}

}  // namespace

Result<std::vector<OtherModel>> LlmServer::load_other_models(const std::vector<ModelEntry>& models,
                                                             const VersionSettings& settings, int64_t held_bytes) {
  std::vector<OtherModel> out;
  for (size_t i = 1; i < models.size(); ++i) {
    VersionLoadOptions o;
    o.name = models[i].name;
    o.model_path = models[i].path;
    o.settings = settings;
    o.settings.loras = nullptr;  // adapters bind to the default model
    LLMS_ASSIGN_OR_RETURN(VersionPtr v, load_model(o, true));
    LLMS_RETURN_IF_ERROR(check_fits_beside(*v, held_bytes, config_.engine.admission));
    held_bytes += v->resident_bytes();
    out.push_back({models[i].name, models[i].aliases, std::move(v)});
  }
  if (!out.empty()) {
    log_info("serving {} models: {:.1f} MiB of weights and KV caches held", models.size(),
             static_cast<double>(held_bytes) / (1 << 20));
  }
  return out;
}

Status LlmServer::open_access_log() {
  std::shared_ptr<AccessLog> log;
  if (!config_.server.access_log.empty()) {
    LLMS_ASSIGN_OR_RETURN(std::unique_ptr<AccessLog> opened, AccessLog::open(config_.server.access_log));
    log = std::move(opened);
  }
  std::lock_guard<std::mutex> lock(access_mu_);
  access_log_ = std::move(log);
  return ok_status();
}

void LlmServer::log_exchange(const HttpExchangeRecord& r, std::string_view endpoint) {
  std::shared_ptr<AccessLog> log;
  {
    std::lock_guard<std::mutex> lock(access_mu_);
    log = access_log_;
  }
  if (log) log->write(r, endpoint);
}

Status LlmServer::reload(const ServeConfig& next) {
  LLMS_RETURN_IF_ERROR(next.validate());
  const std::vector<ConfigChange> changes = config_changes(config_, next);
  ServerConfig& s = config_.server;
  s.log_level = next.server.log_level;
  s.log_format = next.server.log_format;
  s.log_file = next.server.log_file;
  s.access_log = next.server.access_log;
  s.shutdown_delay_s = next.server.shutdown_delay_s;
  s.shutdown_timeout_s = next.server.shutdown_timeout_s;
  // The new log settings first, so that what changed is logged where and as they say.
  LLMS_RETURN_IF_ERROR(apply_log_settings(s));  // reopens the log file too
  LLMS_RETURN_IF_ERROR(open_access_log());
  int applied = 0;
  for (const ConfigChange& c : changes) {
    if (!c.reloadable) {
      log_warn("config reload: {} changed ({} -> {}) but takes a restart; kept {}", c.key, c.before, c.after, c.before);
      continue;
    }
    ++applied;
    log_info("config reload: {}: {} -> {}", c.key, c.before, c.after);
  }
  log_info("config reload: {} key(s) applied; log file and access log reopened", applied);
  return ok_status();
}

void LlmServer::shutdown() {
  if (shut_down_ || !http_) return;
  shut_down_ = true;
  if (config_.server.shutdown_delay_s > 0) {
    ctx_->set_leaving();
    log_info("shutdown: /ready answers 503; serving {} s more before draining", config_.server.shutdown_delay_s);
    // The delay is the point: balancers see /ready fail and stop sending before connections close.
    std::this_thread::sleep_for(std::chrono::duration<double>(config_.server.shutdown_delay_s));
  }
  ctx_->set_draining();
  std::vector<VersionPtr> loaded = versions_->loaded();
  for (const OtherModel& m : ctx_->other_models) loaded.push_back(m.version);
  for (const VersionPtr& v : loaded) v->begin_drain();
  http_->stop_accepting();
  http_->set_draining();
  const int64_t deadline = now_ns() + static_cast<int64_t>(config_.server.shutdown_timeout_s * 1e9);
  if (!ctx_->wait_idle(deadline)) {
    log_info("shutdown: {} requests still running after {} s; cancelling them", ctx_->active_requests(),
             config_.server.shutdown_timeout_s);
  }
  ctx_->grammars().stop();  // cancels the compiles still running; none posts to a stopped server
  for (const VersionPtr& v : loaded) v->stop();  // ends what is left "cancelled"; their clients are told so
  ctx_->wait_idle(now_ns() + static_cast<int64_t>(kCancelFlushSeconds * 1e9));
  http_->stop(kCancelFlushSeconds);
}

LlmServer::~LlmServer() {
  shutdown();       // every request in flight completes or is cancelled and answered
  // The deployer's jobs hold HTTP exchanges (their answers): they end before the HTTP
  // server does, and the deployer itself after it (its jobs refer to the context).
  if (deployer_) deployer_->stop();
  http_.reset();    // before the context and the versions its handlers refer to
  deployer_.reset();
}

}  // namespace llms
