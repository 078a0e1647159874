// Random requests through the precision router over two variants of a real
// (generated) model — its F32 weights and the same quantized to Q8_0 — with early exit
// on for a share of the greedy ones, random sampling, priorities, cancellations and
// timeouts, on small KV pools. Each request must end exactly once, both pools must
// return to empty, and every completed output must equal its reference built from
// solo runs: the cheap variant's tokens up to where its entropies (replayed through
// the same watch) move the request, then the precise variant's continuation of the
// prompt and those tokens (a cut-short request: a prefix of it).
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>

#include "base/random.h"
#include "engine/engine.h"
#include "engine/testing/engine_test_util.h"
#include "serving/precision_router.h"
#include "model/model.h"
#include "tools/quantizer.h"
#include "tools/synthetic.h"

namespace llms {
namespace {

using testing::collect;
using testing::collect_more;
using testing::Collected;

struct Models {
  std::unique_ptr<Model> best, cheap;
  std::unique_ptr<Tokenizer> tokenizer;
};

Models& models() {
  static Models m;
  if (!m.best) {
    const std::string path = testing::write_tiny_model(2, 7, "precision_property");
    m.best = Model::load(path).value();
    m.cheap = quantized_model(path, DType::kQ8_0, 1).value();
    m.tokenizer = Tokenizer::from_gguf(m.best->file()).value();
    std::remove(path.c_str());  // the mappings keep the data
  }
  return m;
}

constexpr double kExitThreshold = 0.0033;  // as the engine property test: a share of tokens exit

std::unique_ptr<Engine> make_engine(const Model& model, int32_t blocks, EngineConfig c) {
  c.threads = 1;
  c.kv.block_size = 8;
  c.early_exit.layers = {1};
  c.early_exit.threshold = kExitThreshold;
  c.result_cache_bytes = 0;
  auto runner =
      std::make_unique<LocalModelRunner>(model, model.kv_config(blocks, c.kv.block_size, c.kv.k_type, c.kv.v_type),
                                         c.threads);
  return std::make_unique<Engine>(std::move(runner), *models().tokenizer, c, model.identity(), blocks, 64);
}

RequestParams random_request(Rng& rng, int vocab) {
  RequestParams p;
  const int len = 1 + static_cast<int>(rng.below(30));
  for (int i = 0; i < len; ++i) p.prompt.push_back(static_cast<int32_t>(3 + rng.below(vocab - 3)));
  p.max_tokens = 1 + static_cast<int>(rng.below(16));
  p.priority = static_cast<int>(rng.below(3));
  p.ignore_eos = true;
  if (rng.below(4) == 0) {
    p.sampling.temperature = 0.9f;
    p.sampling.seed = rng.next_u64();
  } else {
    p.sampling.temperature = 0.0f;
  }
  if (rng.below(10) == 0) p.timeout_s = 0.005 + rng.uniform() * 0.05;
  p.early_exit = rng.below(2) == 0;
  return p;
}

// Solo run of `p` on a fresh roomy engine over `model`: its tokens and entropies.
struct Solo {
  std::vector<int32_t> tokens;
  std::vector<float> entropy;
};
Solo solo_run(const Model& model, RequestParams p) {
  EngineConfig c;
  c.batching.policy = BatchingPolicy::kNone;
  static std::map<const Model*, std::unique_ptr<Engine>> engines;
  auto& e = engines[&model];
  if (!e) e = make_engine(model, 64, c);
  p.timeout_s = 0;
  p.report_entropy = true;
  auto h = e->submit(p);
  EXPECT_TRUE(h.ok());
  e->run_until_idle();
  Solo s;
  for (auto& ev : (*h)->drain()) {
    if (auto* t = std::get_if<TokenEvent>(&ev)) s.tokens.push_back(t->token), s.entropy.push_back(t->entropy);
  }
  return s;
}

TEST(PrecisionPropertyTest, RandomRoutedWorkloadEndsOnceFreesEverythingAndMatchesSoloRuns) {
  Models& m = models();
  // The bound: the median first-token entropy of a few cheap solo runs, so that a
  // share of requests moves and a share does not (the model's random weights give
  // nearly flat distributions; their spread, not their level, is what matters).
  Rng probe(4321);
  std::vector<float> first;
  for (int i = 0; i < 31; ++i) {
    RequestParams p = random_request(probe, m.best->config().n_vocab);
    p.sampling.temperature = 0.0f;
    first.push_back(solo_run(*m.cheap, p).entropy.front());
  }
  std::nth_element(first.begin(), first.begin() + 15, first.end());
  PrecisionPolicy policy;
  policy.prompt_max = {20};
  policy.max_tokens_max = {12};
  policy.entropy_bound = first[15];
  policy.window = 2;

  EngineConfig c;
  c.batching.max_batch_tokens = 48;
  c.batching.max_running = 6;
  c.admission.kv_high = c.admission.kv_low = 1.0;
  auto cheap = make_engine(*m.cheap, 12, c);
  auto best = make_engine(*m.best, 12, c);
  testing::ManualClock clock;
  cheap->set_clock(clock.fn());
  best->set_clock(clock.fn());
  Registry registry;
  PrecisionRouter router({{"q8_0", cheap.get(), 1}, {"f32", best.get(), 4}}, policy, registry);

  Rng rng(2468);
  const int kRequests = 600;
  std::vector<RequestParams> params;
  std::vector<std::string> precisions;
  std::vector<std::shared_ptr<RequestHandle>> handles;
  std::map<size_t, Collected> results;
  std::vector<size_t> open;
  int submitted = 0;
  while (submitted < kRequests || !open.empty()) {
    if (submitted < kRequests && rng.below(4) == 0) {
      ++submitted;
      RequestParams p = random_request(rng, m.best->config().n_vocab);
      // Two in three on auto; the rest pinned to one variant or the other.
      const uint64_t pick = rng.below(6);
      const std::string precision = pick < 4 ? "auto" : pick == 4 ? "q8_0" : "f32";
      auto h = router.submit(p, {precision});
      if (h.ok()) {
        params.push_back(p);
        precisions.push_back(precision);
        handles.push_back(*h);
        open.push_back(handles.size() - 1);
      } else {
        ASSERT_EQ(h.status().code(), StatusCode::kResourceExhausted) << h.status().to_string();
      }
    }
    if (!open.empty() && rng.below(25) == 0) handles[open[rng.below(open.size())]]->cancel();
    cheap->step();
    best->step();
    clock.advance_ms(1);
    std::erase_if(open, [&](size_t i) { return collect_more(*handles[i], results[i]); });
  }
  // Both pools are empty once the cancelled inner requests have been reaped.
  for (int i = 0; i < 4; ++i) cheap->step(), best->step();
  EXPECT_EQ(cheap->snapshot().kv_blocks_used, 0);
  EXPECT_EQ(best->snapshot().kv_blocks_used, 0);
  EXPECT_EQ(cheap->snapshot().running + cheap->snapshot().waiting, 0);
  const auto counts = router.counts();
  std::printf("routed: %lld cheap, %lld precise first; %lld fallbacks\n", static_cast<long long>(counts.requests[0]),
              static_cast<long long>(counts.requests[1]), static_cast<long long>(counts.fallbacks));
  EXPECT_GT(counts.requests[0], 0);
  EXPECT_GT(counts.requests[1], 0);
  EXPECT_GT(counts.fallbacks, 0) << "no request moved: the property says nothing about fallbacks";

  std::map<FinishReason, int> reasons;
  int moved = 0;
  for (size_t i = 0; i < handles.size(); ++i) {
    const auto& r = results[i];
    ASSERT_EQ(r.finish_count + collect(*handles[i]).finish_count, 1) << "request " << i;
    reasons[r.finish.reason]++;
    const RequestParams& p = params[i];
    // The reference: where the router sends it first, and where the watch moves it.
    int v = precisions[i] == "f32" ? 1 : 0;
    if (precisions[i] == "auto") {
      v = choose_precision_variant(policy, static_cast<int64_t>(p.prompt.size()), p.max_tokens, 2);
    }
    std::vector<int32_t> expect;
    if (v == 1) {
      expect = solo_run(*m.best, p).tokens;
    } else {
      const Solo low = solo_run(*m.cheap, p);
      size_t k = low.tokens.size();
      if (precisions[i] == "auto") {
        EntropyWatch watch(policy.entropy_bound, policy.window);
        for (size_t j = 0; j < low.tokens.size(); ++j) {
          if (watch.push(low.entropy[j])) {
            k = j;
            break;
          }
        }
      }
      expect.assign(low.tokens.begin(), low.tokens.begin() + static_cast<std::ptrdiff_t>(k));
      if (k < low.tokens.size()) {
        ++moved;
        RequestParams rest = p;
        rest.prompt.insert(rest.prompt.end(), expect.begin(), expect.end());
        rest.max_tokens -= static_cast<int>(k);
        const Solo high = solo_run(*m.best, rest);
        expect.insert(expect.end(), high.tokens.begin(), high.tokens.end());
      }
    }
    ASSERT_EQ(static_cast<int64_t>(r.tokens.size()), r.finish.completion_tokens) << "request " << i;
    if (r.finish.reason == FinishReason::kLength) {
      ASSERT_EQ(r.tokens, expect) << "request " << i << " (" << precisions[i] << ")";
    } else {
      ASSERT_LE(r.tokens.size(), expect.size()) << "request " << i;
      ASSERT_TRUE(std::equal(r.tokens.begin(), r.tokens.end(), expect.begin())) << "request " << i;
    }
  }
  EXPECT_GT(moved, 0);
  EXPECT_GT(reasons[FinishReason::kLength], static_cast<int>(handles.size()) / 2);
  EXPECT_GT(reasons[FinishReason::kCancelled], 0);
}

}  // namespace
}  // namespace llms
