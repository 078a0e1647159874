// The Responses API's answer from the chat path's: the response object, and its
// stream of events (response.created, response.output_item.added, ...,
// response.completed), each with a sequence_number.
#include <fmt/format.h>

#include <map>

#include "base/clock.h"
#include "server/api_translation.h"

namespace llms {
namespace {

Json responses_usage(const Json& u) {
  if (!u.is_object()) return nullptr;
  const int64_t in = u.value("prompt_tokens", int64_t{0}), out = u.value("completion_tokens", int64_t{0});
  int64_t cached = 0;
  if (u.contains("prompt_tokens_details") && u["prompt_tokens_details"].is_object()) {
    cached = u["prompt_tokens_details"].value("cached_tokens", int64_t{0});
  }
  return {{"input_tokens", in},
          {"input_tokens_details", {{"cached_tokens", cached}}},
          {"output_tokens", out},
          {"output_tokens_details", {{"reasoning_tokens", 0}}},
          {"total_tokens", in + out}};
}

Json output_text(const std::string& text) {
  return {{"type", "output_text"}, {"text", text}, {"annotations", Json::array()}, {"logprobs", Json::array()}};
}

class ResponsesTranslator : public AnswerTranslator {
 public:
  ResponsesTranslator(ServerContext& ctx, const Json& request) : request_(request) {
    id_ = ctx.next_id("resp_");
    msg_id_ = ctx.next_id("msg_");
    model_ = request.value("model", ctx.model_name);
    created_ = unix_seconds();
  }

  Json whole(const Json& chat) override {
    const Json& choice = chat["choices"][0];
    const Json& msg = choice["message"];
    if (msg.contains("reasoning_content") && msg["reasoning_content"].is_string()) {
      output_.push_back(reasoning_item(msg["reasoning_content"].get<std::string>()));
    }
    if (msg["content"].is_string() && !msg["content"].get<std::string>().empty()) {
      output_.push_back(message_item(msg["content"].get<std::string>(), "completed"));
    }
    if (msg.contains("tool_calls")) {
      for (const Json& tc : msg["tool_calls"]) {
        output_.push_back(call_item(tc["id"], tc["function"]["name"], tc["function"]["arguments"], "completed"));
      }
    }
    finish_ = choice["finish_reason"].is_string() ? choice["finish_reason"].get<std::string>() : "stop";
    usage_ = chat.value("usage", Json(nullptr));
    return response(final_status());
  }

  Json error(const Json& e, int /*status*/) override { return e; }

  std::string chunk(const Json& c) override {
    std::string out = start();
    ChatDelta d;
    read_chat_chunk(c, &d, &usage_, &finish_);
    if (!d.reasoning.empty()) out += reasoning_delta(d.reasoning);
    if (!d.content.empty()) {
      out += close_reasoning();  // (each event takes the next sequence number: one call at a time)
      out += text_delta(d.content);
    }
    for (const Json& tc : d.tool_calls) out += call_delta(tc);
    return out;
  }

  std::string done() override {
    std::string out = start();
    out += close_reasoning();
    out += close_message();
    for (auto& [index, call] : calls_) out += close_call(call);
    const std::string status = final_status();
    out += event(status == "completed" ? "response.completed" : "response.incomplete", {{"response", response(status)}});
    return out;
  }

  std::string stream_error(const Json& e) override {
    const Json& err = e["error"];
    std::string out = start();
    out += event("error", {{"code", err.value("code", Json(nullptr))},
                           {"message", err.value("message", "")},
                           {"param", err.value("param", Json(nullptr))}});
    Json r = response("failed");
    r["error"] = {{"code", err.value("type", "server_error")}, {"message", err.value("message", "")}};
    return out + event("response.failed", {{"response", std::move(r)}});
  }

 private:
  struct Call {
    size_t output_index = 0;
    std::string item_id, call_id, name, arguments;
  };

  std::string event(const char* type, Json data) {
    Json e = {{"type", type}, {"sequence_number", sequence_++}};
    for (auto& [k, v] : data.items()) e[k] = v;
    return named_sse_event(type, e);
  }

