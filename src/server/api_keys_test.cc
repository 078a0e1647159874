#include "server/api_keys.h"

#include <gtest/gtest.h>

#include "base/constant_time.h"

namespace llms {
namespace {

TEST(ApiKeysTest, ConstantTimeEqualIsPlainEqualityOfNonEmptyKeys) {
  EXPECT_TRUE(constant_time_equal("sk-abc", "sk-abc"));
  EXPECT_FALSE(constant_time_equal("sk-ab", "sk-abc"));
  EXPECT_FALSE(constant_time_equal("sk-abcd", "sk-abc"));
  EXPECT_FALSE(constant_time_equal("sk-abd", "sk-abc"));
  EXPECT_FALSE(constant_time_equal("sk-abcsk-abc", "sk-abc"));  // the key repeated is not the key
  EXPECT_FALSE(constant_time_equal("", ""));
  EXPECT_FALSE(constant_time_equal("x", ""));
  EXPECT_FALSE(constant_time_equal("", "x"));
}

const char* const kK1 = "k1-0123456789abcdef";
const char* const kK2 = "k2-0123456789abcdef";

TEST(ApiKeysTest, WhichPathsAndWhichHeaders) {
  auto keys = ApiKeys::from_keys({kK1, kK2}, /*protect_metrics=*/false);
  ASSERT_TRUE(keys.ok());
  const ApiKeys& k = keys.value();
  for (const char* p : {"/v1/completions", "/v1/models/x", "/v1/stats", "/tokenize", "/detokenize", "/other", "/ui",
                        "/uix/a.js"}) {
    EXPECT_TRUE(k.protects(p)) << p;
  }
  // The probes, the scrape, the dashboard's files (the page sends the key itself), and
  // the admin API (its own token guards it).
  for (const char* p : {"/health", "/ready", "/metrics", "/", "/ui/index.html", "/ui/assets/index-1.js",
                        "/admin/versions", "/admin/deploy"}) {
    EXPECT_FALSE(k.protects(p)) << p;
  }
  EXPECT_TRUE(ApiKeys::from_keys({kK1}, true).value().protects("/metrics"));
  EXPECT_FALSE(ApiKeys().protects("/v1/completions"));

  EXPECT_FALSE(k.check(std::string("Bearer ") + kK1).has_value());
  EXPECT_FALSE(k.check(std::string("bearer   ") + kK2 + " ").has_value());
  EXPECT_FALSE(k.check(std::string("BEARER ") + kK2).has_value());
  const auto missing = k.check("");
  ASSERT_TRUE(missing.has_value());
  EXPECT_EQ(missing->status, 401);
  EXPECT_EQ(missing->code, "");
  const std::string k1 = kK1;
  for (const std::string& bad : {std::string("Bearer k3-0123456789abcdef"), "Bearer " + k1.substr(0, 18),
                                 "Bearer " + k1 + k1, std::string("Bearer "), std::string("Basic azE6"), k1}) {
    const auto e = k.check(bad);
    ASSERT_TRUE(e.has_value()) << bad;
    EXPECT_EQ(e->status, 401) << bad;
  }
  EXPECT_EQ(k.check("Bearer nope")->code, "invalid_api_key");
  EXPECT_FALSE(ApiKeys::from_keys({"has space-0123456789"}, false).ok());
  EXPECT_FALSE(ApiKeys::from_keys({"\x01-0123456789abcdef"}, false).ok());
  EXPECT_TRUE(k.contains(kK2));
  EXPECT_FALSE(k.contains("k3-0123456789abcdef"));
}

TEST(ApiKeysTest, ShortKeysAreRefusedWithoutBeingEchoed) {
  for (const char* short_key : {"Q", "sk-1", "fifteen-chars-x"}) {
    const auto r = ApiKeys::from_keys({short_key}, false);
    ASSERT_FALSE(r.ok()) << short_key;
    EXPECT_NE(r.status().message().find("at least 16 characters"), std::string::npos) << r.status().message();
    EXPECT_EQ(r.status().message().find(short_key), std::string::npos) << r.status().message();
  }
  EXPECT_TRUE(ApiKeys::from_keys({"sixteen-chars-xx"}, false).ok());
}

TEST(ApiKeysTest, BearerCredential) {
  EXPECT_EQ(bearer_credential("Bearer abc"), "abc");
  EXPECT_EQ(bearer_credential(" bearer \tabc "), "abc");
  EXPECT_EQ(bearer_credential("Bearer "), "");
  EXPECT_EQ(bearer_credential("Basic abc"), "");
  EXPECT_EQ(bearer_credential("abc"), "");
}

}  // namespace
}  // namespace llms
