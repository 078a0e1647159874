#include "server/browser_policy.h"

#include <gtest/gtest.h>

namespace llms {
namespace {

HttpRequest request(std::string method, HttpHeaders headers) {
  HttpRequest r;
  r.method = std::move(method);
  r.path = "/v1/completions";
  r.headers = std::move(headers);
  return r;
}

BrowserPolicy policy(const std::string& allowed_hosts, const std::string& cors_origins,
                     const std::string& host = "127.0.0.1") {
  ServerConfig c;
  c.host = host;
  c.allowed_hosts = allowed_hosts;
  c.cors_origins = cors_origins;
  auto p = BrowserPolicy::create(c);
  EXPECT_TRUE(p.ok()) << p.status().to_string();
  return p.ok() ? std::move(p).value() : BrowserPolicy();
}

TEST(BrowserPolicyTest, HostAllowList) {
  const BrowserPolicy d = policy("", "");
  for (const char* ok : {"127.0.0.1:8080", "127.0.0.1", "localhost:9", "LOCALHOST", "app.localhost:1", "10.1.2.3:80",
                         "[::1]:8080", "[fe80::2]", "localhost."}) {
    EXPECT_TRUE(d.host_allowed(ok)) << ok;
  }
  for (const char* bad : {"attacker.example", "attacker.example:8080", "localhost.attacker.example", "127.0.0.1.nip.io",
                          "llmserve", "[not-an-ip]:80"}) {
    EXPECT_FALSE(d.host_allowed(bad)) << bad;
  }
  const BrowserPolicy named = policy(" llm.example.com, .corp.example ", "");
  EXPECT_TRUE(named.host_allowed("llm.example.com"));
  EXPECT_TRUE(named.host_allowed("LLM.example.com:443"));
  EXPECT_TRUE(named.host_allowed("corp.example"));
  EXPECT_TRUE(named.host_allowed("a.b.corp.example:8000"));
  EXPECT_FALSE(named.host_allowed("evilcorp.example"));
  EXPECT_FALSE(named.host_allowed("example.com"));
  EXPECT_TRUE(policy("*", "").host_allowed("anything.example"));
  // The bound host is allowed when it is a name-less address too (any IP is).
  EXPECT_TRUE(policy("", "", "0.0.0.0").host_allowed("192.168.1.5:8000"));

  const auto e = d.check_host(request("GET", {{"host", "attacker.example:8080"}}));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->status, 403);
  EXPECT_EQ(e->code, "host_not_allowed");
  EXPECT_NE(e->message.find("allowed_hosts"), std::string::npos);
  EXPECT_FALSE(d.check_host(request("GET", {})).has_value());  // HTTP/1.0 without Host: not a browser
}

TEST(BrowserPolicyTest, OriginOfStateChangingRequests) {
  const BrowserPolicy d = policy("", "https://app.example.com");
  const HttpHeaders own = {{"host", "127.0.0.1:8080"}, {"origin", "http://127.0.0.1:8080"}};
  EXPECT_FALSE(d.check_origin(request("POST", own)).has_value());
  EXPECT_FALSE(d.check_origin(request("POST", {{"host", "127.0.0.1:8080"}})).has_value());  // no Origin: not a browser
  EXPECT_FALSE(d.check_origin(request("POST", {{"host", "x"}, {"origin", "https://app.example.com"}})).has_value());
  for (const char* bad : {"http://attacker.example", "null", "http://127.0.0.1:9999", "https://app.example.com.evil"}) {
    const auto e = d.check_origin(request("POST", {{"host", "127.0.0.1:8080"}, {"origin", bad}}));
    ASSERT_TRUE(e.has_value()) << bad;
    EXPECT_EQ(e->status, 403) << bad;
    EXPECT_EQ(e->code, "origin_not_allowed") << bad;
    EXPECT_FALSE(d.check_origin(request("GET", {{"host", "127.0.0.1:8080"}, {"origin", bad}})).has_value()) << bad;
  }
  EXPECT_TRUE(d.check_origin(request("DELETE", {{"origin", "http://attacker.example"}})).has_value());
}

TEST(BrowserPolicyTest, CorsIsOffByDefaultAndAnswersOnlyItsOrigins) {
  const HttpHeaders pre = {{"origin", "https://app.example.com"}, {"access-control-request-method", "POST"}};
  const auto off = policy("", "").preflight(request("OPTIONS", pre));
  ASSERT_TRUE(off.has_value());
  EXPECT_EQ(off->status, 403);
  EXPECT_FALSE(policy("", "").cors_origin("https://app.example.com"));

  const BrowserPolicy on = policy("", "https://app.example.com/, http://localhost:3000");
  const auto yes = on.preflight(request("OPTIONS", pre));
  ASSERT_TRUE(yes.has_value());
  EXPECT_EQ(yes->status, 204);
  bool allow_origin = false;
  for (const auto& [k, v] : yes->headers) allow_origin |= k == "Access-Control-Allow-Origin" && v == "https://app.example.com";
  EXPECT_TRUE(allow_origin);
  EXPECT_FALSE(on.preflight(request("OPTIONS", {{"origin", "https://app.example.com"}})).has_value());  // not a preflight
  EXPECT_EQ(on.preflight(request("OPTIONS", {{"origin", "https://other.example"}, {"access-control-request-method", "POST"}}))
                ->status,
            403);
  EXPECT_TRUE(on.cors_origin("http://localhost:3000"));
  EXPECT_TRUE(policy("", "*").cors_origin("https://any.example"));
}

TEST(BrowserPolicyTest, BadSettingsNameTheKey) {
  ServerConfig c;
  c.allowed_hosts = "https://llm.example.com";
  EXPECT_NE(validate_browser_settings(c).message().find("allowed_hosts"), std::string::npos);
  c.allowed_hosts = "llm.example.com:8080";
  EXPECT_FALSE(validate_browser_settings(c).ok());
  c.allowed_hosts = "";
  c.cors_origins = "app.example.com";
  EXPECT_NE(validate_browser_settings(c).message().find("cors_origins"), std::string::npos);
  c.cors_origins = "https://app.example.com/path";
  EXPECT_FALSE(validate_browser_settings(c).ok());
  c.cors_origins = "https://app.example.com, *";
  EXPECT_TRUE(validate_browser_settings(c).ok());
}

TEST(BrowserPolicyTest, JsonContentType) {
  for (const char* ok : {"application/json", "Application/JSON", "application/json; charset=utf-8", " application/json "}) {
    EXPECT_TRUE(is_json_content_type(ok)) << ok;
  }
  for (const char* bad : {"", "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
                          "application/jsonx", "text/json"}) {
    EXPECT_FALSE(is_json_content_type(bad)) << bad;
  }
}

}  // namespace
}  // namespace llms
