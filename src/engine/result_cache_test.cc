#include "engine/result_cache.h"

#include <gtest/gtest.h>

#include "engine/testing/engine_test_util.h"

namespace llms {
namespace {

RequestParams greedy(std::vector<int32_t> prompt) {
  RequestParams p;
  p.prompt = std::move(prompt);
  p.max_tokens = 4;
  p.sampling.temperature = 0;
  return p;
}

TEST(ResultCacheTest, OnlyDeterministicRequestsHaveKeys) {
  const Hash128 model{1, 2};
  EXPECT_TRUE(ResultCache::key_for(model, greedy({1, 2})).has_value());
  RequestParams sampled = greedy({1, 2});
  sampled.sampling.temperature = 0.7f;
  EXPECT_FALSE(ResultCache::key_for(model, sampled).has_value());
  sampled.sampling.seed = 5;
  EXPECT_TRUE(ResultCache::key_for(model, sampled).has_value());
  // Every parameter that changes the output changes the key.
  const auto base = *ResultCache::key_for(model, greedy({1, 2}));
  EXPECT_NE(base, *ResultCache::key_for(Hash128{1, 3}, greedy({1, 2})));
  EXPECT_NE(base, *ResultCache::key_for(model, greedy({1, 3})));
  RequestParams more = greedy({1, 2});
  more.max_tokens = 5;
  EXPECT_NE(base, *ResultCache::key_for(model, more));
  RequestParams stop = greedy({1, 2});
  stop.stop = {"x"};
  EXPECT_NE(base, *ResultCache::key_for(model, stop));
  RequestParams seeded = sampled;
  seeded.sampling.seed = 6;
  EXPECT_NE(*ResultCache::key_for(model, sampled), *ResultCache::key_for(model, seeded));
}

TEST(ResultCacheTest, LruBoundedInBytes) {
  CachedCompletion c;
  c.tokens.resize(10);
  const int64_t each = c.bytes();
  ResultCache cache(each * 2 + each / 2);  // room for two
  cache.insert({1, 0}, c);
  cache.insert({2, 0}, c);
  EXPECT_TRUE(cache.lookup({1, 0}).has_value());  // 1 is now the most recent
  cache.insert({3, 0}, c);                        // evicts 2
  EXPECT_FALSE(cache.lookup({2, 0}).has_value());
  EXPECT_TRUE(cache.lookup({1, 0}).has_value());
  EXPECT_TRUE(cache.lookup({3, 0}).has_value());
  const auto st = cache.stats();
  EXPECT_EQ(st.entries, 2);
  EXPECT_LE(st.bytes, each * 2 + each / 2);
  EXPECT_EQ(st.hits, 3);
  EXPECT_EQ(st.misses, 1);
}

TEST(ResultCacheTest, EngineReplaysDeterministicAndNeverSampled) {
  EngineConfig config;
  auto runner = std::make_unique<testing::FakeRunner>();
  auto* fake = runner.get();
  Engine engine(std::move(runner), testing::synthetic_tokenizer(), config, Hash128{4, 4}, 32, 256);
  auto req = testing::greedy_request({10, 11, 12}, 5);
  EXPECT_FALSE(engine.cached(req).has_value());
  auto h = engine.submit(req);
  engine.run_until_idle();
  const auto first = testing::collect(**h);
  const size_t calls = fake->calls.size();
  const auto hit = engine.cached(req);
  ASSERT_TRUE(hit.has_value());
  std::vector<int32_t> replayed;
  for (const auto& t : hit->tokens) replayed.push_back(t.token);
  EXPECT_EQ(replayed, first.tokens);
  EXPECT_EQ(hit->finish.reason, first.finish.reason);
  EXPECT_EQ(fake->calls.size(), calls);  // no model work
  RequestParams sampled = req;
  sampled.sampling.temperature = 1.0f;
  auto s = engine.submit(sampled);
  engine.run_until_idle();
  EXPECT_FALSE(engine.cached(sampled).has_value());
  const auto st = engine.result_cache_stats();
  EXPECT_EQ(st.hits, 1);
  EXPECT_GT(st.seconds_saved, 0.0);  // the original run took real time
}

}  // namespace
}  // namespace llms
