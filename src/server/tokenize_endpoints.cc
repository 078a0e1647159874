#include <fmt/format.h>

#include "server/endpoints.h"
#include "server/prompt_builder.h"

namespace llms {
namespace {

// The body as a JSON object naming one of this server's models, if it names one; the
// version that model's requests run on.
std::optional<ApiError> parse_body(ServerContext& ctx, const HttpRequest& req, Json* body, VersionPtr* version) {
  if (auto e = parse_json_object(req.body, body)) return e;
  std::string model;
  if (auto e = read_string(*body, "model", &model)) return e;
  if (auto e = check_model(ctx, model)) return e;
  auto picked = ctx.pick(model, req.header(kVersionPinHeader));
  if (!picked.ok()) return api_error_from_status(picked.status());
  *version = std::move(picked).value();
  return std::nullopt;
}

}  // namespace

void handle_tokenize(ServerContext& ctx, const HttpRequest& req, std::shared_ptr<HttpExchange> ex) {
  auto fail = [&](const ApiError& e) { ex->respond(api_error_response(e)); };
  Json body;
  VersionPtr v;
  if (auto e = parse_body(ctx, req, &body, &v)) return fail(*e);
  const Tokenizer& tok = v->tokenizer();
  bool strs = false;
  if (auto e = read_bool(body, "return_token_strs", &strs)) return fail(*e);
  std::vector<int32_t> tokens;
  if (has_field(body, "messages")) {
    bool gen = true;
    if (auto e = read_bool(body, "add_generation_prompt", &gen)) return fail(*e);
    std::vector<ChatMessage> messages;
    if (auto e = parse_messages(body, &messages)) return fail(*e);
    PromptInput p;
    if (auto e = chat_prompt(messages, tok, v->chat_template(), ChatPromptOptions{.add_generation_prompt = gen}, &p)) {
      return fail(*e);
    }
    tokens = std::move(p.tokens);
  } else {
    std::string prompt;
    if (!has_field(body, "prompt")) return fail(bad_request("'prompt' or 'messages' is required", "prompt"));
    if (auto e = read_string(body, "prompt", &prompt)) return fail(*e);
    bool special = true, split = false;
    if (auto e = read_bool(body, "add_special_tokens", &special)) return fail(*e);
    if (auto e = read_bool(body, "split_special_tokens", &split)) return fail(*e);
    EncodeOptions enc;
    enc.add_bos = special && tok.add_bos();
    enc.parse_special = !split;
    tokens = tok.encode(prompt, enc);
  }
  Json out = {{"count", tokens.size()}, {"max_model_len", v->engine().context_length()}, {"tokens", tokens}};
  if (strs) {
    Json s = Json::array();
    for (int32_t t : tokens) s.push_back(tok.token_text(t));
    out["token_strs"] = std::move(s);
  }
  ex->respond(json_response(200, out));
}

void handle_detokenize(ServerContext& ctx, const HttpRequest& req, std::shared_ptr<HttpExchange> ex) {
  auto fail = [&](const ApiError& e) { ex->respond(api_error_response(e)); };
  Json body;
  VersionPtr v;
  if (auto e = parse_body(ctx, req, &body, &v)) return fail(*e);
  const Tokenizer& tok = v->tokenizer();
  if (!has_field(body, "tokens") || !body.at("tokens").is_array()) {
    return fail(bad_request("'tokens' must be a list of token ids", "tokens"));
  }
  std::vector<int32_t> ids;
  for (const Json& t : body.at("tokens")) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= tok.vocab_size()) {
      return fail(bad_request(fmt::format("'tokens' must hold ids in 0..{}", tok.vocab_size() - 1), "tokens"));
    }
    ids.push_back(static_cast<int32_t>(t.get<int64_t>()));
  }
  ex->respond(json_response(200, Json{{"prompt", tok.decode(ids)}}));
}

}  // namespace llms
