// Early exit in the engine (early_exit_policy.h) on stories260K, a real model whose
// middle layers are confident often enough to exit: who takes part, the exit metric,
// preemption and the prefix cache around exited tokens, and bad settings.
#include <unistd.h>

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <filesystem>

#include "engine/early_exit_policy.h"
#include "engine/engine.h"
#include "engine/testing/engine_test_util.h"
#include "model/model.h"

namespace llms {
namespace {

using testing::collect;
using testing::Collected;

const std::string kStories = std::string(LLMSERVE_SHARED_DIR) + "/models/stories260K.gguf";
// "Once upon a time" with BOS (the tokens of the shared README's greedy story).
const std::vector<int32_t> kPrompt = {1, 403, 407, 261, 378};
// "Once upon a time, there was a little girl named Lily. She loved to play outside":
// more than a KV block of 16.
const std::vector<int32_t> kLongPrompt = {1,   403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315, 421,
                                          395, 317, 426, 338, 401, 396, 267, 337, 410, 408, 419, 292, 411};

struct Fixture {
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tokenizer;
};

Fixture& fixture() {
  static Fixture f;
  if (!f.model) {
    f.model = Model::load(kStories).value();
    f.tokenizer = Tokenizer::from_gguf(f.model->file()).value();
  }
  return f;
}

EngineConfig exit_config(double threshold) {
  EngineConfig c;
  c.threads = 1;
  c.early_exit.layers = {2, 3, 4};
  c.early_exit.threshold = threshold;
  return c;
}

// Runs each request alone to the end on a fresh engine with `c` (kv_blocks: 0 = sized by
// the config; else a pool that small, built by hand).
std::vector<Collected> run_all(EngineConfig c, const std::vector<RequestParams>& requests, Engine** keep = nullptr,
                               int32_t kv_blocks = 0) {
  Fixture& f = fixture();
  static std::unique_ptr<Engine> last;
  if (kv_blocks == 0) {
    last = Engine::create(*f.model, *f.tokenizer, c).value();
  } else {
    auto runner = std::make_unique<LocalModelRunner>(
        *f.model, f.model->kv_config(kv_blocks, c.kv.block_size, c.kv.k_type, c.kv.v_type), c.threads);
    last = std::make_unique<Engine>(std::move(runner), *f.tokenizer, c, f.model->identity(), kv_blocks, 512);
  }
  std::vector<std::shared_ptr<RequestHandle>> handles;
  for (const auto& p : requests) handles.push_back(last->submit(p).value());
  last->run_until_idle();
  std::vector<Collected> out;
  for (auto& h : handles) out.push_back(collect(*h));
  if (keep) *keep = last.get();
  return out;
}

double counter(Engine& e, const std::string& series) {
  const std::string text = e.registry().render();
  const size_t at = text.find(series + " ");
  return at == std::string::npos ? 0.0 : std::stod(text.substr(at + series.size() + 1));
}

#define NEEDS_STORIES() \
  if (!std::filesystem::exists(kStories)) GTEST_SKIP() << "needs " << kStories

TEST(EarlyExitEngineTest, GreedyRequestsExitAndTheMetricCountsEachToken) {
  NEEDS_STORIES();
  Engine* engine = nullptr;
  const auto got = run_all(exit_config(0.5), {testing::greedy_request(kPrompt, 80)}, &engine);
  ASSERT_EQ(got[0].tokens.size(), 80u);
  double exited = 0;
  for (const char* l : {"2", "3", "4"}) exited += counter(*engine, fmt::format("llmserve_early_exit_tokens_total{{layer=\"{}\"}}", l));
  const double full = counter(*engine, "llmserve_early_exit_tokens_total{layer=\"full\"}");
  EXPECT_GT(exited, 0);
  EXPECT_GT(full, 0);
  EXPECT_EQ(exited + full, 80);  // every generated token, once
}

TEST(EarlyExitEngineTest, OptedOutSampledAndPenalizedRequestsRunFullDepth) {
  NEEDS_STORIES();
  std::vector<RequestParams> requests;
  RequestParams opted_out = testing::greedy_request(kPrompt, 60);
  opted_out.early_exit = false;
  RequestParams sampled = testing::greedy_request(kPrompt, 60);
  sampled.sampling.temperature = 0.8f;
  sampled.sampling.seed = 7;
  RequestParams penalized = testing::greedy_request(kPrompt, 60);
  penalized.sampling.repetition_penalty = 1.1f;
  requests = {opted_out, sampled, penalized};
  EngineConfig plain;
  plain.threads = 1;
  const auto want = run_all(plain, requests);
  Engine* engine = nullptr;
  const auto got = run_all(exit_config(0.3), requests, &engine);
  for (size_t i = 0; i < requests.size(); ++i) EXPECT_EQ(got[i].tokens, want[i].tokens) << "request " << i;
  EXPECT_EQ(counter(*engine, "llmserve_early_exit_tokens_total{layer=\"full\"}"), 0);
  EXPECT_FALSE(early_exit_applies(exit_config(1.0), testing::greedy_request(kPrompt, 1)));  // 1 = never
  EXPECT_TRUE(early_exit_applies(exit_config(0.9), testing::greedy_request(kPrompt, 1)));
}

// A full-depth request whose prompt is an early-exit request's prompt and output must
// not be served the exited tokens' filled keys from the prefix cache.
TEST(EarlyExitEngineTest, FilledKeysNeverReachThePrefixCache) {
  NEEDS_STORIES();
  EngineConfig plain;
  plain.threads = 1;
  const RequestParams first = testing::greedy_request(kLongPrompt, 64);
  const auto exited = run_all(exit_config(0.3), {first});
  RequestParams second = testing::greedy_request(kLongPrompt, 30);
  second.prompt.insert(second.prompt.end(), exited[0].tokens.begin(), exited[0].tokens.end());
  second.early_exit = false;
  const auto want = run_all(plain, {second});
  Fixture& f = fixture();
  auto engine = Engine::create(*f.model, *f.tokenizer, exit_config(0.3)).value();
  auto h1 = engine->submit(first).value();
  engine->run_until_idle();
  EXPECT_EQ(collect(*h1).tokens, exited[0].tokens);
  auto h2 = engine->submit(second).value();
  engine->run_until_idle();
  const Collected got = collect(*h2);
  EXPECT_EQ(got.tokens, want[0].tokens);
  // The prompt's own blocks were shared; the exited part was not.
  EXPECT_GT(got.finish.cached_prompt_tokens, 0);
  EXPECT_LE(got.finish.cached_prompt_tokens, static_cast<int64_t>(kLongPrompt.size()));
}

// Two long early-exit requests on a pool too small for both: one is preempted and
// recomputed (its generated positions with the same exit checks), and both end as
// they do alone. On this model a recompute at full depth happens to give the same
// tokens too (the filled keys are that close), so this checks the engine's handling;
// model/early_exit_test.cc (RecomputingInOneChunkRepeatsEveryDecision) checks that
// the recompute repeats every decision bit for bit.
TEST(EarlyExitEngineTest, PreemptedRequestsContinueAsTheyWouldAlone) {
  NEEDS_STORIES();
  EngineConfig c = exit_config(0.4);
  c.kv.block_size = 8;
  c.admission.kv_high = c.admission.kv_low = 1.0;
  c.result_cache_bytes = 0;
  RequestParams a = testing::greedy_request(kPrompt, 150);
  RequestParams b = testing::greedy_request({1, 403, 407, 261, 378, 13, 306}, 150);
  a.ignore_eos = b.ignore_eos = true;
  const auto alone_a = run_all(c, {a});
  const auto alone_b = run_all(c, {b});
  Engine* engine = nullptr;
  const auto both = run_all(c, {a, b}, &engine, /*kv_blocks=*/30);  // 240 slots for 2 x 157
  EXPECT_GE(engine->snapshot().preemptions, 1);
  EXPECT_EQ(both[0].tokens, alone_a[0].tokens);
  EXPECT_EQ(both[1].tokens, alone_b[0].tokens);
}

TEST(EarlyExitEngineTest, RefusesBadSettings) {
  NEEDS_STORIES();
  Fixture& f = fixture();
  auto refused = [&](EngineConfig c, const std::string& names) {
    const auto e = Engine::create(*f.model, *f.tokenizer, c);
    ASSERT_FALSE(e.ok()) << names;
    EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(e.status().message().find(names), std::string::npos) << e.status().message();
  };
  EngineConfig c = exit_config(0.5);
  c.early_exit.layers = {5};  // stories260K has 5 layers: exit points 1..4
  refused(c, "--exit-layers");
  c.early_exit.layers = {0};
  refused(c, "--exit-layers");
  c.early_exit.layers = {3, 2};
  refused(c, "--exit-layers");
  refused(exit_config(0.0), "--exit-threshold");
  refused(exit_config(1.01), "--exit-threshold");
  c = exit_config(0.5);
  c.early_exit.layers.clear();
  refused(c, "exit_threshold");
}

}  // namespace
}  // namespace llms
