// The admin API of the model lifecycle (docs/operations.md): every answer is JSON
// with the state after the action. Deploys and the other changes run on the
// deployer's thread; the answer is posted back to the connection when they are done,
// so an HTTP thread never waits for a model to load.
#include <fmt/format.h>

#include "base/constant_time.h"
#include "server/api_keys.h"
#include "server/endpoints.h"

namespace llms {
namespace {

Json gate_json(const GateResult& g) {
  if (!g.ran) return nullptr;
  Json j{{"passed", g.passed}, {"kl", g.kl}, {"top1", g.top1}, {"ppl_ratio", g.ppl_ratio}, {"tokens", g.tokens},
         {"reason", g.reason}};
  if (g.task_ran) {
    j["task"] = {{"bleu", g.task.bleu.score}, {"chrf", g.task.chrf}, {"exact_match", g.task.exact_match},
                 {"references", g.task.pairs}};
  }
  return j;
}

Json state_json(const ServerContext& ctx) {
  const VersionSetState s = ctx.versions.state();
  Json out = {{"current", s.current},
              {"previous", s.previous.empty() ? Json(nullptr) : Json(s.previous)},
              {"candidate", s.candidate.empty() ? Json(nullptr) : Json(s.candidate)},
              {"canary_share", s.canary_share},
              {"canary_requests", s.canary_requests},
              {"current_requests", s.current_requests},
              {"loaded", s.loaded}};
  Json versions = Json::array();
  if (const ModelRoot* root = ctx.deployer.root()) {
    for (const VersionInfo& v : root->versions()) {
      Json j = {{"name", v.name}, {"current", v.current}, {"previous", v.previous}, {"model_bytes", v.model_bytes},
                {"loaded", std::find(s.loaded.begin(), s.loaded.end(), v.name) != s.loaded.end()}, {"gate", nullptr}};
      for (const VersionPtr& lv : ctx.versions.loaded()) {
        if (lv->name() == v.name) j["gate"] = gate_json(lv->gate());
      }
      versions.push_back(std::move(j));
    }
  }
  out["versions"] = std::move(versions);
  if (const auto last = ctx.deployer.last_outcome()) {
    out["last_deploy"] = {{"version", last->version}, {"ok", last->ok}, {"result", last->result},
                          {"message", last->message}, {"gate", gate_json(last->gate)}};
  }
  return out;
}

// The action's result and the state after it, posted back to the exchange.
void answer(ServerContext& ctx, const std::shared_ptr<HttpExchange>& ex, int status, Json result) {
  result["state"] = state_json(ctx);
  ex->post([ex, status, body = dump_json(result)] { ex->respond(HttpResponse{status, "application/json", body, {}}); });
}

void answer_status(ServerContext& ctx, const std::shared_ptr<HttpExchange>& ex, const Status& s) {
  if (s.ok()) return answer(ctx, ex, 200, Json{{"ok", true}});
  const ApiError e = api_error_from_status(s);
  answer(ctx, ex, e.status, Json{{"ok", false}, {"error", {{"message", s.message()}, {"type", e.type}}}});
}

std::optional<ApiError> check_token(const ServerContext& ctx, const HttpRequest& req) {
  // Only the admin token: the router lets /admin/* past the API-key check, and an API
  // key never equals the token (LlmServer refuses that at start).
  const std::string auth = req.header("authorization");
  if (constant_time_equal(bearer_credential(auth), ctx.admin_token)) return std::nullopt;
  return ApiError{401, "authentication_error", "the admin API needs 'Authorization: Bearer <token>' of --admin-token-file",
                  "", "invalid_api_key", 0};
}

void deploy(ServerContext& ctx, const HttpRequest& req, const std::shared_ptr<HttpExchange>& ex) {
  Json body;
  if (auto e = parse_json_object(req.body, &body)) return ex->respond(api_error_response(*e));
  std::string version;
  double canary = 0;
  if (auto e = read_string(body, "version", &version)) return ex->respond(api_error_response(*e));
  if (auto e = read_number(body, "canary", 0.0, 0.99, &canary)) return ex->respond(api_error_response(*e));
  if (version.empty()) return ex->respond(api_error_response(bad_request("'version' is required", "version")));
  ctx.deployer.run([&ctx, ex, version, canary] {
    const DeployOutcome o = ctx.deployer.deploy(version, canary);
    answer(ctx, ex, o.ok ? 200 : 409, Json{{"ok", o.ok}, {"version", o.version}, {"result", o.result},
                                            {"message", o.message}, {"gate", gate_json(o.gate)}});
  });
}

}  // namespace

std::optional<HttpResponse> admin_refusal(const ServerContext& ctx, const HttpRequest& req) {
  if (ctx.admin_token.empty()) {
    return api_error_response(not_found_error("the admin API is off: start the server with --admin-token-file"));
  }
  if (auto e = check_token(ctx, req)) {
    HttpResponse r = api_error_response(*e);
    r.headers.emplace_back("WWW-Authenticate", "Bearer");
    return r;
  }
  return std::nullopt;
}

void handle_admin(ServerContext& ctx, const HttpRequest& req, std::shared_ptr<HttpExchange> ex) {
  if (auto refused = admin_refusal(ctx, req)) return ex->respond(std::move(*refused));
  if (req.path == "/admin/versions") return answer(ctx, ex, 200, Json{{"ok", true}});
  if (req.path == "/admin/deploy") return deploy(ctx, req, ex);
  Status (Deployer::*action)() = nullptr;
  if (req.path == "/admin/promote") action = &Deployer::promote;
  if (req.path == "/admin/abort") action = &Deployer::abort_canary;
  if (req.path == "/admin/rollback") action = &Deployer::rollback;
  if (action == nullptr) return ex->respond(api_error_response(not_found_error("no admin action " + req.path)));
  ctx.deployer.run([&ctx, ex, action] { answer_status(ctx, ex, (ctx.deployer.*action)()); });
}

}  // namespace llms
