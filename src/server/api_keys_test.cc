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

TEST(ApiKeysTest, WhichPathsAndWhichHeaders) {
  auto keys = ApiKeys::from_keys({"k1", "k2"}, /*protect_metrics=*/false);
  ASSERT_TRUE(keys.ok());
  const ApiKeys& k = keys.value();
  for (const char* p : {"/v1/completions", "/v1/models/x", "/v1/stats", "/tokenize", "/detokenize", "/other", "/ui",
                        "/uix/a.js"}) {
    EXPECT_TRUE(k.protects(p)) << p;
  }
  // The probes, the scrape, and the dashboard's files (the page sends the key itself).
  for (const char* p : {"/health", "/ready", "/metrics", "/", "/ui/index.html", "/ui/assets/index-1.js"}) {
    EXPECT_FALSE(k.protects(p)) << p;
  }
  EXPECT_TRUE(ApiKeys::from_keys({"k"}, true).value().protects("/metrics"));
  EXPECT_FALSE(ApiKeys().protects("/v1/completions"));

  EXPECT_FALSE(k.check("Bearer k1").has_value());
  EXPECT_FALSE(k.check("bearer   k2 ").has_value());
  EXPECT_FALSE(k.check("BEARER k2").has_value());
  const auto missing = k.check("");
  ASSERT_TRUE(missing.has_value());
  EXPECT_EQ(missing->status, 401);
  EXPECT_EQ(missing->code, "");
  for (const char* bad : {"Bearer k3", "Bearer k", "Bearer k1k1", "Bearer ", "Basic azE6", "k1"}) {
    const auto e = k.check(bad);
    ASSERT_TRUE(e.has_value()) << bad;
    EXPECT_EQ(e->status, 401) << bad;
  }
  EXPECT_EQ(k.check("Bearer nope")->code, "invalid_api_key");
  EXPECT_FALSE(ApiKeys::from_keys({"has space"}, false).ok());
  EXPECT_FALSE(ApiKeys::from_keys({"\x01"}, false).ok());
}

}  // namespace
}  // namespace llms
