// The Jinja side of chat templates (chat_template.h): the variables a template sees
// and the probe for tool support.
#include <fmt/format.h>

#include <list>
#include <mutex>

#include "chat/chat_template.h"
#include "chat/jinja_template.h"

namespace llms {

using jinja::Value;

namespace {

Value message_value(const ChatMessage& m) {
  Value d = Value::dict();
  jinja::Dict& out = d.dict_ref();
  out.set(Value("role"), Value(m.role));
  out.set(Value("content"), m.content_null ? Value::none() : Value(m.content));
  if (!m.tool_calls.empty()) {
    jinja::ValueList calls;
    for (const ChatToolCall& c : m.tool_calls) {
      // Templates index into the arguments (or dump them with tojson): an object, as
      // transformers expects; text that is not JSON stays text.
      auto args = nlohmann::ordered_json::parse(c.arguments, nullptr, false);
      Value fn = Value::dict();
      fn.dict_ref().set(Value("name"), Value(c.name));
      fn.dict_ref().set(Value("arguments"), args.is_discarded() ? Value(c.arguments) : Value::from_json(args));
      Value call = Value::dict();
      call.dict_ref().set(Value("id"), Value(c.id));
      call.dict_ref().set(Value("type"), Value("function"));
      call.dict_ref().set(Value("function"), fn);
      calls.push_back(call);
    }
    out.set(Value("tool_calls"), Value::list(std::move(calls)));
  }
  if (!m.tool_call_id.empty()) out.set(Value("tool_call_id"), Value(m.tool_call_id));
  if (!m.name.empty()) out.set(Value("name"), Value(m.name));
  return d;
}

constexpr const char* kProbeTool = "llmserve_probe_tool_7f3a";

}  // namespace

Value chat_template_context(const std::vector<ChatMessage>& msgs, bool add_generation_prompt,
                            const ChatTemplateTokens& tokens, const nlohmann::ordered_json& tools,
                            const nlohmann::ordered_json& kwargs) {
  jinja::ValueList messages;
  for (const ChatMessage& m : msgs) messages.push_back(message_value(m));
  Value ctx = Value::dict();
  jinja::Dict& d = ctx.dict_ref();
  d.set(Value("messages"), Value::list(std::move(messages)));
  d.set(Value("tools"), tools.is_null() ? Value::none() : Value::from_json(tools));
  d.set(Value("add_generation_prompt"), Value(add_generation_prompt));
  d.set(Value("bos_token"), Value(tokens.bos));
  d.set(Value("eos_token"), Value(tokens.eos));
  if (kwargs.is_object()) {
    for (const auto& [key, value] : kwargs.items()) {
      if (d.find(std::string_view(key)) == nullptr) d.set(Value(key), Value::from_json(value));
    }
  }
  return ctx;
}

Result<JinjaTemplate> parse_chat_template_cached(const std::string& source) {
  static std::mutex mu;
  static std::list<std::pair<std::string, Result<JinjaTemplate>>> recent;  // most recent first
  constexpr size_t kKept = 8;
  {
    std::lock_guard<std::mutex> lock(mu);
    for (auto it = recent.begin(); it != recent.end(); ++it) {
      if (it->first != source) continue;
      recent.splice(recent.begin(), recent, it);
      return recent.front().second;
    }
  }
  Result<JinjaTemplate> parsed = JinjaTemplate::parse(source);  // outside the lock: parsing takes a while
  std::lock_guard<std::mutex> lock(mu);
  recent.emplace_front(source, parsed);
  if (recent.size() > kKept) recent.pop_back();
  return parsed;
}

bool chat_template_renders_tools(const std::string& source) {
  if (is_family_name(source)) return false;
  auto parsed = parse_chat_template_cached(source);
  if (!parsed.ok()) return false;
  const nlohmann::ordered_json tools = nlohmann::ordered_json::array(
      {{{"type", "function"},
        {"function", {{"name", kProbeTool}, {"description", "probe"}, {"parameters", {{"type", "object"}}}}}}});
  const std::vector<ChatMessage> msgs = {{"user", "hi"}};
  auto out = parsed->render(chat_template_context(msgs, true, {}, tools));
  return out.ok() && out->find(kProbeTool) != std::string::npos;
}

}  // namespace llms
