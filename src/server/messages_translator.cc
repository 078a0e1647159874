// The Messages API's answer from the chat path's: the message object, its stream of
// events (message_start, content_block_start / _delta / _stop, message_delta,
// message_stop) and Anthropic's error shape.
#include <fmt/format.h>

#include <map>

#include "server/api_translation.h"

namespace llms {
namespace {

const char* stop_reason(const std::string& finish) {
  if (finish == "length") return "max_tokens";
  if (finish == "tool_calls") return "tool_use";
  return "end_turn";
}

// Anthropic's error type for an HTTP status.
const char* error_type(int status) {
  switch (status) {
    case 400: return "invalid_request_error";
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 413: return "request_too_large";
    case 429: return "rate_limit_error";
    case 503: return "overloaded_error";
    default: return status >= 500 ? "api_error" : "invalid_request_error";
  }
}

Json tool_input(const std::string& arguments) {
  Json input = Json::parse(arguments, nullptr, /*allow_exceptions=*/false);
  return input.is_object() ? input : Json::object();  // a call cut short has no whole object
}

class MessagesTranslator : public AnswerTranslator {
 public:
  MessagesTranslator(ServerContext& ctx, const Json& request) {
    id_ = ctx.next_id("msg_");
    model_ = request.value("model", ctx.model_name);
  }

  Json whole(const Json& chat) override {
    const Json& choice = chat["choices"][0];
    const Json& msg = choice["message"];
    Json content = Json::array();
    if (msg.contains("reasoning_content") && msg["reasoning_content"].is_string()) {
      content.push_back({{"type", "thinking"}, {"thinking", msg["reasoning_content"]}, {"signature", ""}});
    }
    if (msg["content"].is_string() && !msg["content"].get<std::string>().empty()) {
      content.push_back({{"type", "text"}, {"text", msg["content"]}});
    }
    if (msg.contains("tool_calls")) {
      for (const Json& tc : msg["tool_calls"]) {
        content.push_back({{"type", "tool_use"},
                           {"id", tc["id"]},
                           {"name", tc["function"]["name"]},
                           {"input", tool_input(tc["function"]["arguments"].get<std::string>())}});
      }
    }
    Json m = message(content);
    m["stop_reason"] = stop_reason(choice.value("finish_reason", "stop"));
    m["usage"] = usage(chat.value("usage", Json::object()));
    return m;
  }

  Json error(const Json& e, int status) override {
    const Json& err = e.contains("error") ? e["error"] : e;
    const Json message = err.contains("message") ? err["message"] : Json("");
    return {{"type", "error"}, {"error", {{"type", error_type(status)}, {"message", message}}}};
  }

  std::string chunk(const Json& c) override {
    std::string out = start();
    ChatDelta d;
    read_chat_chunk(c, &d, &usage_, &finish_);
    if (!d.reasoning.empty()) out += block_delta("thinking", {{"type", "thinking_delta"}, {"thinking", d.reasoning}});
    if (!d.content.empty()) out += block_delta("text", {{"type", "text_delta"}, {"text", d.content}});
    for (const Json& tc : d.tool_calls) out += call_delta(tc);
    return out;
  }

  std::string done() override {
    std::string out = start() + close_block();
    Json u = usage(usage_);
    out += named_sse_event("message_delta", {{"type", "message_delta"},
                                             {"delta", {{"stop_reason", stop_reason(finish_)}, {"stop_sequence", nullptr}}},
                                             {"usage", u}});
    return out + named_sse_event("message_stop", {{"type", "message_stop"}});
  }

  std::string stream_error(const Json& e) override {
    // The chat path's stream errors: a refusal after queueing (503-like) or a failure.
    const Json& err = e["error"];
    const bool invalid = err.contains("type") && err["type"] == "invalid_request_error";
    return start() + named_sse_event("error", error(e, invalid ? 400 : 503));
  }

 private:
  Json message(Json content) const {
    return {{"id", id_},         {"type", "message"},         {"role", "assistant"},
            {"model", model_},   {"content", std::move(content)}, {"stop_reason", nullptr},
            {"stop_sequence", nullptr}, {"usage", {{"input_tokens", 0}, {"output_tokens", 0}}}};
  }
  static Json usage(const Json& u) {
    Json out = {{"input_tokens", u.value("prompt_tokens", int64_t{0})},
                {"output_tokens", u.value("completion_tokens", int64_t{0})}};
    if (u.contains("prompt_tokens_details") && u["prompt_tokens_details"].is_object()) {
      out["cache_read_input_tokens"] = u["prompt_tokens_details"].value("cached_tokens", int64_t{0});
    }
    return out;
  }

  std::string start() {
    if (started_) return "";
    started_ = true;
    return named_sse_event("message_start", {{"type", "message_start"}, {"message", message(Json::array())}});
  }

  // Opens a block of `kind` unless the open one is of that kind; then the delta.
  std::string block_delta(const std::string& kind, Json delta) {
    std::string out;
    if (open_kind_ != kind) {
      out += close_block();
      Json block = kind == "thinking" ? Json{{"type", "thinking"}, {"thinking", ""}, {"signature", ""}}
                                      : Json{{"type", "text"}, {"text", ""}};
      out += open_block(kind, std::move(block));
    }
    return out + named_sse_event("content_block_delta",
                                 {{"type", "content_block_delta"}, {"index", index_}, {"delta", std::move(delta)}});
  }

  std::string open_block(const std::string& kind, Json block) {
    ++index_;
    open_kind_ = kind;
    return named_sse_event("content_block_start",
                           {{"type", "content_block_start"}, {"index", index_}, {"content_block", std::move(block)}});
  }

  std::string close_block() {
    if (open_kind_.empty()) return "";
    open_kind_.clear();
    return named_sse_event("content_block_stop", {{"type", "content_block_stop"}, {"index", index_}});
  }

  std::string call_delta(const Json& tc) {
    const int64_t call = tc.value("index", int64_t{0});
    std::string out;
    if (call != open_call_ || open_kind_ != "tool_use") {
      out += close_block();
      open_call_ = call;
      const std::string name = tc.contains("function") ? tc["function"].value("name", "") : "";
      out += open_block("tool_use", {{"type", "tool_use"},
                                     {"id", tc.value("id", fmt::format("call_{}", call))},
                                     {"name", name},
                                     {"input", Json::object()}});
    }
    if (tc.contains("function") && tc["function"].contains("arguments") && tc["function"]["arguments"].is_string() &&
        !tc["function"]["arguments"].get<std::string>().empty()) {
      out += named_sse_event("content_block_delta",
                             {{"type", "content_block_delta"},
                              {"index", index_},
                              {"delta", {{"type", "input_json_delta"}, {"partial_json", tc["function"]["arguments"]}}}});
    }
    return out;
  }

  std::string id_, model_;
  bool started_ = false;
  int64_t index_ = -1;      // the current content block
  std::string open_kind_;   // "text", "thinking", "tool_use" or "" (none open)
  int64_t open_call_ = -1;  // the chat call index of the open tool_use block
  std::string finish_ = "stop";
  Json usage_ = Json::object();
};

}  // namespace

std::unique_ptr<AnswerTranslator> messages_translator(ServerContext& ctx, const Json& request) {
  return std::make_unique<MessagesTranslator>(ctx, request);
}

}  // namespace llms
