#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>

#include "base/clock.h"

#include "server/api_translation.h"
#include "server/completion_job.h"
#include "server/endpoints.h"
#include "server/output_constraints.h"
#include "chat/tool_calls.h"
#include "server/prompt_builder.h"
#include "tokenizer/generation_defaults.h"

namespace llms {

namespace {

// Names every model it serves (GET /v1/models lists their aliases and adapters too).
ApiError unknown_model(const ServerContext& ctx, const std::string& asked) {
  ApiError e = not_found_error(fmt::format("The model '{}' does not exist; this server serves '{}'",
                                           asked.substr(0, 200), fmt::join(ctx.model_names(), "', '")),
                               "model_not_found");
  e.param = "model";
  return e;
}

}  // namespace

std::optional<ApiError> check_model(const ServerContext& ctx, const std::string& asked) {
  if (ctx.names_default_model(asked) || ctx.other_model(asked) || ctx.loras->find(asked)) return std::nullopt;
  return unknown_model(ctx, asked);
}

std::optional<ApiError> resolve_adapter(const ServerContext& ctx, ServingVersion& v, const std::string& asked,
                                        std::shared_ptr<const LoraAdapter>* adapter, int64_t* load_ns) {
  *adapter = nullptr;
  if (load_ns) *load_ns = 0;
  if (asked.empty() || ctx.names_default_model(asked) || ctx.other_model(asked)) return std::nullopt;
  Result<LoraAcquired> got = v.loras().acquire(asked);
  if (got.ok()) {
    *adapter = got->adapter;
    if (load_ns) *load_ns = got->load_ns;
    return std::nullopt;
  }
  if (got.status().code() == StatusCode::kNotFound) return unknown_model(ctx, asked);
  if (got.status().code() == StatusCode::kResourceExhausted) {
    return ApiError{503, "service_unavailable", got.status().message(), "model", "lora_memory_full", 1};
  }
  return internal_api_error(got.status().message());  // its file cannot be read any more
}

namespace {

// The flags of a job an exchange hands to the grammar pool: `cancel` (watched by the
// job, also set by the pool's stop()) and `client_gone` (nobody to answer); the client
// hanging up sets both.
struct PoolJobFlags {
  std::atomic<bool> cancel{false};
  std::atomic<bool> client_gone{false};
};

std::shared_ptr<PoolJobFlags> watch_client(const std::shared_ptr<HttpExchange>& ex) {
  auto flags = std::make_shared<PoolJobFlags>();
  ex->set_on_close([flags] {
    flags->client_gone.store(true);
    flags->cancel.store(true);
  });
  return flags;
}

}  // namespace

void with_adapter(ServerContext& ctx, const std::shared_ptr<HttpExchange>& ex, VersionPtr v, const std::string& asked,
                  std::function<void(HeldAdapter)> then) {
  const bool at_once =
      asked.empty() || ctx.names_default_model(asked) || ctx.other_model(asked) || v->loras().find(asked) != nullptr;
  if (at_once) {
    HeldAdapter held;
    if (auto e = resolve_adapter(ctx, *v, asked, &held.adapter, &held.load_ns)) return ex->respond(api_error_response(*e));
    return then(std::move(held));
  }
  auto flags = watch_client(ex);
  GrammarPool::CancelFlag cancel(flags, &flags->cancel);
  auto job = [&ctx, ex, flags, v = std::move(v), asked, then = std::move(then)]() mutable {
    HeldAdapter held;
    std::optional<ApiError> error;
    if (flags->cancel.load()) {
      error = api_error_from_status(unavailable("the server is shutting down"), true);
    } else {
      error = resolve_adapter(ctx, *v, asked, &held.adapter, &held.load_ns);
    }
    ex->post([ex, flags, held = std::move(held), error = std::move(error), then = std::move(then)]() mutable {
      if (flags->client_gone.load()) return;  // nobody to answer
      if (error) return ex->respond(api_error_response(*error));
      then(std::move(held));
    });
  };
  if (!ctx.grammars().submit(cancel, std::move(job))) {
    ApiError e = api_error_from_status(unavailable("too many requests are being set up; retry later"));
    e.retry_after_s = 1;
    ex->respond(api_error_response(e));
  }
}

// Tools: the call format of the version's template; the tools for a Jinja template
// that writes them itself (`template_tools`), else the messages with tools and calls
// written as text; and what the answer's grammar is made of (compiled later).
void prepare_tools(CompletionRequest& r, ServingVersion& v, std::optional<ToolCallFormat>* format, Json* template_tools,
                   GrammarSpec* spec) {
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
  if (!r.tools.active()) return;
  *format = f;
  spec->tools = r.tools;
  spec->format = f;
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

// A chat request's prompt on version `v`, with its tools' format and grammar parts.
std::optional<ApiError> build_chat_prompt(CompletionRequest& r, ServingVersion& v, PromptInput* prompt,
                                          std::optional<ToolCallFormat>* tool_format, GrammarSpec* spec) {
  ChatPromptOptions options{.add_generation_prompt = r.add_generation_prompt,
                            .continue_final_message = r.continue_final_message,
                            .kwargs = r.chat_template_kwargs};
  prepare_tools(r, v, tool_format, &options.tools, spec);
  return chat_prompt(r.messages, v.tokenizer(), v.chat_template(), options, prompt);
}

// The request once its grammar (if any) is compiled: the job that answers it.
struct PreparedCompletion {
  CompletionRequest request;
  VersionPtr version;
  std::vector<PromptInput> prompts;
  std::optional<ToolCallFormat> tool_format;
};

void start_job(ServerContext& ctx, const std::shared_ptr<HttpExchange>& ex, PreparedCompletion p) {
  auto job = std::make_shared<CompletionJob>(ctx, std::move(p.version), ex, std::move(p.request), std::move(p.prompts),
                                             p.tool_format);
  job->start();
}

// Compiles `spec` on the grammar pool, then starts the job on the exchange's strand.
// The client hanging up meanwhile cancels the compile (its budget's flag).
void compile_then_start(ServerContext& ctx, const std::shared_ptr<HttpExchange>& ex, GrammarSpec spec,
                        std::shared_ptr<PreparedCompletion> p) {
  auto flags = watch_client(ex);
  GrammarPool::CancelFlag cancel(flags, &flags->cancel);
  const int64_t submitted = now_ns();
  auto job = [&ctx, ex, flags, spec = std::move(spec), p, submitted]() mutable {
    GrammarBudget budget = ctx.config.server.grammar_budget;
    budget.cancel = &flags->cancel;
    CompileOutcome o = flags->cancel.load() ? CompileOutcome{nullptr, std::nullopt, "cancelled"}
                                            : compile_spec(spec, p->version->engine(), budget);
    ctx.grammars().count(o.result, static_cast<double>(now_ns() - submitted) * 1e-9);
    ex->post([&ctx, ex, flags, p, o = std::move(o)]() mutable {
      if (flags->client_gone.load()) return;  // nobody to answer
      if (o.result == "cancelled") {
        return ex->respond(api_error_response(api_error_from_status(unavailable("the server is shutting down"), true)));
      }
      if (o.error) return ex->respond(api_error_response(*o.error));
      p->request.params.grammar = std::move(o.grammar);
      start_job(ctx, ex, std::move(*p));
    });
  };
  if (!ctx.grammars().submit(cancel, std::move(job))) {
    ctx.grammars().count("refused", 0);
    ApiError e = api_error_from_status(unavailable("too many grammars are compiling; retry later"));
    e.retry_after_s = 1;
    ex->respond(api_error_response(e));
  }
}

// The rest once the adapter is held: the prompt, then the grammar (if any).
void prepare_and_start(ServerContext& ctx, const std::shared_ptr<HttpExchange>& ex, CompletionRequest r,
                       std::shared_ptr<PreparedCompletion> p) {
  auto fail = [&](const ApiError& e) { ex->respond(api_error_response(e)); };
  ServingVersion& v = *p->version;
  GrammarSpec spec;
  spec.constraint = r.constraint;
  if (r.kind == ApiKind::kChat) {
    PromptInput prompt;
    if (auto e = build_chat_prompt(r, v, &prompt, &p->tool_format, &spec)) return fail(*e);
    p->prompts.push_back(std::move(prompt));
  } else if (auto e = completion_prompts(r.prompts, v.tokenizer(), !r.split_special_tokens, &p->prompts)) {
    return fail(*e);
  }
  p->request = std::move(r);
  if (spec.empty()) return start_job(ctx, ex, std::move(*p));
  compile_then_start(ctx, ex, std::move(spec), std::move(p));
}

// The rest of a completion once its version is known (on the exchange's strand).
void start_on(ServerContext& ctx, const std::shared_ptr<HttpExchange>& ex, CompletionRequest r, GivenSampling given,
              Result<VersionPtr> picked) {
  auto fail = [&](const ApiError& e) { ex->respond(api_error_response(e)); };
  if (!picked.ok()) return fail(api_error_from_status(picked.status()));
  auto p = std::make_shared<PreparedCompletion>();
  p->version = std::move(picked).value();
  ServingVersion& v = *p->version;
  apply_generation_defaults(v.tokenizer().generation_defaults(), given, &r.params.sampling);
  // The engine's rule for sampling values, now with the model's vocabulary (logit_bias ids)
  // and the model's defaults filled in.
  if (auto e = r.params.sampling.check(v.engine().vocab_size())) return fail(bad_request(e->message, e->param));
  if (auto e = check_route(r, v)) return fail(*e);
  // The adapter as this version holds it (unloaded since check_model(): the same 404).
  auto req = std::make_shared<CompletionRequest>(std::move(r));
  with_adapter(ctx, ex, p->version, req->model, [&ctx, ex, req, p](HeldAdapter held) {
    req->params.adapter = std::move(held.adapter);
    req->params.setup_ns = held.load_ns;
    prepare_and_start(ctx, ex, std::move(*req), p);
  });
}

}  // namespace

std::optional<ApiError> chat_prompt_tokens(ServerContext& ctx, const HttpRequest& req, const Json& chat_body,
                                           int64_t* tokens) {
  CompletionRequest r;
  LLMS_API_TRY(parse_completion_request(chat_body, ApiKind::kChat, &r));
  LLMS_API_TRY(check_model(ctx, r.model));
  Result<VersionPtr> v = ctx.pick(r.model, req.header(kVersionPinHeader));
  if (!v.ok()) return api_error_from_status(v.status());
  PromptInput prompt;
  std::optional<ToolCallFormat> format;
  GrammarSpec spec;
  LLMS_API_TRY(build_chat_prompt(r, *v.value(), &prompt, &format, &spec));
  *tokens = static_cast<int64_t>(prompt.tokens.size());
  return std::nullopt;
}

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
  r->params.cache_salt = ctx.cache_salt(req.header("authorization"), r->cache_salt);
  // During a drain-and-swap deploy the version set holds the request; its answer then
  // comes on the deployer's thread and is posted back to this connection's strand.
  const GivenSampling given = given_sampling(body);
  ctx.pick_when_ready(r->model, req.header(kVersionPinHeader), [&ctx, ex, r, given](Result<VersionPtr> v, bool now) {
    if (now) return start_on(ctx, ex, std::move(*r), given, std::move(v));
    ex->post([&ctx, ex, r, given, v = std::move(v)]() mutable { start_on(ctx, ex, std::move(*r), given, std::move(v)); });
  });
}

}  // namespace llms
