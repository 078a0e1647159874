#include "server/llm_server.h"

#include "base/clock.h"
#include "base/log.h"
#include "server/api_error.h"
#include "server/prompt_builder.h"
#include "tokenizer/chat_template.h"

namespace llms {

constexpr double kCancelFlushSeconds = 5.0;

Result<std::string> resolve_chat_template(const std::string& configured, const Tokenizer& tok) {
  if (configured == kPlainChatTemplate) return configured;
  if (!configured.empty()) {
    auto kind = detect_chat_template(configured);
    if (!kind.ok()) return invalid_argument("chat_template: " + kind.status().message());
    return configured;
  }
  if (tok.chat_template().empty()) {
    log_warn("the model has no chat template: chat requests use \"plain\" (message texts joined); "
             "choose one with --chat-template");
    return std::string(kPlainChatTemplate);
  }
  return std::string();
}

namespace {

void count_transport_event(ServerMetrics& m, HttpEvent e) {
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
  o.max_connections = sc.max_connections;
  o.max_connections_per_client = sc.max_connections_per_client;
  return o;
}

}  // namespace

Result<std::unique_ptr<LlmServer>> LlmServer::start(const ServeConfig& config) {
  LLMS_RETURN_IF_ERROR(config.validate());
  std::unique_ptr<LlmServer> s(new LlmServer(config));
  LLMS_RETURN_IF_ERROR(s->init());
  return s;
}

Status LlmServer::init() {
  LLMS_ASSIGN_OR_RETURN(ApiKeys keys, ApiKeys::load(config_.server));  // a bad key file fails before the model loads
  if (keys.enabled()) {
    log_info("API keys: {} configured; requests need 'Authorization: Bearer KEY' (open: /health, /ready{})", keys.size(),
             config_.server.protect_metrics ? "" : ", /metrics");
  }
  LLMS_ASSIGN_OR_RETURN(model_, Model::load(config_.server.model_path));
  if (model_->config().synthetic) {
    log_warn("{}: synthetic model with RANDOM weights; its text is noise", config_.server.model_path);
  }
  LLMS_ASSIGN_OR_RETURN(tokenizer_, Tokenizer::from_gguf(model_->file()));
  LLMS_ASSIGN_OR_RETURN(std::string tmpl, resolve_chat_template(config_.server.chat_template, *tokenizer_));
  registry_ = std::make_unique<Registry>();
  metrics_ = std::make_unique<ServerMetrics>(*registry_);
  LLMS_ASSIGN_OR_RETURN(engine_, Engine::create(*model_, *tokenizer_, config_.engine, registry_.get()));
  ctx_ = std::make_unique<ServerContext>(*engine_, *tokenizer_, config_, *metrics_, std::move(tmpl));
  router_ = std::make_unique<Router>(*ctx_, std::move(keys));
  engine_->start();

  HttpServerOptions o = transport_options(config_.server);
  o.error_response = transport_error_response;
  ServerMetrics* m = metrics_.get();
  const Router* routes = router_.get();
  o.on_exchange = [m, routes](const HttpExchangeRecord& r) {
    const std::string endpoint(routes->endpoint_label(r.path));
    m->http_requests.with({endpoint, r.method.empty() ? "-" : r.method, std::to_string(r.status)}).inc();
    m->http_duration.with({endpoint}).observe(r.seconds);
  };
  o.on_connection = [m](int delta) { m->open_connections.add(delta); };
  o.on_event = [m](HttpEvent e) { count_transport_event(*m, e); };
  Router* router = router_.get();
  http_ = std::make_unique<HttpServer>(std::move(o), [router](HttpRequest req, std::shared_ptr<HttpExchange> ex) {
    router->handle(std::move(req), std::move(ex));
  });
  return http_->start();
}

void LlmServer::shutdown() {
  if (shut_down_ || !http_) return;
  shut_down_ = true;
  ctx_->set_draining();
  engine_->begin_drain();
  http_->stop_accepting();
  http_->set_draining();
  const int64_t deadline = now_ns() + static_cast<int64_t>(config_.server.shutdown_timeout_s * 1e9);
  if (!ctx_->wait_idle(deadline)) {
    log_info("shutdown: {} requests still running after {} s; cancelling them", ctx_->active_requests(),
             config_.server.shutdown_timeout_s);
  }
  engine_->stop();  // ends what is left "cancelled"; their clients are told so
  ctx_->wait_idle(now_ns() + static_cast<int64_t>(kCancelFlushSeconds * 1e9));
  http_->stop(kCancelFlushSeconds);
}

LlmServer::~LlmServer() {
  shutdown();       // every request in flight completes or is cancelled and answered
  if (engine_) engine_->stop();
  http_.reset();  // before the context and engine its handlers refer to
}

}  // namespace llms