  std::string final_status() const { return finish_ == "length" ? "incomplete" : "completed"; }

  Json message_item(const std::string& text, const char* status) const {
    Json content = status == std::string("in_progress") ? Json::array() : Json::array({output_text(text)});
    return {{"type", "message"}, {"id", msg_id_}, {"status", status}, {"role", "assistant"}, {"content", content}};
  }
  Json reasoning_item(const std::string& text) const {
    return {{"type", "reasoning"},
            {"id", "rs_" + id_.substr(5)},
            {"summary", Json::array()},
            {"content", Json::array({{{"type", "reasoning_text"}, {"text", text}}})}};
  }
  Json call_item(const Json& call_id, const Json& name, const Json& arguments, const char* status) const {
    const std::string cid = call_id.is_string() ? call_id.get<std::string>() : "";
    return {{"type", "function_call"}, {"id", "fc_" + cid}, {"call_id", cid}, {"name", name},
            {"arguments", arguments},  {"status", status}};
  }

  Json response(const std::string& status) const {
    Json r = {{"id", id_},
              {"object", "response"},
              {"created_at", created_},
              {"status", status},
              {"error", nullptr},
              {"incomplete_details", status == "incomplete" ? Json{{"reason", "max_output_tokens"}} : Json(nullptr)},
              {"instructions", request_.value("instructions", Json(nullptr))},
              {"max_output_tokens", request_.value("max_output_tokens", Json(nullptr))},
              {"model", model_},
              {"output", status == "in_progress" ? Json::array() : output_},
              {"parallel_tool_calls", request_.value("parallel_tool_calls", true)},
              {"previous_response_id", nullptr},
              {"store", false},
              {"temperature", request_.value("temperature", Json(1.0))},
              {"text", request_.value("text", Json{{"format", {{"type", "text"}}}})},
              {"tool_choice", request_.value("tool_choice", Json("auto"))},
              {"tools", request_.value("tools", Json::array())},
              {"top_p", request_.value("top_p", Json(1.0))},
              {"truncation", "disabled"},
              {"usage", status == "in_progress" ? Json(nullptr) : responses_usage(usage_)},
              {"metadata", request_.value("metadata", Json::object())}};
    return r;
  }

  std::string start() {
    if (started_) return "";
    started_ = true;
    std::string out = event("response.created", {{"response", response("in_progress")}});
    return out + event("response.in_progress", {{"response", response("in_progress")}});
  }

  std::string text_delta(const std::string& delta) {
    std::string out;
    if (message_index_ < 0) {
      message_index_ = static_cast<int64_t>(output_.size());
      output_.push_back(message_item("", "in_progress"));
      out += event("response.output_item.added", {{"output_index", message_index_}, {"item", output_.back()}});
      out += event("response.content_part.added", {{"item_id", msg_id_},
                                                   {"output_index", message_index_},
                                                   {"content_index", 0},
                                                   {"part", output_text("")}});
    }
    text_ += delta;
    return out + event("response.output_text.delta", {{"item_id", msg_id_},
                                                      {"output_index", message_index_},
                                                      {"content_index", 0},
                                                      {"delta", delta},
                                                      {"logprobs", Json::array()}});
  }

  std::string reasoning_delta(const std::string& delta) {
    std::string out;
    if (reasoning_index_ < 0) {
      reasoning_index_ = static_cast<int64_t>(output_.size());
      output_.push_back(reasoning_item(""));
      Json opened = output_.back();
      opened["content"] = Json::array();
      out += event("response.output_item.added", {{"output_index", reasoning_index_}, {"item", opened}});
      out += event("response.content_part.added", {{"item_id", opened["id"]},
                                                   {"output_index", reasoning_index_},
                                                   {"content_index", 0},
                                                   {"part", {{"type", "reasoning_text"}, {"text", ""}}}});
    }
    reasoning_ += delta;
    return out + event("response.reasoning_text.delta", {{"item_id", output_.back()["id"]},
                                                         {"output_index", reasoning_index_},
                                                         {"content_index", 0},
                                                         {"delta", delta}});
  }

