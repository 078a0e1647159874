// Tool calling end to end on stories260K, a model that knows nothing of tools: the
// grammar writes the calls, the server parses them back. Arguments are checked
// against each function's parameters with the tests' own validator
// (json_schema_check.h), not with the grammar module.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "json_schema_check.h"
#include "server_openai_schema.h"
#include "server_test_util.h"
#include "io/gguf_file.h"
#include "chat/chat_template.h"

namespace llms::test {
namespace {

using SchemaJson = nlohmann::ordered_json;

const SchemaJson kWeatherParams = SchemaJson::parse(R"({
  "type": "object",
  "properties": {
    "city": {"type": "string", "minLength": 1, "maxLength": 10},
    "days": {"type": "integer", "minimum": 1, "maximum": 7},
    "unit": {"enum": ["celsius", "fahrenheit"]}
  },
  "required": ["city", "days"],
  "additionalProperties": false})");

const SchemaJson kTimeParams = SchemaJson::parse(R"({
  "type": "object",
  "properties": {"zone": {"type": "string", "pattern": "^[A-Z]{3}$"}, "at": {"type": "string", "format": "time"}},
  "required": ["zone"],
  "additionalProperties": false})");

Json tools() {
  return Json::array({{{"type", "function"},
                       {"function", {{"name", "get_weather"}, {"description", "Weather forecast"},
                                     {"parameters", Json::parse(kWeatherParams.dump())}}}},
                      {{"type", "function"},
                       {"function", {{"name", "get_time"}, {"parameters", Json::parse(kTimeParams.dump())}}}}});
}

const SchemaJson& params_of(const std::string& name) { return name == "get_weather" ? kWeatherParams : kTimeParams; }

class ToolsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (have_stories()) server_ = start_server(stories_path()).release();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    if (!have_stories()) GTEST_SKIP() << "needs " << shared_dir() << "/models/stories260K.gguf";
  }
  int port() const { return server_->port(); }

  static Json body(Json extra) {
    Json b = {{"messages", {{{"role", "user"}, {"content", "What is the weather in Paris?"}}}},
              {"tools", tools()}, {"temperature", 1.0}, {"max_tokens", 300}};
    for (auto& [k, v] : extra.items()) b[k] = v;
    return b;
  }
  Json chat(const Json& b) {
    const HttpResult r = http_post(port(), "/v1/chat/completions", b);
    EXPECT_EQ(r.status, 200) << r.body;
    const Json j = r.json();
    EXPECT_TRUE(check_chat_completion(j).empty()) << r.body;
    return j;
  }
  static LlmServer* server_;
};
LlmServer* ToolsTest::server_ = nullptr;

// One call of message.tool_calls: its shape, a known function, arguments that parse
// and hold under the function's parameters.
void expect_valid_call(const Json& call) {
  ASSERT_TRUE(call.contains("id") && call["id"].is_string() && !call["id"].get<std::string>().empty()) << call;
  EXPECT_EQ(call["type"], "function") << call;
  const std::string name = call["function"]["name"];
  ASSERT_TRUE(name == "get_weather" || name == "get_time") << call;
  ASSERT_TRUE(call["function"]["arguments"].is_string()) << call;
  const Json args = Json::parse(call["function"]["arguments"].get<std::string>(), nullptr, false);
  ASSERT_FALSE(args.is_discarded()) << call;
  EXPECT_EQ(schema_violation(params_of(name), args), "") << call;
}

TEST_F(ToolsTest, RequiredGivesOneCallWithValidArguments) {
  std::set<std::string> ids;
  for (int seed = 1; seed <= 8; ++seed) {
    const Json j = chat(body({{"tool_choice", "required"}, {"parallel_tool_calls", false}, {"seed", seed}}));
    const Json& choice = j["choices"][0];
    EXPECT_EQ(choice["finish_reason"], "tool_calls") << j;
    EXPECT_TRUE(choice["message"]["content"].is_null()) << j;
    ASSERT_EQ(choice["message"]["tool_calls"].size(), 1u) << j;
    expect_valid_call(choice["message"]["tool_calls"][0]);
    ids.insert(choice["message"]["tool_calls"][0]["id"].get<std::string>());
  }
  EXPECT_EQ(ids.size(), 8u);  // ids are unique
}

