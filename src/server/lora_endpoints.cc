// LoRA adapters loaded and unloaded at run time, in vLLM's shapes
// (/v1/load_lora_adapter, /v1/unload_lora_adapter), behind the admin API's token. The
// work runs on the deployer's thread, one change at a time and never beside a deploy:
// a load reads the adapter into every loaded version (all or none), then lists it, so
// a request that can name it finds it everywhere; an unload unlists it first, so a new
// request naming it gets the unknown-model 404, while requests already running keep
// their adapter (held by pointer) until they end.
#include <fmt/format.h>

#include "server/endpoints.h"

namespace llms {
namespace {

void answer(const std::shared_ptr<HttpExchange>& ex, const Status& s, const std::string& success) {
  ex->post([ex, s, success] {
    if (s.ok()) return ex->respond(HttpResponse{200, "text/plain; charset=utf-8", success, {}});
    ApiError e = s.code() == StatusCode::kNotFound ? not_found_error(s.message())
                                                   : bad_request(s.message(), "", "invalid_lora_adapter");
    ex->respond(api_error_response(e));
  });
}

Status load(ServerContext& ctx, const LoraSpec& spec) {
  if (ctx.loras->find(spec.name)) {
    return invalid_argument(fmt::format("The lora adapter '{}' has already been loaded.", spec.name));
  }
  std::vector<VersionPtr> done;
  for (const VersionPtr& v : ctx.versions.loaded()) {
    if (Status s = v->add_adapter(spec); !s.ok()) {
      for (const VersionPtr& d : done) (void)d->loras().remove(spec.name);
      return s.code() == StatusCode::kNotFound ? invalid_argument(s.message()) : s;  // a missing file is the body's fault
    }
    done.push_back(v);
  }
  return ctx.loras->add(spec);
}

Status unload(ServerContext& ctx, const std::string& name) {
  if (!ctx.loras->remove(name).ok()) return not_found(fmt::format("The lora adapter '{}' cannot be found.", name));
  for (const VersionPtr& v : ctx.versions.loaded()) (void)v->loras().remove(name);
  return ok_status();
}

// The body's lora_name (required) and, when `path` is given, lora_path (required).
std::optional<ApiError> parse_body(const HttpRequest& req, LoraSpec* spec, bool path) {
  Json body;
  if (auto e = parse_json_object(req.body, &body)) return e;
  if (auto e = read_string(body, "lora_name", &spec->name)) return e;
  if (spec->name.empty()) return bad_request("'lora_name' is required", "lora_name");
  if (!path) return std::nullopt;
  if (auto e = read_string(body, "lora_path", &spec->path)) return e;
  if (spec->path.empty()) return bad_request("'lora_path' is required", "lora_path");
  return std::nullopt;
}

}  // namespace

void handle_load_lora(ServerContext& ctx, const HttpRequest& req, std::shared_ptr<HttpExchange> ex) {
  if (auto refused = admin_refusal(ctx, req)) return ex->respond(std::move(*refused));
  LoraSpec spec;
  if (auto e = parse_body(req, &spec, true)) return ex->respond(api_error_response(*e));
  if (Status s = check_lora_name(spec.name, ctx.model_name); !s.ok()) {
    return ex->respond(api_error_response(bad_request(s.message(), "lora_name")));
  }
  if (ctx.names_default_model(spec.name) || ctx.other_model(spec.name)) {  // a model's name or alias
    return ex->respond(api_error_response(
        bad_request(fmt::format("adapter name '{}' names a served model", spec.name), "lora_name")));
  }
  ctx.deployer.run([&ctx, ex, spec] {
    answer(ex, load(ctx, spec), fmt::format("Success: LoRA adapter '{}' added successfully.", spec.name));
  });
}

void handle_unload_lora(ServerContext& ctx, const HttpRequest& req, std::shared_ptr<HttpExchange> ex) {
  if (auto refused = admin_refusal(ctx, req)) return ex->respond(std::move(*refused));
  LoraSpec spec;
  if (auto e = parse_body(req, &spec, false)) return ex->respond(api_error_response(*e));
  ctx.deployer.run([&ctx, ex, name = spec.name] {
    answer(ex, unload(ctx, name), fmt::format("Success: LoRA adapter '{}' removed successfully.", name));
  });
}

}  // namespace llms
