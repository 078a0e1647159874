// The HTTP endpoints, one function each; the Router picks one by method and path.
// Each answers through the exchange (now, or later for completions) and never throws
// for anything a client sends.
//
// Thread-safety: called on the exchange's strand; they touch only ServerContext.
#pragma once

#include <functional>
#include <memory>
#include <optional>

#include "server/http_types.h"
#include "server/openai_request.h"
#include "server/server_context.h"

namespace llms {

// POST /v1/completions, POST /v1/chat/completions
void handle_completions(ServerContext& ctx, const HttpRequest& req, std::shared_ptr<HttpExchange> ex, ApiKind kind);
// POST /v1/embeddings (embeddings.h)
void handle_embeddings(ServerContext& ctx, const HttpRequest& req, std::shared_ptr<HttpExchange> ex);
// POST /v1/responses (OpenAI's Responses API), POST /v1/messages and
// /v1/messages/count_tokens (Anthropic's Messages API): over the chat path, api_translation.h
void handle_responses(ServerContext& ctx, const HttpRequest& req, std::shared_ptr<HttpExchange> ex);
void handle_messages(ServerContext& ctx, const HttpRequest& req, std::shared_ptr<HttpExchange> ex);
void handle_count_tokens(ServerContext& ctx, const HttpRequest& req, std::shared_ptr<HttpExchange> ex);
// GET /v1/models, GET /v1/models/{id}
void handle_models(ServerContext& ctx, const HttpRequest& req, std::shared_ptr<HttpExchange> ex);
// POST /tokenize, POST /detokenize (vLLM's bodies)
void handle_tokenize(ServerContext& ctx, const HttpRequest& req, std::shared_ptr<HttpExchange> ex);
void handle_detokenize(ServerContext& ctx, const HttpRequest& req, std::shared_ptr<HttpExchange> ex);
// GET /health (the process answers), GET /ready (able to take requests), GET /metrics
void handle_health(ServerContext& ctx, const HttpRequest& req, std::shared_ptr<HttpExchange> ex);
void handle_ready(ServerContext& ctx, const HttpRequest& req, std::shared_ptr<HttpExchange> ex);
void handle_metrics(ServerContext& ctx, const HttpRequest& req, std::shared_ptr<HttpExchange> ex);
// GET /v1/stats: the dashboard's window of steps and requests (stats_json.h)
void handle_stats(ServerContext& ctx, const HttpRequest& req, std::shared_ptr<HttpExchange> ex);
// GET / and GET /ui/...: the dashboard's files (ui_assets.h); routed only while ServerConfig::ui
void handle_ui(ServerContext& ctx, const HttpRequest& req, std::shared_ptr<HttpExchange> ex);

// The request header that pins a request to a loaded version, and the response header
// that says which version answered.
inline constexpr const char* kVersionPinHeader = "x-llmserve-version";
inline constexpr const char* kVersionHeader = "x-llmserve-model-version";

// POST /v1/feedback {"id", "rating", "labels", "comment"}: a rating of a recent answer
// (deploy/feedback.h); 404 for an unknown id, 409 when this key rated it already.
void handle_feedback(ServerContext& ctx, const HttpRequest& req, std::shared_ptr<HttpExchange> ex);
// Who sends a request, for one rating per request and key: a digest of its
// Authorization header (never the key itself).
std::string rater_id(std::string_view authorization);

// GET /admin/versions, POST /admin/deploy, /admin/promote, /admin/abort, /admin/rollback
// (bearer token of --admin-token-file; 404 while the admin API is off).
void handle_admin(ServerContext& ctx, const HttpRequest& req, std::shared_ptr<HttpExchange> ex);
// The admin API's answer to a request it refuses: 404 while it is off, 401 without the
// admin token; none when the request may go on.
std::optional<HttpResponse> admin_refusal(const ServerContext& ctx, const HttpRequest& req);
// POST /v1/load_lora_adapter {"lora_name", "lora_path"}, POST /v1/unload_lora_adapter
// {"lora_name"} (vLLM's): the admin API's rules; the adapter is loaded into (or dropped
// from) every loaded version on the deployer's thread, then listed (or no longer).
void handle_load_lora(ServerContext& ctx, const HttpRequest& req, std::shared_ptr<HttpExchange> ex);
void handle_unload_lora(ServerContext& ctx, const HttpRequest& req, std::shared_ptr<HttpExchange> ex);

// A 404 naming the model the server does have, when `asked` is set and is neither
// its name nor a LoRA adapter's it serves (ServerContext::loras).
std::optional<ApiError> check_model(const ServerContext& ctx, const std::string& asked);
// The adapter `asked` names on version `v` (null for the base model: `asked` empty or
// the model's name); check_model()'s 404 when `v` holds no adapter of that name (it was
// unloaded meanwhile). An adapter that --lora-memory had unloaded is loaded again here
// (on the caller's thread: with_adapter() keeps that off the I/O threads), its load
// time in `*load_ns` (may be null); a 503 with
// Retry-After when the budget is held by adapters in use.
std::optional<ApiError> resolve_adapter(const ServerContext& ctx, ServingVersion& v, const std::string& asked,
                                        std::shared_ptr<const LoraAdapter>* adapter, int64_t* load_ns = nullptr);
// What a request runs with: resolve_adapter()'s adapter and load time.
struct HeldAdapter {
  std::shared_ptr<const LoraAdapter> adapter;
  int64_t load_ns = 0;
};
// Runs `then` on the exchange's strand with the adapter `asked` names on `v`: at once
// when it is resident or `asked` names none; an adapter that --lora-memory had unloaded
// is read again on the grammar pool, off the I/O thread (reading and packing its files
// takes as long as the adapter is big), and `then` is posted back. resolve_adapter()'s
// errors are answered on the exchange, as is a 503 when the pool's queue is full;
// nothing is, when the client left meanwhile.
void with_adapter(ServerContext& ctx, const std::shared_ptr<HttpExchange>& ex, VersionPtr v, const std::string& asked,
                  std::function<void(HeldAdapter)> then);
HttpResponse json_response(int status, const Json& body);

}  // namespace llms
