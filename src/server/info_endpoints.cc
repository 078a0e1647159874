#include <fmt/format.h>

#include "base/clock.h"
#include "server/endpoints.h"

namespace llms {
namespace {

constexpr double kStallSeconds = 30.0;

// vLLM's card: max_model_len (the serving version's context) and, as an extension, the
// version that serves (absent while versions are being swapped).
Json model_card(const ServerContext& ctx) {
  Json card = {{"id", ctx.model_name}, {"object", "model"}, {"created", ctx.created}, {"owned_by", "llmserve"}};
  if (const VersionPtr v = ctx.versions.current()) {
    card["max_model_len"] = v->engine().context_length();
    card["version"] = v->name();
  }
  return card;
}

// An adapter's card, as vLLM lists a LoRA: its base as `parent`, its path as `root`.
Json adapter_card(const ServerContext& ctx, const LoraSpec& a) {
  return Json{{"id", a.name},       {"object", "model"},       {"created", ctx.created},
              {"owned_by", "llmserve"}, {"root", a.path}, {"parent", ctx.model_name}};
}

}  // namespace

void handle_models(ServerContext& ctx, const HttpRequest& req, std::shared_ptr<HttpExchange> ex) {
  const std::string prefix = "/v1/models/";
  if (req.path.size() > prefix.size() && req.path.compare(0, prefix.size(), prefix) == 0) {
    const std::string id = req.path.substr(prefix.size());
    if (auto e = check_model(ctx, id)) return ex->respond(api_error_response(*e));
    if (const auto a = ctx.loras->find(id)) return ex->respond(json_response(200, adapter_card(ctx, *a)));
    return ex->respond(json_response(200, model_card(ctx)));
  }
  Json data = Json::array({model_card(ctx)});
  for (const LoraSpec& a : ctx.loras->list()) data.push_back(adapter_card(ctx, a));
  ex->respond(json_response(200, Json{{"object", "list"}, {"data", std::move(data)}}));
}

void handle_health(ServerContext&, const HttpRequest&, std::shared_ptr<HttpExchange> ex) {
  ex->respond(json_response(200, Json{{"status", "ok"}}));
}

// 503 only while this server should get no new work: loading (no version yet),
// draining, the engine stopped or stalled, the memory breaker open, or the waiting
// queue full. A busy KV pool is not a reason: the queue absorbs it. The reason holds
// the figures of now.
void handle_ready(ServerContext& ctx, const HttpRequest&, std::shared_ptr<HttpExchange> ex) {
  auto not_ready = [&](const std::string& reason) {
    HttpResponse r = json_response(503, Json{{"status", "not_ready"}, {"reason", reason}});
    r.headers.emplace_back("Retry-After", "1");
    ex->respond(std::move(r));
  };
  const VersionPtr current = ctx.versions.current();
  if (!current) return not_ready("loading: no model version is serving yet (or versions are being swapped)");
  const EngineSnapshot s = current->engine().snapshot();
  std::string reason;
  const double since_step = s.last_step_ns > 0 ? static_cast<double>(now_ns() - s.last_step_ns) * 1e-9 : 0;
  if (ctx.draining() || s.admission.draining) {
    reason = "draining: the server is shutting down";
  } else if (ctx.leaving()) {
    reason = "shutting down: still serving for shutdown_delay, then draining";
  } else if (!s.thread_running) {
    reason = "the engine is not running";
  } else if (since_step > kStallSeconds) {
    reason = fmt::format("the engine has not stepped for {:.0f} s", since_step);
  } else if (const AdmissionState a = current->engine().admission_state(); a.overloaded) {
    reason = "above a memory watermark: " + a.reason;
  } else if (a.queue_full) {
    reason = fmt::format("the waiting queue is full ({} requests)", a.waiting_requests);
  }
  if (!reason.empty()) return not_ready(reason);
  ex->respond(json_response(200, Json{{"status", "ready"}, {"model", ctx.model_name}, {"version", current->name()}}));
}

void handle_metrics(ServerContext& ctx, const HttpRequest&, std::shared_ptr<HttpExchange> ex) {
  ex->respond(HttpResponse{200, "text/plain; version=0.0.4; charset=utf-8", ctx.render_metrics(), {}});
}

}  // namespace llms
