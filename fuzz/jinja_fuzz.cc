// libFuzzer target for the Jinja interpreter: the input is a template source (seeded
// with the published chat templates of tests/data/chat_templates and a dictionary of
// Jinja syntax), rendered over a conversation with tools, tool calls and results.
// Properties, beyond "no crash, no sanitizer report, no hang past libFuzzer's
// timeout" (the interpreter bounds loops, output and call depth):
//   * parsing and rendering end in a value or a Status, never an escaped exception;
//   * rendering is deterministic: the same template and context render alike twice.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "chat/chat_template.h"
#include "chat/jinja_template.h"

namespace {

const llms::jinja::Value& context() {
  static const llms::jinja::Value ctx = [] {
    std::vector<llms::ChatMessage> msgs = {{"system", "Be brief."}, {"user", "Weather in Paris?"}};
    llms::ChatMessage call;
    call.role = "assistant";
    call.content_null = true;
    call.tool_calls.push_back({"abcDEF123", "get_weather", "{\"city\": \"Paris\"}"});
    msgs.push_back(call);
    llms::ChatMessage result{"tool", "{\"temp\": 21}"};
    result.tool_call_id = "abcDEF123";
    msgs.push_back(result);
    msgs.push_back({"user", "Thanks \u00e9 {{ x }}"});
    const auto tools = nlohmann::ordered_json::parse(
        R"([{"type":"function","function":{"name":"get_weather","description":"d",)"
        R"("parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}])");
    return llms::chat_template_context(msgs, true, {"<s>", "</s>"}, tools);
  }();
  return ctx;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string source(reinterpret_cast<const char*>(data), size);
  auto parsed = llms::JinjaTemplate::parse(source);
  if (!parsed.ok()) return 0;
  auto first = parsed->render(context());
  auto second = parsed->render(context());
  if (first.ok() != second.ok() || (first.ok() && *first != *second)) {
    llms::fuzz::fail("rendering the same template twice gave different results");
  }
  return 0;
}
