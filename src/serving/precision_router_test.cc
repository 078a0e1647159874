#include "serving/precision_router.h"

#include <gtest/gtest.h>

#include <cmath>

#include "engine/testing/engine_test_util.h"

namespace llms {
namespace {

using testing::FakeRunner;

// The fake chain (FakeRunner::next), but rows at positions >= soft_from are a
// spread-out distribution (high entropy) with the same top token: greedy decoding
// gives the same tokens on every variant, and only the entropy tells them apart.
class SoftFromRunner : public FakeRunner {
 public:
  explicit SoftFromRunner(int64_t soft_from) : soft_from_(soft_from) {}
  Status forward(std::span<const SequenceChunk> chunks, ForwardOutput& out) override {
    LLMS_RETURN_IF_ERROR(FakeRunner::forward(chunks, out));
    for (size_t i = 0; i < chunks.size(); ++i) {
      const auto& c = chunks[i];
      if (out.first_row[i] < 0) continue;
      const size_t n = c.tokens.size();
      int64_t row = out.first_row[i];
      for (size_t j = c.logits == LogitsWanted::kAll ? 0 : n - 1; j < n; ++j, ++row) {
        const int64_t pos = c.start_pos + static_cast<int64_t>(j);
        if (pos < soft_from_) continue;
        std::vector<float> soft_row;
        FakeRunner soft_maker;
        soft_maker.soft = true;
        soft_maker.append_row(c.tokens[j], pos, soft_row);
        std::copy(soft_row.begin(), soft_row.end(), out.logits.begin() + row * testing::kFakeVocab);
      }
    }
    return ok_status();
  }

 private:
  int64_t soft_from_;
};

struct Variants {
  std::unique_ptr<Engine> cheap, best;
  Registry registry;
  std::unique_ptr<PrecisionRouter> router;

