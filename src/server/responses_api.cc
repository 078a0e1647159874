// POST /v1/responses: the text subset of OpenAI's Responses API over the chat path
// (api_translation.h). Nothing is stored: `store` is accepted and ignored, and what
// needs a stored response (previous_response_id, conversation, background) is refused.
#include <fmt/format.h>

#include "base/clock.h"
#include "server/api_translation.h"
#include "server/endpoints.h"

namespace llms {
namespace {

std::string text_of_parts(const Json& content, const char* param, std::optional<ApiError>* error) {
  if (content.is_string()) return content.get<std::string>();
  std::string text;
  if (!content.is_array()) {
    *error = bad_request(fmt::format("'{}' content must be a string or a list of text parts", param), param);
    return text;
  }
  for (const Json& part : content) {
    const std::string type = string_field(part, "type");
    if ((type != "input_text" && type != "output_text" && type != "text") || !part.contains("text") ||
        !part["text"].is_string()) {
      *error = bad_request(fmt::format("only text content parts are supported (input_text, output_text), not '{}'", type),
                           param);
      return text;
    }
    text += part["text"].get<std::string>();
  }
  return text;
}

// One item of `input` appended to the chat messages.
std::optional<ApiError> add_input_item(const Json& item, Json* messages) {
  if (!item.is_object()) return bad_request("'input' items must be objects", "input");
  const std::string type = string_field(item, "type", item.contains("role") ? "message" : "");
  std::optional<ApiError> error;
  if (type == "message") {
    const std::string role = string_field(item, "role");
    if (role != "user" && role != "system" && role != "developer" && role != "assistant") {
      return bad_request(fmt::format("unknown input message role '{}'", role), "input");
    }
    std::string text = text_of_parts(item.value("content", Json("")), "input", &error);
    if (error) return error;
    messages->push_back({{"role", role}, {"content", std::move(text)}});
    return std::nullopt;
  }
  if (type == "function_call") {
    if (!item.contains("call_id") || !item.contains("name") || !item["name"].is_string()) {
      return bad_request("a function_call item needs call_id, name and arguments", "input");
    }
    const Json call = {{"id", item["call_id"]},
                       {"type", "function"},
                       {"function", {{"name", item["name"]}, {"arguments", string_field(item, "arguments", "{}")}}}};
    if (!messages->empty() && messages->back()["role"] == "assistant" && messages->back().contains("tool_calls")) {
      messages->back()["tool_calls"].push_back(call);  // parallel calls: one assistant turn
    } else {
      messages->push_back({{"role", "assistant"}, {"content", nullptr}, {"tool_calls", Json::array({call})}});
    }
    return std::nullopt;
  }
  if (type == "function_call_output") {
    if (!item.contains("call_id")) return bad_request("a function_call_output item needs call_id", "input");
    std::string output = text_of_parts(item.value("output", Json("")), "input", &error);
    if (error) return error;
    messages->push_back({{"role", "tool"}, {"tool_call_id", item["call_id"]}, {"content", std::move(output)}});
    return std::nullopt;
  }
  if (type == "reasoning") return std::nullopt;  // a past answer's reasoning: not part of the prompt
  return bad_request(fmt::format("input items of type '{}' are not supported", type), "input");
}

std::optional<ApiError> tools_to_chat(const Json& b, Json* chat) {
  if (has_field(b, "tools")) {
    if (!b["tools"].is_array()) return bad_request("'tools' must be a list", "tools");
    Json tools = Json::array();
    for (const Json& t : b["tools"]) {
      if (!t.is_object() || string_field(t, "type") != "function") {
        return bad_request("only function tools are supported", "tools");
      }
      Json fn = {{"name", string_field(t, "name")}};
      for (const char* key : {"description", "parameters", "strict"}) {
        if (has_field(t, key)) fn[key] = t[key];
      }
      tools.push_back({{"type", "function"}, {"function", std::move(fn)}});
    }
    (*chat)["tools"] = std::move(tools);
  }
  if (has_field(b, "tool_choice")) {
    const Json& c = b["tool_choice"];
    if (c.is_string()) {
      (*chat)["tool_choice"] = c;
    } else if (c.is_object() && string_field(c, "type") == "function") {
      (*chat)["tool_choice"] = {{"type", "function"}, {"function", {{"name", string_field(c, "name")}}}};
    } else {
      return bad_request("tool_choice must be auto, none, required or {\"type\": \"function\", \"name\": ...}",
                         "tool_choice");
    }
  }
  if (has_field(b, "parallel_tool_calls")) (*chat)["parallel_tool_calls"] = b["parallel_tool_calls"];
  return std::nullopt;
}

std::optional<ApiError> format_to_chat(const Json& b, Json* chat) {
  if (!has_field(b, "text")) return std::nullopt;
  if (!b["text"].is_object()) return bad_request("'text' must be an object", "text");
  if (!has_field(b["text"], "format")) return std::nullopt;
  const Json& f = b["text"]["format"];
  const std::string type = string_field(f, "type");
  if (type == "text") return std::nullopt;
  if (type == "json_object") {
    (*chat)["response_format"] = {{"type", "json_object"}};
  } else if (type == "json_schema") {
    Json js = {{"name", string_field(f, "name", "response")}, {"schema", f.value("schema", Json::object())}};
    if (has_field(f, "strict")) js["strict"] = f["strict"];
    (*chat)["response_format"] = {{"type", "json_schema"}, {"json_schema", std::move(js)}};
  } else {
    return bad_request("text.format.type must be text, json_object or json_schema", "text.format");
  }
  return std::nullopt;
}

// Fields that need server state or features not served here: refused unless null,
// false or their default (docs/api.md, "Responses API").
std::optional<ApiError> refuse_unsupported(const Json& b) {
  for (const char* key : {"previous_response_id", "conversation", "prompt", "max_tool_calls"}) {
    if (has_field(b, key)) return bad_request(fmt::format("'{}' is not supported (no server-side state)", key), key);
  }
  if (has_field(b, "background") && b["background"] != false) {
    return bad_request("background responses are not supported", "background");
  }
  if (has_field(b, "truncation") && b["truncation"] != "disabled") {
    return bad_request("only truncation \"disabled\" is supported", "truncation");
  }
  if (has_field(b, "top_logprobs") && b["top_logprobs"] != 0) {
    return bad_request("top_logprobs is not supported on /v1/responses", "top_logprobs");
  }
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> responses_to_chat(const Json& b, Json* chat) {
  LLMS_API_TRY(refuse_unsupported(b));
  Json messages = Json::array();
  if (has_field(b, "instructions")) {
    if (!b["instructions"].is_string()) return bad_request("'instructions' must be a string", "instructions");
    messages.push_back({{"role", "system"}, {"content", b["instructions"]}});
  }
  if (!has_field(b, "input")) return bad_request("'input' is required", "input");
  const Json& input = b["input"];
  if (input.is_string()) {
    messages.push_back({{"role", "user"}, {"content", input}});
  } else if (input.is_array()) {
    for (const Json& item : input) LLMS_API_TRY(add_input_item(item, &messages));
  } else {
    return bad_request("'input' must be a string or a list of items", "input");
  }
  Json c = {{"messages", std::move(messages)}};
  if (has_field(b, "model")) c["model"] = b["model"];
  if (has_field(b, "max_output_tokens")) c["max_tokens"] = b["max_output_tokens"];
  for (const char* key : {"temperature", "top_p", "seed", "stream"}) {
    if (has_field(b, key)) c[key] = b[key];
  }
  if (bool_field(c, "stream")) c["stream_options"] = {{"include_usage", true}};
  LLMS_API_TRY(tools_to_chat(b, &c));
  LLMS_API_TRY(format_to_chat(b, &c));
  *chat = std::move(c);
  return std::nullopt;
}

std::unique_ptr<AnswerTranslator> responses_translator(ServerContext& ctx, const Json& request);

void handle_responses(ServerContext& ctx, const HttpRequest& req, std::shared_ptr<HttpExchange> ex) {
  Json body, chat;
  if (auto e = parse_json_object(req.body, &body)) return ex->respond(api_error_response(*e));
  if (auto e = responses_to_chat(body, &chat)) return ex->respond(api_error_response(*e));
  run_translated_chat(ctx, req, ex, std::move(chat), responses_translator(ctx, body));
}

}  // namespace llms
