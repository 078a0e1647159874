// POST /v1/embeddings: each input one engine request that pools its prompt's hidden
// states and generates nothing; the answer once every input has finished.
#include <fmt/format.h>

#include <algorithm>

#include "base/clock.h"
#include "server/access_log.h"
#include "server/embeddings.h"
#include "server/endpoints.h"
#include "server/prompt_builder.h"

namespace llms {
namespace {

// The inputs of one request in flight. Every member runs on the exchange's strand;
// the engine's notify callbacks post there.
class EmbeddingJob : public std::enable_shared_from_this<EmbeddingJob> {
 public:
  EmbeddingJob(ServerContext& ctx, VersionPtr version, std::shared_ptr<HttpExchange> ex, EmbeddingRequest request)
      : ctx_(ctx), version_(std::move(version)), ex_(std::move(ex)), request_(std::move(request)) {}
  ~EmbeddingJob() {
    cancel_all();
    if (counted_) ctx_.request_finished();
  }

  // Submits every input with the adapter the request names (held by with_adapter()).
  void start(const std::vector<PromptInput>& prompts, const HeldAdapter& held);

 private:
  void check();
  void respond();
  void cancel_all() {
    for (auto& h : handles_) {
      if (h && !h->finished()) h->cancel();
    }
  }

  ServerContext& ctx_;
  const VersionPtr version_;
  std::shared_ptr<HttpExchange> ex_;
  EmbeddingRequest request_;
  std::vector<std::shared_ptr<RequestHandle>> handles_;
  std::vector<std::optional<FinishEvent>> results_;
  std::shared_ptr<EmbeddingJob> self_;  // alive until it answers
  bool counted_ = false;
  bool done_ = false;
};

void EmbeddingJob::start(const std::vector<PromptInput>& prompts, const HeldAdapter& held) {
  ctx_.request_started();
  counted_ = true;
  const Engine& engine = version_->engine();
  const Pooling pooling = served_pooling(ctx_.config.server, version_->model());
  for (const PromptInput& p : prompts) {
    RequestParams params;
    params.adapter = held.adapter;
    params.setup_ns = held.load_ns;
    params.prompt = p.tokens;
    params.max_tokens = 0;
    params.pooling = pooling;
    params.speculative = false;
    params.early_exit = false;
    if (auto e = check_request(params, engine.vocab_size(), engine.context_length())) {
      return ex_->respond(api_error_response(bad_request(e->message, e->param == "prompt" ? "input" : e->param,
                                                         e->context_exceeded ? "context_length_exceeded" : "")));
    }
    double retry = 0;
    auto handle = version_->target().submit(std::move(params), Route{}, &retry);
    if (!handle.ok()) {
      return ex_->respond(
          api_error_response(api_error_from_status(handle.status(), version_->target().snapshot().admission.draining, retry)));
    }
    handles_.push_back(std::move(handle).value());
  }
  results_.resize(handles_.size());
  self_ = shared_from_this();
  std::weak_ptr<EmbeddingJob> weak = self_;
  ex_->set_on_close([weak] {
    if (auto s = weak.lock(); s && !s->done_) {
      s->done_ = true;
      s->cancel_all();
      s->self_.reset();
    }
  });
  for (auto& h : handles_) {
    h->set_notify([weak] {
      if (auto s = weak.lock()) s->ex_->post([weak] {
          if (auto j = weak.lock()) j->check();
        });
    });
  }
  check();  // requests that finished before their notify was set
}

void EmbeddingJob::check() {
  if (done_) return;
  for (size_t i = 0; i < handles_.size(); ++i) {
    for (auto& ev : handles_[i]->drain()) {
      if (auto* f = std::get_if<FinishEvent>(&ev)) results_[i] = std::move(*f);
    }
  }
  if (std::all_of(results_.begin(), results_.end(), [](const auto& r) { return r.has_value(); })) respond();
}

void EmbeddingJob::respond() {
  done_ = true;
  for (auto& h : handles_) h->set_notify(nullptr);
  Json data = Json::array();
  int64_t prompt_tokens = 0;
  for (size_t i = 0; i < results_.size(); ++i) {
    FinishEvent& f = *results_[i];
    if (f.reason == FinishReason::kRejected) {
      ex_->respond(api_error_response(slo_unattainable_error(f.message, f.retry_after_s)));
      return self_.reset();
    }
    if (f.embedding.empty()) {
      ex_->respond(api_error_response(internal_api_error("embedding failed: " + f.message)));
      return self_.reset();
    }
    if (request_.normalize) l2_normalize(&f.embedding);
    prompt_tokens += f.prompt_tokens;
    Json item = {{"object", "embedding"}, {"index", i}};
    if (request_.base64) {
      item["embedding"] = base64_floats(f.embedding);
    } else {
      item["embedding"] = f.embedding;
    }
    data.push_back(std::move(item));
  }
  const Json body = {{"object", "list"},
                     {"data", std::move(data)},
                     {"model", request_.model.empty() ? ctx_.model_name : request_.model},
                     {"usage", {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens}}}};
  ex_->set_note(access_note(ctx_.next_id("embd-"), prompt_tokens, 0, -1, "stop"));
  HttpResponse r = json_response(200, body);
  r.headers.emplace_back(kVersionHeader, version_->name());
  ex_->respond(std::move(r));
  self_.reset();
}

void start_embeddings(ServerContext& ctx, const std::shared_ptr<HttpExchange>& ex, EmbeddingRequest r,
                      Result<VersionPtr> picked) {
  if (!picked.ok()) return ex->respond(api_error_response(api_error_from_status(picked.status())));
  VersionPtr v = std::move(picked).value();
  const int64_t width = v->model().config().n_embd;
  if (r.dimensions && *r.dimensions != width) {
    return ex->respond(api_error_response(bad_request(
        fmt::format("this model's embeddings have {} dimensions and are not shortened; leave 'dimensions' out or "
                    "set it to {}",
                    width, width),
        "dimensions")));
  }
  std::vector<PromptInput> prompts;
  if (auto e = completion_prompts(r.inputs, v->tokenizer(), /*parse_special=*/true, &prompts, /*add_eos=*/true)) {
    e->param = "input";
    return ex->respond(api_error_response(*e));
  }
  const std::string asked = r.model;
  auto job = std::make_shared<EmbeddingJob>(ctx, v, ex, std::move(r));
  with_adapter(ctx, ex, std::move(v), asked,
               [job, prompts = std::move(prompts)](HeldAdapter held) { job->start(prompts, held); });
}

}  // namespace

void handle_embeddings(ServerContext& ctx, const HttpRequest& req, std::shared_ptr<HttpExchange> ex) {
  auto fail = [&](const ApiError& e) { ex->respond(api_error_response(e)); };
  Json body;
  if (auto e = parse_json_object(req.body, &body)) return fail(*e);
  auto r = std::make_shared<EmbeddingRequest>();
  if (auto e = parse_embedding_request(body, r.get())) return fail(*e);
  if (auto e = check_model(ctx, r->model)) return fail(*e);
  if (ctx.draining()) return fail(api_error_from_status(unavailable("the server is shutting down"), true));
  ctx.pick_when_ready(r->model, req.header(kVersionPinHeader), [&ctx, ex, r](Result<VersionPtr> v, bool now) {
    if (now) return start_embeddings(ctx, ex, std::move(*r), std::move(v));
    ex->post([&ctx, ex, r, v = std::move(v)]() mutable { start_embeddings(ctx, ex, std::move(*r), std::move(v)); });
  });
}

}  // namespace llms