  // The cheap variant turns uncertain from position `soft_from`; the best one never.
  Variants(int64_t soft_from, PrecisionPolicy policy) {
    EngineConfig c;
    cheap = std::make_unique<Engine>(std::make_unique<SoftFromRunner>(soft_from), testing::synthetic_tokenizer(), c,
                                     Hash128{1, 1}, 64, 512);
    best = std::make_unique<Engine>(std::make_unique<FakeRunner>(), testing::synthetic_tokenizer(), c, Hash128{2, 2},
                                    64, 512);
    router = std::make_unique<PrecisionRouter>(
        std::vector<PrecisionVariant>{{"q4_k", cheap.get(), 100}, {"f16", best.get(), 400}}, policy, registry);
  }
  // Manual mode: steps both engines until `h` ends (the notify runs on this thread).
  void run(RequestHandle& h) {
    for (int i = 0; i < 1000 && !h.finished(); ++i) {
      cheap->step();
      best->step();
    }
  }
};

PrecisionPolicy two_tiers(int prompt_max, int max_tokens_max, double bound, int window) {
  PrecisionPolicy p;
  p.prompt_max = {prompt_max};
  p.max_tokens_max = {max_tokens_max};
  p.entropy_bound = bound;
  p.window = window;
  return p;
}

// The chain FakeRunner decodes greedily after `prompt`.
std::vector<int32_t> chain(const std::vector<int32_t>& prompt, int n) {
  std::vector<int32_t> out;
  int32_t last = prompt.back();
  for (int i = 0; i < n; ++i) {
    last = FakeRunner::next(last, static_cast<int64_t>(prompt.size()) - 1 + i);
    out.push_back(last);
  }
  return out;
}

TEST(PrecisionRouterTest, FallbackMovesUpAndTheStreamContinuesUnbroken) {
  const std::vector<int32_t> prompt = {1, 10, 20, 30};  // positions 0..3
  // Rows at positions 3, 4, 5 are certain on the cheap variant; from 6 on uncertain
  // (entropy of softmax(2, 1, 0, -1) = 1.01 nats > 0.5): the fourth token falls back.
  Variants v(6, two_tiers(16, 16, 0.5, 1));
  auto h = v.router->submit(testing::greedy_request(prompt, 10), {"auto"});
  ASSERT_TRUE(h.ok()) << h.status().to_string();
  v.run(**h);
  const auto c = testing::collect(**h);
  ASSERT_TRUE(c.finished);
  EXPECT_EQ(c.finish_count, 1);
  EXPECT_EQ(c.tokens, chain(prompt, 10));  // as one engine would have decoded it
  EXPECT_EQ(c.finish.reason, FinishReason::kLength);
  EXPECT_EQ(c.finish.prompt_tokens, 4);
  EXPECT_EQ(c.finish.completion_tokens, 10);
  const auto counts = v.router->counts();
  EXPECT_EQ(counts.fallbacks, 1);
  EXPECT_EQ(counts.requests, (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(counts.tokens, (std::vector<int64_t>{3, 7}));
  const std::string m = v.registry.render();
  EXPECT_NE(m.find("llmserve_precision_fallbacks_total{from=\"q4_k\",to=\"f16\"} 1"), std::string::npos) << m;
  EXPECT_NE(m.find("llmserve_precision_tokens_total{variant=\"f16\"} 7"), std::string::npos) << m;
  // Work: the cheap variant read its weights (100 bytes) for 4 prompt tokens, 3
  // emitted and 1 redone; the best one (400) for 4 + 3 recomputed and 7 emitted.
  EXPECT_NE(m.find("llmserve_precision_weight_bytes_total{variant=\"q4_k\"} 800"), std::string::npos) << m;
  EXPECT_NE(m.find("llmserve_precision_weight_bytes_total{variant=\"f16\"} 5600"), std::string::npos) << m;
  // The share: 5600 / 6400.
  EXPECT_NE(m.find("llmserve_precision_compute_share{variant=\"f16\"} 0.875"), std::string::npos) << m;
  // The old variant's request ended (cancelled) and let its KV go.
  EXPECT_EQ(v.cheap->snapshot().running, 0);
  EXPECT_EQ(v.cheap->snapshot().kv_blocks_used, 0);
}

TEST(PrecisionRouterTest, EntropyIsPassedOnOnlyWhenAsked) {
  const std::vector<int32_t> prompt = {1, 10, 20, 30};
  Variants v(2, two_tiers(16, 16, 0.0, 1));  // uncertain throughout; no fallback
  auto plain = v.router->submit(testing::greedy_request(prompt, 3), {"auto"});
  auto asked_params = testing::greedy_request(prompt, 3);
  asked_params.report_entropy = true;
  auto asked = v.router->submit(asked_params, {"auto"});
  ASSERT_TRUE(plain.ok() && asked.ok());
  v.run(**plain);
  v.run(**asked);
  // The entropy of softmax(2, 1, 0, -1), by hand (the other 296 logits at -30 add ~1e-10).
  const double z = std::exp(2.0) + std::exp(1.0) + 1.0 + std::exp(-1.0);
  double expect = 0;
  for (double l : {2.0, 1.0, 0.0, -1.0}) expect -= std::exp(l) / z * (l - std::log(z));
  for (auto& e : (*plain)->drain()) {
    if (auto* t = std::get_if<TokenEvent>(&e)) {
      EXPECT_EQ(t->entropy, -1.0f);
    }
  }
  int seen = 0;
  for (auto& e : (*asked)->drain()) {
    if (auto* t = std::get_if<TokenEvent>(&e)) {
      EXPECT_NEAR(t->entropy, expect, 1e-3);
      ++seen;
    }
  }
  EXPECT_EQ(seen, 3);
  EXPECT_EQ(v.router->counts().fallbacks, 0);
}

TEST(PrecisionRouterTest, EstimatorRoutesByPromptLengthAndMaxTokens) {
  Variants v(1000, two_tiers(4, 8, 0.5, 2));
  const std::vector<int32_t> short_prompt = {1, 5, 6, 7};
  const std::vector<int32_t> long_prompt = {1, 5, 6, 7, 8, 9};
  auto a = v.router->submit(testing::greedy_request(short_prompt, 8), {""});
  auto b = v.router->submit(testing::greedy_request(long_prompt, 8), {"auto"});
  auto c = v.router->submit(testing::greedy_request(short_prompt, 9), {"auto"});
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  for (auto* h : {&a, &b, &c}) v.run(***h);
  EXPECT_EQ(v.router->counts().requests, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(testing::collect(**b).tokens, chain(long_prompt, 8));
}

TEST(PrecisionRouterTest, APinnedVariantStaysPutAndAnUnknownOneIsRefused) {
  const std::vector<int32_t> prompt = {1, 10, 20, 30};
  Variants v(0, two_tiers(16, 16, 0.5, 1));  // uncertain everywhere
  auto h = v.router->submit(testing::greedy_request(prompt, 5), {"q4_k"});
  ASSERT_TRUE(h.ok());
  v.run(**h);
  EXPECT_EQ(testing::collect(**h).tokens, chain(prompt, 5));
  EXPECT_EQ(v.router->counts().fallbacks, 0);
  EXPECT_EQ(v.router->counts().tokens, (std::vector<int64_t>{5, 0}));
  auto bad = v.router->submit(testing::greedy_request(prompt, 5), {"q2_k"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("auto, q4_k, f16"), std::string::npos) << bad.status().message();
}

TEST(PrecisionRouterTest, CancellingTheClientsHandleEndsTheInnerRequest) {
  Variants v(1000, two_tiers(16, 16, 0.5, 1));
  auto h = v.router->submit(testing::greedy_request({1, 10, 20}, 50), {"auto"});
  ASSERT_TRUE(h.ok());
  v.cheap->step();  // prefill and the first token
  (*h)->cancel();
  v.run(**h);
  const auto c = testing::collect(**h);
  ASSERT_TRUE(c.finished);
  EXPECT_EQ(c.finish.reason, FinishReason::kCancelled);
  EXPECT_EQ(c.finish.completion_tokens, static_cast<int64_t>(c.tokens.size()));
  EXPECT_EQ(v.cheap->snapshot().kv_blocks_used, 0);
}

}  // namespace
}  // namespace llms
