#include <fmt/format.h>

#include "base/clock.h"
#include "server/endpoints.h"

namespace llms {
namespace {

constexpr double kStallSeconds = 30.0;

// vLLM's card: max_model_len (the serving version's context) and, as extensions, the
// version that serves (absent while versions are being swapped) and the model's other
// names (`aliases`, when it has some).
Json model_card(const ServerContext& ctx, const std::string& name, const std::vector<std::string>& aliases,
                const VersionPtr& v) {
  Json card = {{"id", name}, {"object", "model"}, {"created", ctx.created}, {"owned_by", "llmserve"}};
  if (v) {
    card["max_model_len"] = v->engine().context_length();
    card["version"] = v->name();
  }
  if (!aliases.empty()) card["aliases"] = aliases;
  return card;
}

// The card of the model `id` names (by its name or an alias), as the listing has it.
Json model_card(const ServerContext& ctx, const std::string& id) {
  if (const OtherModel* m = ctx.other_model(id)) return model_card(ctx, m->name, m->aliases, m->version);
  return model_card(ctx, ctx.model_name, ctx.default_aliases, ctx.versions.current());
}

// An adapter's card, as vLLM lists a LoRA: its base as `parent`, its path as `root`.
Json adapter_card(const ServerContext& ctx, const LoraSpec& a) {
  return Json{{"id", a.name},       {"object", "model"},       {"created", ctx.created},
              {"owned_by", "llmserve"}, {"root", a.path}, {"parent", ctx.model_name}};
}

}  // namespace

// Every served model (the default first), then the adapters.
void handle_models(ServerContext& ctx, const HttpRequest& req, std::shared_ptr<HttpExchange> ex) {
  const std::string prefix = "/v1/models/";
  if (req.path.size() > prefix.size() && req.path.compare(0, prefix.size(), prefix) == 0) {
    const std::string id = req.path.substr(prefix.size());
    if (auto e = check_model(ctx, id)) return ex->respond(api_error_response(*e));
    if (const auto a = ctx.loras->find(id)) return ex->respond(json_response(200, adapter_card(ctx, *a)));
    return ex->respond(json_response(200, model_card(ctx, id)));
  }
  Json data = Json::array({model_card(ctx, ctx.model_name)});
  for (const OtherModel& m : ctx.other_models) data.push_back(model_card(ctx, m.name));
  for (const LoraSpec& a : ctx.loras->list()) data.push_back(adapter_card(ctx, a));
  ex->respond(json_response(200, Json{{"object", "list"}, {"data", std::move(data)}}));
}

void handle_health(ServerContext&, const HttpRequest&, std::shared_ptr<HttpExchange> ex) {
  ex->respond(json_response(200, Json{{"status", "ok"}}));
}

namespace {

// Why version `v`'s engine should get no new work now ("" when it may): stopped,
// stalled, the memory breaker open, or its waiting queue full. A busy KV pool is not
// a reason: the queue absorbs it.
std::string engine_not_ready(ServingVersion& v) {
  const EngineSnapshot s = v.engine().snapshot();
  const double since_step = s.last_step_ns > 0 ? static_cast<double>(now_ns() - s.last_step_ns) * 1e-9 : 0;
  if (s.admission.draining) return "draining: the server is shutting down";
  if (!s.thread_running) return "the engine is not running";
  if (since_step > kStallSeconds) return fmt::format("the engine has not stepped for {:.0f} s", since_step);
  if (const AdmissionState a = v.engine().admission_state(); a.overloaded) {
    return "above a memory watermark: " + a.reason;
  } else if (a.queue_full) {
    return fmt::format("the waiting queue is full ({} requests)", a.waiting_requests);
  }
  return "";
}

}  // namespace

// 503 only while this server should get no new work: loading (no version yet),
// draining, or an engine (the default model's, or any other model's) not ready. The
// reason holds the figures of now.
void handle_ready(ServerContext& ctx, const HttpRequest&, std::shared_ptr<HttpExchange> ex) {
  auto not_ready = [&](const std::string& reason) {
    HttpResponse r = json_response(503, Json{{"status", "not_ready"}, {"reason", reason}});
    r.headers.emplace_back("Retry-After", "1");
    ex->respond(std::move(r));
  };
  const VersionPtr current = ctx.versions.current();
  if (!current) return not_ready("loading: no model version is serving yet (or versions are being swapped)");
  std::string reason;
  if (ctx.draining() || current->engine().snapshot().admission.draining) {
    reason = "draining: the server is shutting down";
  } else if (ctx.leaving()) {
    reason = "shutting down: still serving for shutdown_delay, then draining";
  } else {
    reason = engine_not_ready(*current);
    for (const OtherModel& m : ctx.other_models) {
      if (!reason.empty()) break;
      if (std::string r = engine_not_ready(*m.version); !r.empty()) reason = fmt::format("model '{}': {}", m.name, r);
    }
  }
  if (!reason.empty()) return not_ready(reason);
  ex->respond(json_response(200, Json{{"status", "ready"}, {"model", ctx.model_name}, {"version", current->name()}}));
}

void handle_metrics(ServerContext& ctx, const HttpRequest&, std::shared_ptr<HttpExchange> ex) {
  ex->respond(HttpResponse{200, "text/plain; version=0.0.4; charset=utf-8", ctx.render_metrics(), {}});
}

}  // namespace llms