TEST_F(ToolsTest, ParallelCallsAreEachValid) {
  for (int seed = 1; seed <= 4; ++seed) {
    const Json j = chat(body({{"tool_choice", "required"}, {"seed", seed}, {"max_tokens", 160}}));
    const Json& choice = j["choices"][0];
    const Json& calls = choice["message"]["tool_calls"];
    ASSERT_GE(calls.size(), 1u) << j;
    // The model rarely stops between calls: an answer cut by max_tokens keeps its
    // complete calls and ends with the cut one, its arguments as far as written
    // (docs/api.md), which need not parse yet.
    const bool cut = choice["finish_reason"] == "length";
    EXPECT_TRUE(cut || choice["finish_reason"] == "tool_calls") << j;
    for (size_t i = 0; i < calls.size(); ++i) {
      if (cut && i + 1 == calls.size()) {
        const std::string name = calls[i]["function"]["name"];
        EXPECT_TRUE(name == "get_weather" || name == "get_time") << calls[i];
        EXPECT_TRUE(calls[i]["function"]["arguments"].is_string()) << calls[i];
      } else {
        expect_valid_call(calls[i]);
      }
    }
  }
}

TEST_F(ToolsTest, NamedFunctionIsTheOneCalled) {
  for (int seed = 1; seed <= 4; ++seed) {
    const Json j = chat(body({{"tool_choice", {{"type", "function"}, {"function", {{"name", "get_time"}}}}},
                              {"parallel_tool_calls", false}, {"seed", seed}}));
    const Json& calls = j["choices"][0]["message"]["tool_calls"];
    ASSERT_EQ(calls.size(), 1u) << j;
    EXPECT_EQ(calls[0]["function"]["name"], "get_time");
    expect_valid_call(calls[0]);
  }
}

TEST_F(ToolsTest, NoneAndAutoAnswerWithTextOrValidCalls) {
  const Json none = chat(body({{"tool_choice", "none"}, {"seed", 1}, {"max_tokens", 20}}));
  EXPECT_FALSE(none["choices"][0]["message"].contains("tool_calls")) << none;
  EXPECT_TRUE(none["choices"][0]["message"]["content"].is_string()) << none;
  for (int seed = 1; seed <= 4; ++seed) {
    const Json j = chat(body({{"tool_choice", "auto"}, {"seed", seed}, {"max_tokens", 60}}));
    const Json& m = j["choices"][0]["message"];
    if (m.contains("tool_calls")) {
      for (const Json& call : m["tool_calls"]) expect_valid_call(call);
    } else {
      ASSERT_TRUE(m["content"].is_string()) << j;
      EXPECT_EQ(m["content"].get<std::string>().find("<tool_call>"), std::string::npos) << j;
    }
  }
}

// The deltas put together give the same calls as the whole response of the same
// seed: the same names, and arguments that are the same JSON value.
TEST_F(ToolsTest, StreamedCallsAssembleFromDeltas) {
  for (const bool parallel : {false, true}) {
    const Json b = body({{"tool_choice", "required"}, {"parallel_tool_calls", parallel}, {"seed", 5}, {"max_tokens", 200}});
    const Json whole = chat(b);
    Json sb = b;
    sb["stream"] = true;
    const SseResult s = http_stream(port(), "/v1/chat/completions", sb);
    ASSERT_TRUE(s.done()) << s.raw;
    std::map<int, Json> calls;  // index -> {id, name, arguments}
    std::string finish;
    for (const Json& c : s.chunks()) {
      EXPECT_TRUE(check_chat_chunk(c).empty()) << c.dump();
      for (const Json& ch : c["choices"]) {
        if (ch["finish_reason"].is_string()) finish = ch["finish_reason"];
        EXPECT_FALSE(ch["delta"].contains("content") && !ch["delta"]["content"].get<std::string>().empty()) << c.dump();
        for (const Json& d : ch["delta"].value("tool_calls", Json::array())) {
          const int i = d["index"];
          if (d.contains("id")) {
            EXPECT_FALSE(calls.contains(i)) << "a second head for call " << i;
            EXPECT_EQ(d["type"], "function");
            calls[i] = {{"id", d["id"]}, {"name", d["function"]["name"]}, {"arguments", ""}};
          }
          ASSERT_TRUE(calls.contains(i)) << "arguments before the head: " << c.dump();
          calls[i]["arguments"] = calls[i]["arguments"].get<std::string>() + d["function"].value("arguments", "");
        }
      }
    }
    EXPECT_EQ(finish, whole["choices"][0]["finish_reason"]);
    const Json& want = whole["choices"][0]["message"]["tool_calls"];
    ASSERT_GE(want.size(), 1u) << whole;
    // Whole and streamed answers keep the same calls, a call cut by max_tokens
    // included (its arguments as far as written, the same text both ways).
    ASSERT_EQ(calls.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      const Json& got = calls[static_cast<int>(i)];
      EXPECT_EQ(got["name"], want[i]["function"]["name"]);
      const std::string args = got["arguments"], want_args = want[i]["function"]["arguments"];
      if (finish == "length" && i + 1 == want.size()) {
        EXPECT_EQ(args, want_args) << got;
      } else {
        EXPECT_EQ(Json::parse(args, nullptr, false), Json::parse(want_args)) << got;
      }
    }
    if (!parallel) {
      EXPECT_EQ(calls.size(), 1u);
    }
  }
}

