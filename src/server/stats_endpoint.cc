// GET /v1/stats: what the dashboard draws (stats_json.h has the body's parts).
#include "base/clock.h"
#include "base/memory.h"
#include "server/endpoints.h"
#include "server/stats_json.h"

namespace llms {

void handle_stats(ServerContext& ctx, const HttpRequest&, std::shared_ptr<HttpExchange> ex) {
  const VersionPtr current = ctx.versions.current();
  if (!current) {
    return ex->respond(api_error_response(api_error_from_status(unavailable("swapping model versions; try again shortly"), false, 1)));
  }
  const StatsWindowSnapshot w = current->engine().stats_window();
  Json totals{{"requests", w.requests_total},
              {"steps", w.steps_total},
              {"prompt_tokens", w.prompt_tokens_total},
              {"completion_tokens", w.completion_tokens_total}};
  Json reasons = Json::object();
  for (int i = 0; i < kNumFinishReasons; ++i) {
    reasons[finish_reason_name(static_cast<FinishReason>(i))] = w.finished_by_reason[static_cast<size_t>(i)];
  }
  totals["finish_reasons"] = std::move(reasons);
  const Json body{{"object", "stats"},
                  {"model", ctx.model_name},
                  {"version", current->name()},
                  {"now_ms", unix_ms()},
                  {"uptime_s", unix_seconds() - ctx.created},
                  {"window", w.capacity},
                  {"engine", engine_json(current->engine().snapshot(), process_rss_bytes())},
                  {"totals", std::move(totals)},
                  {"summary", window_summary(w)},
                  {"versions", versions_json(ctx.versions.state(), ctx.versions.loaded(), ctx.feedback)},
                  {"steps", step_columns(w.steps)},
                  {"requests", request_columns(w.requests)}};
  HttpResponse resp = json_response(200, body);
  resp.headers.emplace_back("Cache-Control", "no-store");
  ex->respond(std::move(resp));
}

}  // namespace llms
