// POST /v1/messages and /v1/messages/count_tokens: Anthropic's Messages API over the
// chat path (api_translation.h): system, text / tool_use / tool_result blocks,
// max_tokens, stop_sequences, sampling, tools and tool_choice, streaming events.
#include <fmt/format.h>

#include "server/api_translation.h"
#include "server/endpoints.h"

namespace llms {

std::unique_ptr<AnswerTranslator> messages_translator(ServerContext& ctx, const Json& request);

namespace {

std::optional<ApiError> text_blocks(const Json& content, const char* param, std::string* out) {
  if (content.is_string()) {
    *out = content.get<std::string>();
    return std::nullopt;
  }
  if (!content.is_array()) return bad_request(fmt::format("'{}' must be a string or a list of blocks", param), param);
  for (const Json& b : content) {
    if (!b.is_object() || string_field(b, "type") != "text" || !b.contains("text") || !b["text"].is_string()) {
      return bad_request(fmt::format("'{}' takes text blocks only", param), param);
    }
    *out += b["text"].get<std::string>();
  }
  return std::nullopt;
}

// One Anthropic message → chat messages: a user turn's tool_result blocks become tool
// messages (before its text), an assistant turn's tool_use blocks its tool_calls.
std::optional<ApiError> add_message(const Json& m, Json* out) {
  const std::string role = string_field(m, "role");
  if (role != "user" && role != "assistant") return bad_request("message roles are user or assistant", "messages");
  if (!m.contains("content")) return bad_request("each message needs content", "messages");
  const Json& content = m["content"];
  if (content.is_string()) {
    out->push_back({{"role", role}, {"content", content}});
    return std::nullopt;
  }
  if (!content.is_array()) return bad_request("message content must be a string or a list of blocks", "messages");
  std::string text;
  Json calls = Json::array();
  for (const Json& b : content) {
    const std::string type = string_field(b, "type");
    if (type == "text" && b.contains("text") && b["text"].is_string()) {
      text += b["text"].get<std::string>();
    } else if (type == "tool_use" && role == "assistant") {
      calls.push_back({{"id", string_field(b, "id")},
                       {"type", "function"},
                       {"function", {{"name", string_field(b, "name")}, {"arguments", dump_json(b.value("input", Json::object()))}}}});
    } else if (type == "tool_result" && role == "user") {
      std::string result;
      if (b.contains("content")) LLMS_API_TRY(text_blocks(b["content"], "messages", &result));
      out->push_back({{"role", "tool"}, {"tool_call_id", string_field(b, "tool_use_id")}, {"content", result}});
    } else if (type == "thinking" || type == "redacted_thinking") {
      continue;  // a past answer's reasoning: not part of the prompt
    } else {
      return bad_request(fmt::format("content blocks of type '{}' are not supported in {} messages", type, role),
                         "messages");
    }
  }
  if (!calls.empty()) {
    out->push_back({{"role", "assistant"}, {"content", text.empty() ? Json(nullptr) : Json(text)}, {"tool_calls", calls}});
  } else if (!text.empty() || role == "assistant") {
    out->push_back({{"role", role}, {"content", text}});
  }
  return std::nullopt;
}

std::optional<ApiError> tools_to_chat(const Json& b, Json* chat) {
  if (has_field(b, "tools")) {
    if (!b["tools"].is_array()) return bad_request("'tools' must be a list", "tools");
    Json tools = Json::array();
    for (const Json& t : b["tools"]) {
      if (!t.is_object() || !t.contains("name") || (t.contains("type") && t["type"] != "custom")) {
        return bad_request("tools must be client tools {name, description, input_schema}", "tools");
      }
      Json fn = {{"name", t["name"]}, {"parameters", t.value("input_schema", Json::object())}};
      if (has_field(t, "description")) fn["description"] = t["description"];
      tools.push_back({{"type", "function"}, {"function", std::move(fn)}});
    }
    (*chat)["tools"] = std::move(tools);
  }
  if (!has_field(b, "tool_choice")) return std::nullopt;
  const Json& c = b["tool_choice"];
  const std::string type = string_field(c, "type");
  if (type == "auto" || type == "none") {
    (*chat)["tool_choice"] = type;
  } else if (type == "any") {
    (*chat)["tool_choice"] = "required";
  } else if (type == "tool") {
    (*chat)["tool_choice"] = {{"type", "function"}, {"function", {{"name", string_field(c, "name")}}}};
  } else {
    return bad_request("tool_choice.type must be auto, any, tool or none", "tool_choice");
  }
  if (bool_field(c, "disable_parallel_tool_use")) (*chat)["parallel_tool_calls"] = false;
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> messages_to_chat(const Json& b, bool need_max_tokens, Json* chat) {
  Json messages = Json::array();
  if (has_field(b, "system")) {
    std::string system;
    LLMS_API_TRY(text_blocks(b["system"], "system", &system));
    messages.push_back({{"role", "system"}, {"content", system}});
  }
  if (!has_field(b, "messages") || !b["messages"].is_array() || b["messages"].empty()) {
    return bad_request("'messages' must be a non-empty list", "messages");
  }
  for (const Json& m : b["messages"]) LLMS_API_TRY(add_message(m, &messages));
  Json c = {{"messages", std::move(messages)}};
  if (has_field(b, "model")) c["model"] = b["model"];
  if (need_max_tokens && !has_field(b, "max_tokens")) return bad_request("'max_tokens' is required", "max_tokens");
  for (const char* key : {"max_tokens", "temperature", "top_p", "top_k", "stream"}) {
    if (has_field(b, key)) c[key] = b[key];
  }
  if (has_field(b, "stop_sequences")) c["stop"] = b["stop_sequences"];
  if (bool_field(c, "stream")) c["stream_options"] = {{"include_usage", true}};
  if (has_field(b, "thinking")) {
    const Json& t = b["thinking"];
    const std::string type = string_field(t, "type");
    if (type != "enabled" && type != "disabled") return bad_request("thinking.type must be enabled or disabled", "thinking");
    c["chat_template_kwargs"] = {{"enable_thinking", type == "enabled"}};
  }
  LLMS_API_TRY(tools_to_chat(b, &c));
  *chat = std::move(c);
  return std::nullopt;
}

void handle_messages(ServerContext& ctx, const HttpRequest& req, std::shared_ptr<HttpExchange> ex) {
  Json body, chat;
  auto translated = std::make_shared<TranslatingExchange>(ex, messages_translator(ctx, Json::object()));
  if (auto e = parse_json_object(req.body, &body)) return translated->respond(api_error_response(*e));
  if (auto e = messages_to_chat(body, true, &chat)) return translated->respond(api_error_response(*e));
  run_translated_chat(ctx, req, ex, std::move(chat), messages_translator(ctx, body));
}

void handle_count_tokens(ServerContext& ctx, const HttpRequest& req, std::shared_ptr<HttpExchange> ex) {
  Json body, chat;
  auto translated = std::make_shared<TranslatingExchange>(ex, messages_translator(ctx, Json::object()));
  if (auto e = parse_json_object(req.body, &body)) return translated->respond(api_error_response(*e));
  if (auto e = messages_to_chat(body, false, &chat)) return translated->respond(api_error_response(*e));
  int64_t n = 0;
  if (auto e = chat_prompt_tokens(ctx, req, chat, &n)) return translated->respond(api_error_response(*e));
  ex->respond(json_response(200, Json{{"input_tokens", n}}));
}

}  // namespace llms