// With n = 2 each choice streams its own calls: deltas are told apart by the
// choice's index, and each choice's call is valid on its own.
TEST_F(ToolsTest, EachChoiceOfAStreamHasItsOwnCalls) {
  Json b = body({{"tool_choice", "required"}, {"parallel_tool_calls", false}, {"seed", 9}, {"n", 2}, {"stream", true},
                 {"stream_options", {{"include_usage", true}}}});
  const SseResult s = http_stream(port(), "/v1/chat/completions", b);
  ASSERT_TRUE(s.done()) << s.raw;
  std::map<int, Json> calls;  // choice index -> {name, arguments}
  std::map<int, std::string> finish;
  bool usage = false;
  for (const Json& c : s.chunks()) {
    if (c["choices"].empty()) usage = c["usage"]["completion_tokens"].get<int>() > 0;
    for (const Json& ch : c["choices"]) {
      const int i = ch["index"];
      if (ch["finish_reason"].is_string()) finish[i] = ch["finish_reason"];
      for (const Json& d : ch["delta"].value("tool_calls", Json::array())) {
        EXPECT_EQ(d["index"], 0) << c.dump();  // one call per choice
        if (d.contains("id")) calls[i] = {{"name", d["function"]["name"]}, {"arguments", ""}};
        ASSERT_TRUE(calls.contains(i)) << c.dump();
        calls[i]["arguments"] = calls[i]["arguments"].get<std::string>() + d["function"].value("arguments", "");
      }
    }
  }
  EXPECT_TRUE(usage);
  ASSERT_EQ(calls.size(), 2u);
  for (const auto& [i, call] : calls) {
    EXPECT_EQ(finish[i], "tool_calls");
    expect_valid_call({{"id", "x"}, {"type", "function"}, {"function", call}});
  }
}

