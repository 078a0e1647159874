// Thousands of random requests (random lengths, priorities, lanes, deadlines,
// cancellations, speculative decoding for half of them, early exit for half of the
// greedy ones) through a tiny KV pool on a real (generated) model. Each request must
// end exactly once, the pool must return to empty, and every completed output must
// equal the output of the same request run alone without speculation, with the same
// early-exit settings (a cut-short one: a prefix of it).
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>

#include <map>

#include "base/random.h"
#include "engine/engine.h"
#include "engine/testing/engine_test_util.h"
#include "engine/slo.h"
#include "model/model.h"
#include "tools/synthetic.h"

namespace llms {
namespace {

using testing::collect;
using testing::collect_more;
using testing::Collected;

struct Fixture {
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tokenizer;
};

Fixture& fixture() {
  static Fixture f;
  if (!f.model) {
    const std::string path = testing::write_tiny_model(2, 99, "engine_property");
    f.model = Model::load(path).value();
    f.tokenizer = Tokenizer::from_gguf(f.model->file()).value();
    std::remove(path.c_str());  // the mapping keeps the data
  }
  return f;
}

RequestParams random_request(Rng& rng, int vocab) {
  RequestParams p;
  const int len = 1 + static_cast<int>(rng.below(40));
  for (int i = 0; i < len; ++i) p.prompt.push_back(static_cast<int32_t>(3 + rng.below(vocab - 3)));
  p.max_tokens = 1 + static_cast<int>(rng.below(20));
  p.priority = static_cast<int>(rng.below(4));
  p.lane = rng.below(2) ? Lane::kInteractive : Lane::kBatch;
  p.ignore_eos = true;
  if (rng.below(4) == 0) {
    p.sampling.temperature = 0.9f;
    p.sampling.seed = rng.next_u64();
  } else {
    p.sampling.temperature = 0.0f;
  }
  if (rng.below(8) == 0) p.timeout_s = 0.005 + rng.uniform() * 0.05;
  p.speculative = rng.below(2) == 0;  // half the requests verify proposed tokens
  p.early_exit = rng.below(2) == 0;   // half opt in to early exit (it applies to greedy ones)
  if (rng.below(3) == 0) p.slo = {1 + rng.uniform() * 20, rng.below(2) ? 0.5 + rng.uniform() : 0};  // deadline-first
  return p;
}

// The property model's exit settings: after its first of 2 layers, at a threshold that
// a share of its tokens reach. Its random weights give flat distributions (top
// probabilities of 0.0029..0.0039 over 512 tokens after layer 1), so the threshold is
// low; what the property checks does not depend on the model's confidence.
constexpr double kExitThreshold = 0.0033;

double counter(Engine& e, const std::string& series) {
  const std::string text = e.registry().render();
  const size_t at = text.find(series + " ");
  return at == std::string::npos ? 0.0 : std::stod(text.substr(at + series.size() + 1));
}

std::unique_ptr<Engine> make_engine(EngineConfig c, int32_t blocks) {
  Fixture& f = fixture();
  c.threads = 1;
  c.early_exit.layers = {1};
  c.early_exit.threshold = kExitThreshold;
  auto runner = std::make_unique<LocalModelRunner>(
      *f.model, f.model->kv_config(blocks, c.kv.block_size, c.kv.k_type, c.kv.v_type), c.threads);
  return std::make_unique<Engine>(std::move(runner), *f.tokenizer, c, f.model->identity(), blocks, 64);
}

// Random arrivals, lengths, priorities, lanes, latency targets, sampling, timeouts
// and cancels on a tiny pool: every request ends once, the pool ends empty, and every
// output equals the request's solo run. With `autotune` the budget and cap move under
// it (the ITL target is far below this model's steps, so the tuner cuts them). With
// the dynamic policy the batch tuner moves the batch size and delay instead. With
// `shed`, requests whose TTFT target is forecast to be missed are refused on the way.
void check_random_workload(AutotuneMode autotune, BatchingPolicy batching = BatchingPolicy::kContinuous,
                           bool shed = false) {
  Fixture& f = fixture();
  EngineConfig c;
  c.kv.block_size = 8;
  c.batching.max_batch_tokens = 48;
  c.batching.max_running = 8;
  c.admission.kv_high = c.admission.kv_low = 1.0;
  c.speculative.mode = SpeculativeMode::kNgram;
  c.speculative.ngram_max = 2;
  c.batching.policy = batching;
  c.batching.max_batch_size = 8;
  c.batching.max_delay_ms = 50;  // arrivals come every 4 ms: the tuner waits less for 8
  c.slo.autotune = autotune;
  c.slo.autotune_min_batch_tokens = 8;
  c.slo.interactive.itl_ms = 0.05;
  c.slo.shed = shed;
  auto engine = make_engine(c, /*blocks=*/14);  // 112 token slots for up to 8 sequences of up to 60
  testing::ManualClock clock;
  engine->set_clock(clock.fn());

  Rng rng(12345);
  const int kRequests = 2000;
  std::vector<RequestParams> params;
  std::vector<std::shared_ptr<RequestHandle>> handles;
  std::map<size_t, Collected> results;
  std::vector<size_t> open;  // handles not yet finished
  int submitted = 0, rejected = 0;
  while (submitted < kRequests || !open.empty()) {
    // About one arrival every four steps: roughly what the tiny pool sustains, so the
    // queue stays bounded while the pool stays full.
    if (submitted < kRequests && rng.below(4) == 0) {
      ++submitted;
      RequestParams p = random_request(rng, f.model->config().n_vocab);
      auto h = engine->submit(p);
      if (!h.ok()) {
        ASSERT_EQ(h.status().code(), StatusCode::kResourceExhausted) << h.status().to_string();
        ++rejected;
      } else {
        params.push_back(p);
        handles.push_back(*h);
        open.push_back(handles.size() - 1);
      }
    }
    if (!open.empty() && rng.below(20) == 0) handles[open[rng.below(open.size())]]->cancel();
    engine->step();
    clock.advance_ms(1);
    std::erase_if(open, [&](size_t i) { return collect_more(*handles[i], results[i]); });
  }
  EXPECT_LT(rejected, kRequests / 10);
  const EngineSnapshot snap = engine->snapshot();
  EXPECT_EQ(snap.kv_blocks_used, 0);
  EXPECT_EQ(snap.running, 0);
  if (autotune == AutotuneMode::kOff && batching == BatchingPolicy::kContinuous) {
    EXPECT_GT(snap.preemptions, 0) << "the pool should be small enough to force preemption";
  } else if (autotune == AutotuneMode::kOn) {
    const std::string text = engine->registry().render();
    EXPECT_NE(text.find("llmserve_autotune_decisions_total{mode=\"applied\""), std::string::npos)
        << "the tuner never changed the budget";
  }
  const double exited = counter(*engine, "llmserve_early_exit_tokens_total{layer=\"1\"}");
  const double full = counter(*engine, "llmserve_early_exit_tokens_total{layer=\"full\"}");
  std::printf("early exit: %.0f tokens exited at layer 1, %.0f ran full depth\n", exited, full);
  EXPECT_GT(exited, 0) << "no early-exit request exited: the property says nothing about exits";
  EXPECT_GT(full, 0) << "every early-exit token exited: the threshold is too low to mix both";
  EXPECT_GT(snap.spec_draft_tokens, 0);
  EXPECT_GT(snap.spec_accepted_tokens, 0);
  EXPECT_LT(snap.spec_accepted_tokens, snap.spec_draft_tokens);

  // Solo reference runs, one request at a time on a roomy cache.
  EngineConfig solo_config;
  solo_config.batching.policy = BatchingPolicy::kNone;
  solo_config.kv.block_size = 8;
  auto solo = make_engine(solo_config, 64);
  std::map<FinishReason, int> reasons;
  for (size_t i = 0; i < handles.size(); ++i) {
    const auto& r = results[i];
    ASSERT_EQ(r.finish_count + static_cast<int>(collect(*handles[i]).finish_count), 1) << "request " << i;
    reasons[r.finish.reason]++;
    RequestParams p = params[i];
    p.timeout_s = 0;
    auto h = solo->submit(p);
    ASSERT_TRUE(h.ok());
    solo->run_until_idle();
    const Collected alone = collect(**h);
    if (r.finish.reason == FinishReason::kRejected) {  // shed: only requests with a TTFT target, before any token
      ASSERT_TRUE(shed) << "request " << i;
      ASSERT_GT(resolve_slo(params[i], c.slo).ttft_ms, 0) << "request " << i;
      ASSERT_TRUE(r.tokens.empty()) << "request " << i;
    }
    if (r.finish.reason == FinishReason::kLength || r.finish.reason == FinishReason::kStop) {
      ASSERT_EQ(r.tokens, alone.tokens) << "request " << i;
    } else {
      ASSERT_LE(r.tokens.size(), alone.tokens.size());
      ASSERT_TRUE(std::equal(r.tokens.begin(), r.tokens.end(), alone.tokens.begin())) << "request " << i;
    }
  }
  // More than half of the requests that ran (were not shed) ran to their length.
  EXPECT_GT(reasons[FinishReason::kLength], (static_cast<int>(handles.size()) - reasons[FinishReason::kRejected]) / 2);
  EXPECT_GT(reasons[FinishReason::kCancelled], 0);
  EXPECT_GT(reasons[FinishReason::kTimeout], 0);
  if (shed) {
    EXPECT_GT(reasons[FinishReason::kRejected], 0) << "nothing was shed: the property says nothing about it";
  }
  std::printf("shed: %d requests\n", reasons[FinishReason::kRejected]);
}

TEST(EnginePropertyTest, RandomWorkloadEndsOnceFreesEverythingAndMatchesSoloRuns) {
  check_random_workload(AutotuneMode::kOff);
}

TEST(EnginePropertyTest, RandomWorkloadWithTheAutoTunerOn) { check_random_workload(AutotuneMode::kOn); }

TEST(EnginePropertyTest, RandomWorkloadWithTheAutoTunerAndSheddingOn) {
  check_random_workload(AutotuneMode::kOn, BatchingPolicy::kContinuous, /*shed=*/true);
}

TEST(EnginePropertyTest, RandomWorkloadWithDynamicBatchingAndTheBatchTunerOn) {
  check_random_workload(AutotuneMode::kOn, BatchingPolicy::kDynamic);
}

}  // namespace
}  // namespace llms
