#include "server/api_translation.h"

#include "server/endpoints.h"

namespace llms {

std::string named_sse_event(const std::string& name, const Json& data) {
  return "event: " + name + "\ndata: " + dump_json(data) + "\n\n";
}

void read_chat_chunk(const Json& chunk, ChatDelta* delta, Json* usage, std::string* finish) {
  if (chunk.contains("usage") && chunk["usage"].is_object()) *usage = chunk["usage"];
  if (!chunk.contains("choices") || chunk["choices"].empty()) return;
  const Json& choice = chunk["choices"][0];
  if (choice.contains("finish_reason") && choice["finish_reason"].is_string()) {
    *finish = choice["finish_reason"].get<std::string>();
  }
  if (!choice.contains("delta") || !choice["delta"].is_object()) return;
  const Json& d = choice["delta"];
  if (d.contains("reasoning_content") && d["reasoning_content"].is_string()) delta->reasoning = d["reasoning_content"].get<std::string>();
  if (d.contains("content") && d["content"].is_string()) delta->content = d["content"].get<std::string>();
  if (d.contains("tool_calls") && d["tool_calls"].is_array()) delta->tool_calls = d["tool_calls"];
}

void TranslatingExchange::respond(HttpResponse response) {
  Json body = Json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded() || response.content_type != "application/json") return inner_->respond(std::move(response));
  response.body = dump_json(response.status == 200 ? translator_->whole(body) : translator_->error(body, response.status));
  inner_->respond(std::move(response));
}

void TranslatingExchange::write(std::string data) {
  // The chat path writes whole `data: ...\n\n` events; a partial one waits for its end.
  pending_ += data;
  std::string out;
  size_t start = 0;
  for (size_t end; (end = pending_.find("\n\n", start)) != std::string::npos; start = end + 2) {
    std::string_view event(pending_.data() + start, end - start);
    if (event.substr(0, 6) != "data: ") continue;
    event.remove_prefix(6);
    if (event == "[DONE]") {
      out += translator_->done();
      continue;
    }
    const Json j = Json::parse(std::string(event), nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) continue;
    out += j.contains("error") ? translator_->stream_error(j) : translator_->chunk(j);
  }
  pending_.erase(0, start);
  if (!out.empty()) inner_->write(std::move(out));
}

void run_translated_chat(ServerContext& ctx, const HttpRequest& req, const std::shared_ptr<HttpExchange>& ex,
                         Json chat_body, std::unique_ptr<AnswerTranslator> translator) {
  HttpRequest chat = req;
  chat.body = dump_json(chat_body);
  // Anthropic's clients send their key as x-api-key: the chat path reads Authorization.
  if (chat.header("authorization").empty() && !chat.header("x-api-key").empty()) {
    chat.headers.emplace_back("authorization", "Bearer " + chat.header("x-api-key"));
  }
  handle_completions(ctx, chat, std::make_shared<TranslatingExchange>(ex, std::move(translator)), ApiKind::kChat);
}

}  // namespace llms
