// Hostile requests end to end: grammars that cost too much never hold the I/O threads
// and stop when their client leaves; an answer too large to buffer is refused before
// its compute (never cut after it); one API key cannot read another's prompts through
// the prefix cache or the result cache.
#include <gtest/gtest.h>

#include <cmath>
#include <future>
#include <string>
#include <vector>

#include "server_test_util.h"

namespace llms::test {
namespace {

// 4,000 alternatives of 400 letters (1.6 MB): seconds to compile without a budget.
std::string heavy_regex() {
  std::string r = "(";
  uint64_t x = 12345;
  for (int i = 0; i < 4000; ++i) {
    if (i) r += '|';
    for (int j = 0; j < 400; ++j) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      r += static_cast<char>('a' + (x >> 61));
    }
  }
  return r + ")";
}

// Past a compile budget of 1,000 work units, through each parameter that compiles.
const std::string kCostlyRegex = "[a-z]{1,300}";

// GET /health on its own connection, waiting at most 10 s for the status line (an I/O
// thread held by a compile would not answer).
bool health_answers(int port) {
  RawClient c(port);
  return c.send_request("GET", "/health", "") && c.read_until("\r\n", 10).find(" 200 ") != std::string::npos;
}

std::string error_message(const HttpResult& r) {
  const Json j = r.json();
  return j.is_object() && j.contains("error") ? j["error"].value("message", "") : "";
}

// The reproducer: two nested counted repetitions at once. Each is answered
// (compiled, or refused naming the budget), and /health answers meanwhile.
TEST(HostileRequests, NestedRepetitionRegexesAreAnsweredAndHealthStaysUp) {
  if (!have_stories()) GTEST_SKIP() << "no stories260K";
  auto server = start_server(stories_path());
  const int port = server->port();
  std::vector<std::future<HttpResult>> answers;
  for (const char* c : {"x", "y"}) {
    const std::string regex = std::string("(") + c + "{1,4096}){1,4096}";
    answers.push_back(std::async(std::launch::async, [port, regex] {
      return http_post(port, "/v1/completions", Json{{"prompt", "x"}, {"max_tokens", 4}, {"regex", regex}});
    }));
  }
  EXPECT_TRUE(health_answers(port));
  for (auto& a : answers) {
    const HttpResult r = a.get();
    ASSERT_TRUE(r.status == 200 || r.status == 400) << r.status << " " << r.body;
    if (r.status == 400) {
      EXPECT_NE(error_message(r).find("grammar_"), std::string::npos) << r.body;  // names the budget's setting
    }
  }
}

// With no budget at all, two compiles that would run for minutes take both grammar
// threads: /health (an I/O thread) still answers, a third grammar waits in the queue,
// and a client that hangs up stops its compile.
TEST(HostileRequests, GrammarCompilesRunOffTheIoThreadsAndStopWhenTheClientLeaves) {
  if (!have_stories()) GTEST_SKIP() << "no stories260K";
  auto server = start_server(stories_path(), [](ServeConfig& c) {
    c.server.grammar_threads = 2;
    c.server.io_threads = 1;
    c.server.grammar_budget = GrammarBudget{0, 0, 0, 0, 0, 0, 0, nullptr};  // no limit
  });
  const int port = server->port();
  const std::string body = Json{{"prompt", "x"}, {"max_tokens", 2}, {"regex", heavy_regex()}}.dump();
  RawClient a(port), b(port);
  ASSERT_TRUE(a.send_request("POST", "/v1/completions", body));
  ASSERT_TRUE(b.send_request("POST", "/v1/completions", body));
  ASSERT_TRUE(poll_until([&] { return metric(*server, "llmserve_grammar_compiles_running") == 2; }));
  EXPECT_TRUE(health_answers(port));
  a.close();
  b.close();
  EXPECT_TRUE(poll_until([&] { return metric(*server, "llmserve_grammar_compiles_total{result=\"cancelled\"}") == 2; },
                         120));
  EXPECT_TRUE(std::isnan(metric(*server, "llmserve_grammar_compiles_total{result=\"ok\"}")));
  EXPECT_TRUE(poll_until([&] { return metric(*server, "llmserve_grammar_compiles_running") == 0; }));
  // The threads are free again.
  const HttpResult ok = http_post(port, "/v1/completions", Json{{"prompt", "x"}, {"max_tokens", 2}, {"regex", "ab?"}});
  EXPECT_EQ(ok.status, 200) << ok.body;
}

// A grammar past the compile budget is a 400 that names the limit, through each
// parameter that reaches the compiler.
TEST(HostileRequests, GrammarPastTheBudgetIsA400NamingIt) {
  if (!have_stories()) GTEST_SKIP() << "no stories260K";
  auto server = start_server(stories_path(), [](ServeConfig& c) { c.server.grammar_budget.compile_work = 1000; });
  const int port = server->port();
  const Json schema = {{"type", "object"},
                       {"properties", {{"a", {{"type", "string"}, {"pattern", "^" + kCostlyRegex + "$"}}}}},
                       {"required", {"a"}}};
  const std::vector<std::pair<std::string, Json>> cases = {
      {"/v1/completions", Json{{"prompt", "x"}, {"regex", kCostlyRegex}}},
      {"/v1/completions", Json{{"prompt", "x"}, {"grammar", "root ::= [a-z]{1,300}"}}},
      {"/v1/chat/completions",
       Json{{"messages", {{{"role", "user"}, {"content", "x"}}}},
            {"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "n"}, {"schema", schema}}}}}}},
      {"/v1/chat/completions",
       Json{{"messages", {{{"role", "user"}, {"content", "x"}}}},
            {"tools", {{{"type", "function"}, {"function", {{"name", "f"}, {"parameters", schema}}}}}},
            {"tool_choice", "required"}}},
  };
  for (const auto& [path, body] : cases) {
    const HttpResult r = http_post(port, path, body);
    EXPECT_EQ(r.status, 400) << body.dump() << " " << r.body;
    EXPECT_EQ(r.json()["error"]["code"], "grammar_budget_exceeded") << r.body;
    EXPECT_NE(error_message(r).find("compile_work"), std::string::npos) << r.body;
  }
  EXPECT_EQ(metric(*server, "llmserve_grammar_compiles_total{result=\"over_budget\"}"), 4);
  EXPECT_EQ(http_post(port, "/v1/completions", Json{{"prompt", "x"}, {"max_tokens", 2}, {"regex", "ab?"}}).status, 200);
}

// (.{0,4096}){0,4096} was a 500 ("the grammar refused a token its mask allowed"):
// read nested, one character splits into iterations in more ways than the matcher
// follows. Lowered as one repetition it generates, and no line break gets through.
TEST(HostileRequests, NestedOptionalRepetitionRegexGenerates) {
  if (!have_stories()) GTEST_SKIP() << "no stories260K";
  auto server = start_server(stories_path());
  const HttpResult r =
      http_post(server->port(), "/v1/completions",
                Json{{"prompt", "Once"}, {"max_tokens", 32}, {"ignore_eos", true}, {"regex", "(.{0,4096}){0,4096}"}});
  ASSERT_EQ(r.status, 200) << r.body;
  const Json j = r.json();
  EXPECT_EQ(j["usage"]["completion_tokens"], 32) << r.body;
  const std::string text = j["choices"][0]["text"];
  EXPECT_EQ(text.find_first_of("\r\n"), std::string::npos) << text;
}

// (x{1,128}|x){1,128}: after about 90 x's the text splits into iterations in more
// distinct ways (outer count, inner count) than the matcher follows. That is the
// request's grammar, not a server fault: a 400 naming the limit (an error event when
// streamed), where it was a 500.
TEST(HostileRequests, GrammarTooAmbiguousMidGenerationIsAClientError) {
  if (!have_stories()) GTEST_SKIP() << "no stories260K";
  auto server = start_server(stories_path());
  const Json body = {{"prompt", "Once"}, {"max_tokens", 300}, {"temperature", 0}, {"ignore_eos", true},
                     {"regex", "(x{1,128}|x){1,128}"}};
  const HttpResult r = http_post(server->port(), "/v1/completions", body);
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(r.json()["error"]["code"], "grammar_budget_exceeded") << r.body;
  EXPECT_NE(error_message(r).find("more than 4096 ways"), std::string::npos) << r.body;
  Json streamed = body;
  streamed["stream"] = true;
  const HttpResult s = http_post(server->port(), "/v1/completions", streamed);
  EXPECT_EQ(s.status, 200);
  EXPECT_NE(s.body.find("\"code\":\"grammar_budget_exceeded\""), std::string::npos) << s.body.substr(0, 400);
  EXPECT_NE(s.body.find("data: [DONE]"), std::string::npos);
  // The server goes on: the next request is served.
  EXPECT_EQ(http_post(server->port(), "/v1/completions", Json{{"prompt", "x"}, {"max_tokens", 2}, {"regex", "ab?"}}).status,
            200);
}

// The request: 64 choices of 2000 tokens with 20 logprobs each. Refused before
// any compute with a 400 naming the limit; smaller answers still pass.
TEST(HostileRequests, AnswerPastMaxResponseBytesIsRefusedBeforeCompute) {
  if (!have_stories()) GTEST_SKIP() << "no stories260K";
  auto server = start_server(stories_path());
  const int port = server->port();
  const Json big = {{"prompt", "Once"}, {"max_tokens", 2000}, {"n", 64}, {"logprobs", 20}, {"ignore_eos", true}};
  const HttpResult r = http_post(port, "/v1/completions", big);
  EXPECT_EQ(r.status, 400) << r.body.substr(0, 300);
  EXPECT_EQ(r.json()["error"]["code"], "response_too_large");
  EXPECT_NE(error_message(r).find("max_response_bytes"), std::string::npos) << r.body;
  EXPECT_EQ(metric(*server, "llmserve_generation_tokens_total"), 0);  // nothing was computed
  const Json small = {{"prompt", "Once"}, {"max_tokens", 50}, {"n", 4}, {"logprobs", 20}, {"ignore_eos", true}};
  const HttpResult ok = http_post(port, "/v1/completions", small);
  EXPECT_EQ(ok.status, 200) << ok.body.substr(0, 300);
  EXPECT_EQ(ok.json()["choices"].size(), 4u);
}

const std::string kKeyA = "sk-tenant-a-0123456789";
const std::string kKeyB = "sk-tenant-b-0123456789";
const std::string kKeyC = "sk-tenant-c-0123456789";

Headers bearer(const std::string& key) { return {{"Authorization", "Bearer " + key}}; }

// A prompt of several KV blocks: a common head and a secret tail.
const std::string kHead = "Once upon a time there was a little girl named Lily who lived in a small house. ";
const std::string kSecret = kHead + "Her secret code was purple elephant seven, and she told nobody about it at all.";
const std::string kWrong = kHead + "She liked to play in the park with her friends and her big red ball every day.";

int64_t cached_tokens(const HttpResult& r) {
  const Json j = r.json();
  EXPECT_EQ(r.status, 200) << r.body;
  return j["usage"]["prompt_tokens_details"]["cached_tokens"].get<int64_t>();
}

HttpResult ask(int port, const std::string& key, const std::string& prompt, const std::string& salt = "") {
  Json body = {{"prompt", prompt}, {"max_tokens", 2}, {"temperature", 0}};
  if (!salt.empty()) body["cache_salt"] = salt;
  return http_post(port, "/v1/completions", body, bearer(key));
}

std::unique_ptr<LlmServer> keyed_server(const std::string& scope) {
  return start_server(stories_path(), [scope](ServeConfig& c) {
    c.server.api_key = kKeyA;
    c.server.api_key_file = ::testing::TempDir() + "/hardening_keys.txt";
    FILE* f = fopen(c.server.api_key_file.c_str(), "w");
    fprintf(f, "%s\n%s\n", kKeyB.c_str(), kKeyC.c_str());
    fclose(f);
    c.server.prefix_cache_scope = scope;
  });
}

// The guessing attack: key B's correct guess of key A's prompt reads 0 cached tokens,
// as a wrong guess does; A's own repeat is served from the cache; cache_salt scopes
// further; and the result cache answers only the key that filled it.
TEST(HostileRequests, PrefixAndResultCachesAreScopedPerKey) {
  if (!have_stories()) GTEST_SKIP() << "no stories260K";
  auto server = keyed_server("key");
  const int port = server->port();
  EXPECT_EQ(cached_tokens(ask(port, kKeyA, kSecret)), 0);
  const double hits = metric(*server, "llmserve_result_cache_hits_total");
  EXPECT_EQ(cached_tokens(ask(port, kKeyB, kSecret)), 0);  // correct guess
  EXPECT_EQ(cached_tokens(ask(port, kKeyC, kWrong)), 0);   // wrong guess
  EXPECT_EQ(metric(*server, "llmserve_result_cache_hits_total"), hits);  // B's identical request missed
  ask(port, kKeyA, kSecret);
  EXPECT_EQ(metric(*server, "llmserve_result_cache_hits_total"), hits + 1);  // A's own repeat hit
  // A's own prefix is shared with A (a different request: no result-cache hit).
  EXPECT_GE(cached_tokens(ask(port, kKeyA, kSecret + " More.")), 32);
  // cache_salt: only requests of the same key and salt share.
  EXPECT_EQ(cached_tokens(ask(port, kKeyA, kSecret + " More.", "s1")), 0);
  EXPECT_GE(cached_tokens(ask(port, kKeyA, kSecret + " Again.", "s1")), 32);
  EXPECT_EQ(cached_tokens(ask(port, kKeyB, kSecret + " Again.", "s1")), 0);
}

// With prefix_cache_scope global the keys share (the attack above would read the
// cache): what the default prevents. cache_salt still separates.
TEST(HostileRequests, GlobalScopeSharesAcrossKeysButNotAcrossSalts) {
  if (!have_stories()) GTEST_SKIP() << "no stories260K";
  auto server = keyed_server("global");
  const int port = server->port();
  EXPECT_EQ(cached_tokens(ask(port, kKeyA, kSecret)), 0);
  EXPECT_GE(cached_tokens(ask(port, kKeyB, kSecret + " More.")), 32);
  EXPECT_EQ(cached_tokens(ask(port, kKeyB, kSecret + " Other.", "salt")), 0);
}

// Fields that would change the answer's meaning and are not implemented: a 400 naming
// the field; harmless unknown fields and neutral values pass.
TEST(HostileRequests, UnknownFieldsPolicy) {
  if (!have_stories()) GTEST_SKIP() << "no stories260K";
  auto server = start_server(stories_path());
  const int port = server->port();
  for (const char* f : {"min_tokens", "stop_token_ids", "use_beam_search", "prompt_logprobs"}) {
    Json body = {{"prompt", "x"}, {"max_tokens", 2}};
    body[f] = std::string(f) == "use_beam_search" ? Json(true) : std::string(f) == "stop_token_ids" ? Json({2}) : Json(3);
    const HttpResult r = http_post(port, "/v1/completions", body);
    EXPECT_EQ(r.status, 400) << f << " " << r.body;
    EXPECT_EQ(r.json()["error"]["param"], f) << r.body;
  }
  const Json harmless = {{"prompt", "x"}, {"max_tokens", 2}, {"store", false}, {"metadata", {{"a", "b"}}},
                         {"min_tokens", 0}, {"skip_special_tokens", true}, {"x_unknown_field", 1}};
  EXPECT_EQ(http_post(port, "/v1/completions", harmless).status, 200);
}

}  // namespace
}  // namespace llms::test
