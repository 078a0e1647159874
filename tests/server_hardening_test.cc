// The HTTP layer against hostile and careless clients, end to end: invented methods
// and paths cannot grow /metrics; the admin token and the API keys each open only
// their own paths; a page in a browser cannot drive the server (Host allow-list,
// Origin check, JSON content type, CORS only where configured); HEAD on every GET
// route; HTTP/1.0 clients get a close-delimited stream; a wrong version pin does not
// list the loaded versions; Expect: 100-continue on a reused connection.
#include <unistd.h>

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <regex>
#include <set>

#include "server_test_util.h"

namespace llms::test {
namespace {

const char* const kApiKey = "sk-hardening-api-key-0001";
const char* const kAdminToken = "admin-hardening-token-0002";

// One request on its own connection (the raw text, so that any method, Host or
// framing can be sent); everything the server sent until it closed.
std::string round_trip(int port, const std::string& raw) {
  RawClient c(port);
  EXPECT_TRUE(c.send_raw(raw));
  EXPECT_TRUE(c.wait_closed(60)) << raw.substr(0, 200);
  return c.received();
}

int status_of(const std::string& response) {
  if (response.rfind("HTTP/1.1 ", 0) != 0 || response.size() < 12) return 0;
  return std::stoi(response.substr(9, 3));
}

std::string head_of(const std::string& response) { return response.substr(0, response.find("\r\n\r\n")); }
std::string body_of(const std::string& response) {
  const size_t end = response.find("\r\n\r\n");
  return end == std::string::npos ? "" : response.substr(end + 4);
}

std::string request(const std::string& method, const std::string& path, const std::string& headers,
                    const std::string& body = "", const char* version = "HTTP/1.1") {
  return method + " " + path + " " + version + "\r\n" + headers + "Connection: close\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

const std::string kLocal = "Host: 127.0.0.1\r\n";
const std::string kJson = "Content-Type: application/json\r\n";
const std::string kCompletion = R"({"prompt":"x","max_tokens":2})";

std::string write_token(const std::string& token) {
  const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_hardening_admin.token";
  std::ofstream(path) << token << "\n";
  return path;
}

// The label sets of every sample of `family` in a /metrics text.
std::vector<std::map<std::string, std::string>> series(const std::string& text, const std::string& family) {
  std::vector<std::map<std::string, std::string>> out;
  static const std::regex label(R"re((\w+)="([^"]*)")re");
  size_t pos = 0;
  while ((pos = text.find("\n" + family + "{", pos)) != std::string::npos) {
    const size_t open = pos + family.size() + 2, close = text.find('}', open);
    const std::string labels = text.substr(open, close - open);
    std::map<std::string, std::string> m;
    for (auto it = std::sregex_iterator(labels.begin(), labels.end(), label); it != std::sregex_iterator(); ++it) {
      m[(*it)[1]] = (*it)[2];
    }
    out.push_back(std::move(m));
    pos = close;
  }
  return out;
}

TEST(ServerHardening, InventedMethodsAndPathsCannotGrowTheMetrics) {
  auto server = start_server(synthetic_path(), [](ServeConfig& c) { c.server.api_key = kApiKey; });
  const int port = server->port();
  std::mt19937 rng(55);
  auto word = [&](size_t n) {
    std::string s;
    for (size_t i = 0; i < n; ++i) s += static_cast<char>('A' + rng() % 26);
    return s;
  };
  const char* const prefixes[] = {"/", "/v1/models/", "/admin/", "/ui/", "/v1/", "/metrics/"};
  std::set<std::string> sent_methods;
  for (int i = 0; i < 240; ++i) {
    // Every tenth method is 60 KB; the path is new each time; half carry the key.
    const std::string method = i % 10 == 0 ? word(60 << 10) : word(1 + rng() % 24);
    const std::string path = prefixes[rng() % 6] + word(1 + rng() % 300);
    const std::string auth = i % 2 ? std::string("Authorization: Bearer ") + kApiKey + "\r\n" : "";
    sent_methods.insert(method);
    const std::string got = round_trip(port, request(method, path, kLocal + auth));
    const int status = status_of(got);
    EXPECT_TRUE(status == 401 || status == 404 || status == 405 || status == 400 || status == 431) << status;
  }
  ASSERT_GT(sent_methods.size(), 200u);
  const HttpResult m = http_get(port, "/metrics");
  ASSERT_EQ(m.status, 200);
  EXPECT_LT(m.body.size(), 256u << 10) << "the metrics grew with the requests";
  const std::set<std::string> methods = {"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH",
                                         "other", "-"};
  const std::set<std::string> endpoints = {"/v1/completions", "/v1/chat/completions", "/v1/models", "/tokenize",
                                           "/detokenize", "/health", "/ready", "/metrics", "/v1/stats",
                                           "/admin/versions", "/admin/deploy", "/admin/promote", "/admin/abort",
                                           "/admin/rollback", "/", "/ui", "other"};
  const auto requests = series(m.body, "llmserve_http_requests_total");
  ASSERT_FALSE(requests.empty());
  for (const auto& s : requests) {
    EXPECT_TRUE(methods.contains(s.at("method"))) << s.at("method").substr(0, 80);
    EXPECT_TRUE(endpoints.contains(s.at("endpoint"))) << s.at("endpoint").substr(0, 80);
  }
  // At most a few statuses per endpoint and method: nowhere near one per request.
  EXPECT_LE(requests.size(), 40u);
  EXPECT_LE(series(m.body, "llmserve_http_request_duration_seconds_count").size(), endpoints.size());
  EXPECT_GT(metric(m.body, "llmserve_http_requests_total{endpoint=\"other\",method=\"other\",status=\"401\",version=\"-\"}"), 0);
}

struct AdminCase {
  bool keys;
  bool admin;
};

TEST(ServerHardening, AdminTokenAndApiKeysEachOpenOnlyTheirOwnPaths) {
  const std::string token_file = write_token(kAdminToken);
  for (const AdminCase c : {AdminCase{false, false}, AdminCase{false, true}, AdminCase{true, false}, AdminCase{true, true}}) {
    auto server = start_server(synthetic_path(), [&](ServeConfig& sc) {
      if (c.keys) sc.server.api_key = kApiKey;
      if (c.admin) sc.server.admin_token_file = token_file;
    });
    const int port = server->port();
    const std::string what = std::string("keys ") + (c.keys ? "on" : "off") + ", admin " + (c.admin ? "on" : "off");
    struct Credential {
      const char* name;
      Headers headers;
    };
    const Credential credentials[] = {{"none", {}},
                                      {"api key", {{"Authorization", std::string("Bearer ") + kApiKey}}},
                                      {"admin token", {{"Authorization", std::string("Bearer ") + kAdminToken}}},
                                      {"admin token, lower-case scheme", {{"Authorization", std::string("bearer ") + kAdminToken}}},
                                      {"wrong", {{"Authorization", "Bearer wrong-credential-of-twenty"}}}};
    for (const Credential& cred : credentials) {
      const bool is_admin = std::string(cred.name).starts_with("admin token");
      const int want_admin = !c.admin ? 404 : is_admin ? 200 : 401;
      const HttpResult versions = http_get(port, "/admin/versions", cred.headers);
      EXPECT_EQ(versions.status, want_admin) << what << ", " << cred.name << ": " << versions.body;
      const HttpResult promote = http_post(port, "/admin/promote", std::string(), cred.headers);
      if (want_admin != 200) {
        EXPECT_EQ(promote.status, want_admin) << what << ", " << cred.name;
      }
      // The API: open without keys; with keys, only an API key opens it (not the admin token).
      const int want_api = !c.keys || std::string(cred.name) == "api key" ? 200 : 401;
      EXPECT_EQ(http_get(port, "/v1/models", cred.headers).status, want_api) << what << ", " << cred.name;
    }
  }
}

TEST(ServerHardening, AnAdminTokenThatIsAlsoAnApiKeyStopsTheStart) {
  ServeConfig c;
  c.server.model_path = synthetic_path();
  c.server.port = 0;
  c.server.api_key = kAdminToken;
  c.server.admin_token_file = write_token(kAdminToken);
  auto r = LlmServer::start(c);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("the admin token is also an API key"), std::string::npos) << r.status().message();
  EXPECT_EQ(r.status().message().find(kAdminToken), std::string::npos);
}

// The issue's reproducer: a text/plain POST with a foreign Host, as a page in a
// browser sends after DNS rebinding, is not served; nor is a cross-site POST.
TEST(ServerHardening, APageInABrowserCannotDriveTheServer) {
  auto server = start_server(synthetic_path());
  const int port = server->port();
  const std::string own = "Host: 127.0.0.1:" + std::to_string(port) + "\r\n";
  std::string got = round_trip(port, request("POST", "/v1/completions", "Host: attacker.example\r\nContent-Type: text/plain\r\n",
                                           kCompletion));
  EXPECT_EQ(status_of(got), 403) << got;
  EXPECT_NE(body_of(got).find("\"code\":\"host_not_allowed\""), std::string::npos) << got;
  EXPECT_EQ(status_of(round_trip(port, request("GET", "/metrics", "Host: attacker.example:8080\r\n"))), 403);
  for (const char* host : {"localhost", "LOCALHOST:1234", "127.0.0.1", "[::1]:80", "10.0.0.7:8000"}) {
    EXPECT_EQ(status_of(round_trip(port, request("GET", "/health", std::string("Host: ") + host + "\r\n"))), 200) << host;
  }
  // JSON endpoints want a JSON body type: the simple types a form or fetch can send without preflight get 415.
  for (const char* type : {"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", ""}) {
    const std::string ct = *type ? std::string("Content-Type: ") + type + "\r\n" : "";
    for (const char* path : {"/v1/completions", "/v1/chat/completions", "/tokenize"}) {
      got = round_trip(port, request("POST", path, own + ct, kCompletion));
      EXPECT_EQ(status_of(got), 415) << path << " " << type << ": " << got;
    }
  }
  EXPECT_NE(body_of(got).find("application/json"), std::string::npos) << got;
  got = round_trip(port, request("POST", "/v1/completions", own + "Content-Type: application/json; charset=utf-8\r\n", kCompletion));
  EXPECT_EQ(status_of(got), 200) << got;
  // A state-changing request from another origin is refused; the server's own page is not.
  got = round_trip(port, request("POST", "/v1/completions", own + kJson + "Origin: http://attacker.example\r\n", kCompletion));
  EXPECT_EQ(status_of(got), 403) << got;
  EXPECT_NE(body_of(got).find("origin_not_allowed"), std::string::npos) << got;
  got = round_trip(port, request("POST", "/v1/completions",
                               own + kJson + "Origin: http://127.0.0.1:" + std::to_string(port) + "\r\n", kCompletion));
  EXPECT_EQ(status_of(got), 200) << got;
  // CORS is off: a preflight is refused and no answer says Access-Control-Allow-Origin.
  got = round_trip(port, request("OPTIONS", "/v1/completions",
                               own + "Origin: https://app.example.com\r\nAccess-Control-Request-Method: POST\r\n"));
  EXPECT_EQ(status_of(got), 403) << got;
  got = round_trip(port, request("GET", "/v1/models", own + "Origin: https://app.example.com\r\n"));
  EXPECT_EQ(status_of(got), 200);
  EXPECT_EQ(head_of(got).find("Access-Control-Allow-Origin"), std::string::npos) << got;
}

TEST(ServerHardening, ConfiguredHostsAndCorsOrigins) {
  auto server = start_server(synthetic_path(), [](ServeConfig& c) {
    c.server.allowed_hosts = "llm.example.com";
    c.server.cors_origins = "https://app.example.com";
  });
  const int port = server->port();
  const std::string host = "Host: llm.example.com\r\n";
  std::string got = round_trip(port, request("OPTIONS", "/v1/completions",
                                           host + "Origin: https://app.example.com\r\nAccess-Control-Request-Method: POST\r\n"
                                                  "Access-Control-Request-Headers: authorization, content-type\r\n"));
  EXPECT_EQ(status_of(got), 204) << got;
  EXPECT_NE(head_of(got).find("Access-Control-Allow-Origin: https://app.example.com"), std::string::npos) << got;
  EXPECT_NE(head_of(got).find("Access-Control-Allow-Methods: GET, HEAD, POST"), std::string::npos) << got;
  EXPECT_NE(head_of(got).find("Authorization, Content-Type"), std::string::npos) << got;
  got = round_trip(port, request("OPTIONS", "/v1/completions",
                               host + "Origin: https://other.example\r\nAccess-Control-Request-Method: POST\r\n"));
  EXPECT_EQ(status_of(got), 403) << got;
  EXPECT_EQ(head_of(got).find("Access-Control-Allow-Origin"), std::string::npos) << got;
  got = round_trip(port, request("POST", "/v1/completions", host + kJson + "Origin: https://app.example.com\r\n", kCompletion));
  EXPECT_EQ(status_of(got), 200) << got;
  EXPECT_NE(head_of(got).find("Access-Control-Allow-Origin: https://app.example.com"), std::string::npos) << got;
  // A stream's answer carries it too.
  got = round_trip(port, request("POST", "/v1/completions", host + kJson + "Origin: https://app.example.com\r\n",
                               R"({"prompt":"x","max_tokens":2,"stream":true})"));
  EXPECT_EQ(status_of(got), 200) << got;
  EXPECT_NE(head_of(got).find("Access-Control-Allow-Origin: https://app.example.com"), std::string::npos) << got;
  EXPECT_EQ(status_of(round_trip(port, request("GET", "/health", "Host: other.example.com\r\n"))), 403);
}

TEST(ServerHardening, HeadOnEveryGetRoute) {
  auto server = start_server(synthetic_path(), [](ServeConfig& c) { c.server.model_name = "tiny"; });
  const int port = server->port();
  for (const char* path : {"/health", "/ready", "/metrics", "/v1/models", "/v1/models/tiny", "/v1/stats", "/",
                           "/ui/favicon.svg", "/admin/versions"}) {
    const HttpResult get = http_get(port, path);
    const std::string got = round_trip(port, request("HEAD", path, kLocal));
    EXPECT_EQ(status_of(got), get.status) << path << ": " << got;
    EXPECT_NE(get.status, 405) << path;
    EXPECT_EQ(body_of(got), "") << path;
    EXPECT_NE(head_of(got).find("Content-Length: "), std::string::npos) << path;
  }
}

TEST(ServerHardening, Http10ClientsGetACloseDelimitedStream) {
  auto server = start_server(synthetic_path());
  const int port = server->port();
  const std::string body = R"({"prompt":"x","max_tokens":4,"stream":true})";
  for (const char* connection : {"", "Connection: keep-alive\r\n"}) {
    const std::string raw = std::string("POST /v1/completions HTTP/1.0\r\n") + kLocal + kJson + connection +
                            "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    RawClient c(port);
    ASSERT_TRUE(c.send_raw(raw));
    ASSERT_TRUE(c.wait_closed(60)) << "the server must close to end the body";
    const std::string got = c.received();
    EXPECT_EQ(status_of(got), 200) << got;
    EXPECT_EQ(head_of(got).find("Transfer-Encoding"), std::string::npos) << got;
    EXPECT_EQ(head_of(got).find("Content-Length"), std::string::npos) << got;
    EXPECT_NE(head_of(got).find("Connection: close"), std::string::npos) << got;
    const std::string sse = body_of(got);
    EXPECT_EQ(sse.rfind("data: {", 0), 0u) << sse;  // no chunk size line before the first event
    const std::vector<std::string> events = parse_sse(sse);
    ASSERT_GE(events.size(), 2u) << sse;
    EXPECT_EQ(events.back(), "[DONE]") << sse;
    for (size_t i = 0; i + 1 < events.size(); ++i) EXPECT_TRUE(Json::accept(events[i])) << events[i];
  }
  // HTTP/1.1 still gets chunks.
  const std::string got = round_trip(port, request("POST", "/v1/completions", kLocal + kJson, body));
  EXPECT_NE(head_of(got).find("Transfer-Encoding: chunked"), std::string::npos) << got;
}

TEST(ServerHardening, AWrongVersionPinDoesNotListTheLoadedVersions) {
  auto server = start_server(synthetic_path(), [](ServeConfig& c) { c.server.model_name = "secret-version-name"; });
  const HttpResult r = http_post(server->port(), "/v1/completions", Json{{"prompt", "x"}, {"max_tokens", 2}},
                                 {{"x-llmserve-version", "guess"}});
  EXPECT_EQ(r.status, 404) << r.body;
  EXPECT_NE(r.body.find("'guess' is not loaded"), std::string::npos) << r.body;
  EXPECT_EQ(r.body.find("secret-version-name"), std::string::npos) << r.body;
}

// A client that sends `Expect: 100-continue` (curl does, for large bodies) on a
// keep-alive connection whose previous request was answered: the interim 100 ends no
// response, so the body is read as this request's (it was parsed as the next
// request's head, with the parser replaced under the read in flight: the HTTP
// fuzzer's finding).
TEST(ServerHardening, ExpectContinueAfterAnAnsweredRequestOnTheSameConnection) {
  auto server = start_server(synthetic_path());
  RawClient c(server->port());
  const auto completion = [](int max_tokens) {
    return Json{{"prompt", "x"}, {"max_tokens", max_tokens}, {"ignore_eos", true}}.dump();
  };
  ASSERT_TRUE(c.send_request("POST", "/v1/completions", completion(1)));
  ASSERT_NE(c.read_until("\"completion_tokens\":1", 60).find("\"completion_tokens\":1"), std::string::npos)
      << c.received();
  const std::string body = completion(2);
  ASSERT_TRUE(c.send_raw("POST /v1/completions HTTP/1.1\r\n" + kLocal + kJson + "Expect: 100-continue\r\n" +
                         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n"));
  ASSERT_NE(c.read_until("100 Continue\r\n\r\n", 60).find("HTTP/1.1 100 Continue\r\n\r\n"), std::string::npos)
      << c.received();
  ASSERT_TRUE(c.send_raw(body));
  const std::string got = c.read_until("\"completion_tokens\":2", 60);
  const std::string second = got.substr(got.find("100 Continue\r\n\r\n") + 16);
  EXPECT_EQ(status_of(second), 200) << got;
  EXPECT_NE(second.find("\"completion_tokens\":2"), std::string::npos) << got;
}

}  // namespace
}  // namespace llms::test