// A tool result goes into the prompt: a longer result, more prompt tokens by about
// its length.
TEST_F(ToolsTest, ToolMessagesGoIntoThePrompt) {
  auto prompt_tokens = [&](const std::string& result) {
    Json b = body({{"max_tokens", 1}, {"tool_choice", "auto"}});
    b["messages"] = {{{"role", "user"}, {"content", "Weather?"}},
                     {{"role", "assistant"}, {"content", nullptr},
                      {"tool_calls", {{{"id", "call_1"}, {"type", "function"},
                                       {"function", {{"name", "get_weather"}, {"arguments", R"({"city":"Oslo","days":1})"}}}}}}},
                     {{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", result}}};
    return chat(b)["usage"]["prompt_tokens"].get<int>();
  };
  const int short_result = prompt_tokens("sun");
  const int long_result = prompt_tokens("sun and rain and snow and wind and fog all day long");
  EXPECT_GT(long_result, short_result + 8);
}

TEST_F(ToolsTest, BadToolRequestsAre400NamingTheParameter) {
  const Json fn = tools()[0];
  const struct {
    Json extra;
    const char* param;
    const char* needle;
  } cases[] = {
      {{{"tools", "get_weather"}}, "tools", "must be a list"},
      {{{"tools", {{{"type", "retrieval"}}}}}, "tools", "each tool must be"},
      {{{"tools", {{{"type", "function"}, {"function", {{"name", "bad name!"}}}}}}}, "tools", "function.name"},
      {{{"tools", {fn, fn}}}, "tools", "twice"},
      {{{"tool_choice", "sometimes"}}, "tool_choice", "must be none, auto, required"},
      {{{"tool_choice", {{"type", "function"}, {"function", {{"name", "nope"}}}}}}, "tool_choice", "'nope'"},
      {{{"tools", Json::array()}, {"tool_choice", "required"}}, "tool_choice", "needs 'tools'"},
      {{{"response_format", {{"type", "json_object"}}}}, "response_format", "cannot be combined with 'tools'"},
      {{{"tools", {{{"type", "function"}, {"function", {{"name", "f"}, {"parameters", {{"type", "object"}, {"not", {}}}}}}}}}},
       "tools", "unsupported JSON Schema keyword 'not'"},
      {{{"parallel_tool_calls", "yes"}}, "parallel_tool_calls", "parallel_tool_calls"},
  };
  for (const auto& c : cases) {
    const HttpResult r = http_post(port(), "/v1/chat/completions", body(c.extra));
    EXPECT_EQ(r.status, 400) << c.extra << " " << r.body;
    const Json j = r.json();
    EXPECT_EQ(j["error"]["param"], c.param) << r.body;
    EXPECT_NE(j["error"]["message"].get<std::string>().find(c.needle), std::string::npos) << r.body;
  }
  // tools belong to chat; a tool message needs the call it answers.
  const HttpResult comp = http_post(port(), "/v1/completions", Json{{"prompt", "x"}, {"tools", tools()}});
  EXPECT_EQ(comp.status, 400);
  EXPECT_EQ(comp.json()["error"]["param"], "tools") << comp.body;
  Json orphan = body({});
  orphan["messages"] = {{{"role", "user"}, {"content", "x"}}, {{"role", "tool"}, {"content", "y"}}};
  const HttpResult o = http_post(port(), "/v1/chat/completions", orphan);
  EXPECT_EQ(o.status, 400);
  EXPECT_EQ(o.json()["error"]["param"], "messages") << o.body;
  EXPECT_NE(o.body.find("tool_call_id"), std::string::npos) << o.body;
}

}  // namespace
}  // namespace llms::test

namespace llms::test {
namespace {

std::string read_source_file(const std::string& rel) {
  std::ifstream in(std::string(LLMSERVE_SOURCE_DIR) + "/" + rel, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A server whose chat template is a Jinja source (Qwen 2.5's published template):
// the interpreter renders the tools and replayed calls itself, in the template's
// own words, and the answer's calls are parsed in its <tool_call> format.
TEST(JinjaToolsTest, TheTemplateWritesTheToolsAndTheCallsParse) {
  if (!have_stories()) GTEST_SKIP() << "needs " << shared_dir() << "/models/stories260K.gguf";
  const std::string qwen = read_source_file("tests/data/chat_templates/qwen2.5-instruct.jinja");
  ASSERT_FALSE(qwen.empty());
  auto server = start_server(stories_path(), [&](ServeConfig& c) { c.server.chat_template = qwen; });
  const Json messages = {{{"role", "user"}, {"content", "What is the weather in Paris?"}}};
  const Json b = {{"messages", messages}, {"tools", tools()}, {"tool_choice", "required"}, {"parallel_tool_calls", false},
                  {"temperature", 1.0}, {"max_tokens", 300}, {"seed", 3}};
  const HttpResult r = http_post(server->port(), "/v1/chat/completions", b);
  ASSERT_EQ(r.status, 200) << r.body;
  const Json j = r.json();
  EXPECT_EQ(j["choices"][0]["finish_reason"], "tool_calls") << j;
  ASSERT_FALSE(j["choices"][0]["message"]["tool_calls"].empty()) << j;
  expect_valid_call(j["choices"][0]["message"]["tool_calls"][0]);

  // The prompt is the template's rendering with the tools passed as `tools`: its token
  // count equals the interpreter's rendering here, and differs from the one without tools.
  GgufFile gguf = GgufFile::open(stories_path()).value();
  auto tok = Tokenizer::from_gguf(gguf).value();
  const std::vector<ChatMessage> msgs = {{"user", "What is the weather in Paris?"}};
  const nlohmann::ordered_json tool_list = nlohmann::ordered_json::parse(tools().dump());
  const std::string with_tools = apply_model_chat_template(*tok, msgs, true, qwen, tool_list).value();
  const std::string without = apply_model_chat_template(*tok, msgs, true, qwen).value();
  EXPECT_NE(with_tools.find("<tools>"), std::string::npos);
  EXPECT_NE(with_tools.find("\"name\": \"get_weather\""), std::string::npos);
  EXPECT_EQ(j["usage"]["prompt_tokens"].get<size_t>(), encode_chat_prompt(*tok, with_tools).size());
  EXPECT_GT(encode_chat_prompt(*tok, with_tools).size(), encode_chat_prompt(*tok, without).size() + 50);
}

}  // namespace
}  // namespace llms::test