  std::string close_reasoning() {
    if (reasoning_index_ < 0 || reasoning_closed_) return "";
    reasoning_closed_ = true;
    Json& item = output_[static_cast<size_t>(reasoning_index_)];
    item = reasoning_item(reasoning_);
    const Json where = {{"item_id", item["id"]}, {"output_index", reasoning_index_}, {"content_index", 0}};
    Json text_done = where, part_done = where;
    text_done["text"] = reasoning_;
    part_done["part"] = item["content"][0];
    std::string out = event("response.reasoning_text.done", text_done);
    out += event("response.content_part.done", part_done);
    return out + event("response.output_item.done", {{"output_index", reasoning_index_}, {"item", item}});
  }

  std::string close_message() {
    if (message_index_ < 0 || message_closed_) return "";
    message_closed_ = true;
    const Json where = {{"item_id", msg_id_}, {"output_index", message_index_}, {"content_index", 0}};
    Json text_done = where, part_done = where;
    text_done["text"] = text_;
    text_done["logprobs"] = Json::array();
    part_done["part"] = output_text(text_);
    output_[static_cast<size_t>(message_index_)] = message_item(text_, "completed");
    std::string out = event("response.output_text.done", text_done);
    out += event("response.content_part.done", part_done);
    return out +
           event("response.output_item.done",
                 {{"output_index", message_index_}, {"item", output_[static_cast<size_t>(message_index_)]}});
  }

  std::string call_delta(const Json& tc) {
    const int64_t index = tc.value("index", int64_t{0});
    std::string out;
    auto it = calls_.find(index);
    if (it == calls_.end()) {
      out += close_reasoning();  // the text before the calls is done
      out += close_message();
      Call c;
      c.output_index = output_.size();
      c.call_id = tc.value("id", fmt::format("call_{}", index));
      c.item_id = "fc_" + c.call_id;
      c.name = tc.contains("function") ? tc["function"].value("name", "") : "";
      output_.push_back(call_item(c.call_id, c.name, "", "in_progress"));
      out += event("response.output_item.added", {{"output_index", c.output_index}, {"item", output_.back()}});
      it = calls_.emplace(index, std::move(c)).first;
    }
    Call& c = it->second;
    if (tc.contains("function") && tc["function"].contains("arguments") && tc["function"]["arguments"].is_string()) {
      const std::string piece = tc["function"]["arguments"].get<std::string>();
      if (!piece.empty()) {
        c.arguments += piece;
        out += event("response.function_call_arguments.delta",
                     {{"item_id", c.item_id}, {"output_index", c.output_index}, {"delta", piece}});
      }
    }
    return out;
  }

  std::string close_call(const Call& c) {
    output_[c.output_index] = call_item(c.call_id, c.name, c.arguments, "completed");
    std::string out = event("response.function_call_arguments.done", {{"item_id", c.item_id},
                                                                      {"output_index", c.output_index},
                                                                      {"name", c.name},
                                                                      {"arguments", c.arguments}});
    return out + event("response.output_item.done", {{"output_index", c.output_index}, {"item", output_[c.output_index]}});
  }

  const Json request_;
  std::string id_, msg_id_, model_;
  int64_t created_ = 0;
  int64_t sequence_ = 0;
  bool started_ = false;
  Json output_ = Json::array();
  int64_t message_index_ = -1;
  int64_t reasoning_index_ = -1;
  bool reasoning_closed_ = false;
  std::string reasoning_;
  bool message_closed_ = false;
  std::string text_;
  std::map<int64_t, Call> calls_;
  std::string finish_ = "stop";
  Json usage_ = nullptr;
};

}  // namespace

std::unique_ptr<AnswerTranslator> responses_translator(ServerContext& ctx, const Json& request) {
  return std::make_unique<ResponsesTranslator>(ctx, request);
}

}  // namespace llms
