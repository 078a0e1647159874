#include <fmt/format.h>

#include <algorithm>

#include "server/completion_job.h"
#include "server/endpoints.h"
#include "server/output_constraints.h"
#include "chat/tool_calls.h"
#include "server/prompt_builder.h"
#include "tokenizer/generation_defaults.h"

namespace llms {

std::optional<ApiError> check_model(const ServerContext& ctx, const std::string& asked) {
  if (asked.empty() || asked == ctx.model_name) return std::nullopt;
  ApiError e = not_found_error(fmt::format("The model '{}' does not exist; this server serves '{}'", asked,
                                           ctx.model_name),
                               "model_not_found");
  e.param = "model";
  return e;
}

// Tools: the call format of the version's template; the tools for a Jinja template
// that writes them itself (`template_tools`), else the messages with tools and calls
// written as text; and the grammar of the answer.
std::optional<ApiError> prepare_tools(CompletionRequest& r, ServingVersion& v, std::optional<ToolCallFormat>* format,
                                      Json* template_tools) {
  const ToolCallFormat f = tool_call_format_for(v.effective_chat_template());
  const bool history = std::any_of(r.messages.begin(), r.messages.end(),
                                   [](const ChatMessage& m) { return m.role == "tool" || !m.tool_calls.empty(); });
  if (r.tools.active() || history) {
    if (v.template_renders_tools()) {
      if (r.tools.active()) {
        *template_tools = Json::array();
        for (const ToolDefinition& t : r.tools.tools) template_tools->push_back(t.raw);
      }
    } else {
      r.messages = tools_as_text(r.messages, r.tools, f);
    }
  }
  if (!r.tools.active()) return std::nullopt;
  *format = f;
  auto g = tool_call_grammar(r.tools, f);
  if (!g.ok()) return bad_request(g.status().message(), "tools");
  auto compiled = v.engine().compile_grammar(std::move(g).value());
  if (!compiled.ok()) return bad_request("tools: " + compiled.status().message(), "tools");
  r.params.grammar = std::move(compiled).value();
  return std::nullopt;
}

HttpResponse json_response(int status, const Json& body) { return HttpResponse{status, "application/json", dump_json(body), {}}; }

namespace {

// A request's route names what the version serves (its "precision": a variant, or auto).
std::optional<ApiError> check_route(const CompletionRequest& r, const ServingVersion& v) {
  if (Status s = v.target().check(Route{r.precision}); !s.ok()) return bad_request(s.message(), "precision");
  return std::nullopt;
}

// Which sampling parameters the body set; the model directory's generation_config.json
// defaults (Tokenizer::generation_defaults, empty for GGUF files) fill the others.
struct GivenSampling {
  bool temperature = false;
  bool top_p = false;
  bool top_k = false;
};

GivenSampling given_sampling(const Json& body) {
  return GivenSampling{body.contains("temperature"), body.contains("top_p"), body.contains("top_k")};
}

void apply_generation_defaults(const GenerationDefaults& d, GivenSampling given, SamplingParams* sp) {
  if (d.temperature && !given.temperature) sp->temperature = *d.temperature;
  if (d.top_p && !given.top_p) sp->top_p = *d.top_p;
  if (d.top_k && !given.top_k) sp->top_k = *d.top_k;
}

// The rest of a completion once its version is known (on the exchange's strand).
void start_on(ServerContext& ctx, const std::shared_ptr<HttpExchange>& ex, CompletionRequest r, GivenSampling given,
              Result<VersionPtr> picked) {
  auto fail = [&](const ApiError& e) { ex->respond(api_error_response(e)); };
  if (!picked.ok()) return fail(api_error_from_status(picked.status()));
  const VersionPtr v = std::move(picked).value();
  apply_generation_defaults(v->tokenizer().generation_defaults(), given, &r.params.sampling);
  // The engine's rule for sampling values, now with the model's vocabulary (logit_bias ids)
  // and the model's defaults filled in.
  if (auto e = r.params.sampling.check(v->engine().vocab_size())) return fail(bad_request(e->message, e->param));
  if (auto e = check_route(r, *v)) return fail(*e);
  if (auto e = compile_constraint(r.constraint, v->engine(), &r.params.grammar)) return fail(*e);
  std::vector<PromptInput> prompts;
  std::optional<ToolCallFormat> tool_format;
  if (r.kind == ApiKind::kChat) {
    Json template_tools;
    if (auto e = prepare_tools(r, *v, &tool_format, &template_tools)) return fail(*e);
    PromptInput p;
    if (auto e = chat_prompt(r.messages, v->tokenizer(), v->chat_template(), r.add_generation_prompt, &p, template_tools)) {
      return fail(*e);
    }
    prompts.push_back(std::move(p));
  } else if (auto e = completion_prompts(r.prompts, v->tokenizer(), !r.split_special_tokens, &prompts)) {
    return fail(*e);
  }
  auto job = std::make_shared<CompletionJob>(ctx, v, ex, std::move(r), std::move(prompts), tool_format);
  job->start();
}

}  // namespace

void handle_completions(ServerContext& ctx, const HttpRequest& req, std::shared_ptr<HttpExchange> ex, ApiKind kind) {
  auto fail = [&](const ApiError& e) { ex->respond(api_error_response(e)); };
  Json body;
  if (auto e = parse_json_object(req.body, &body)) return fail(*e);
  auto r = std::make_shared<CompletionRequest>();
  if (auto e = parse_completion_request(body, kind, r.get())) return fail(*e);
  if (auto e = check_model(ctx, r->model)) return fail(*e);
  const std::string authorization = req.header("authorization");
  r->rater = rater_id(authorization);
  if (ctx.review_excluded.enabled() && !ctx.review_excluded.check(authorization)) r->review = false;
  if (ctx.draining()) return fail(api_error_from_status(unavailable("the server is shutting down"), true));
  // During a drain-and-swap deploy the version set holds the request; its answer then
  // comes on the deployer's thread and is posted back to this connection's strand.
  const GivenSampling given = given_sampling(body);
  ctx.versions.pick_when_ready(req.header(kVersionPinHeader), [&ctx, ex, r, given](Result<VersionPtr> v, bool now) {
    if (now) return start_on(ctx, ex, std::move(*r), given, std::move(v));
    ex->post([&ctx, ex, r, given, v = std::move(v)]() mutable { start_on(ctx, ex, std::move(*r), given, std::move(v)); });
  });
}

}  // namespace llms
