// Speculative decoding through the engine with a fake model: proposed tokens that are
// right are kept, wrong ones never change the output; alone, in a mixed batch, under
// preemption; and the sampled output's distribution is the target's.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

#include "engine/engine.h"
#include "engine/testing/engine_test_util.h"
#include "engine/proposer.h"

namespace llms {
namespace {

using testing::collect;
using testing::FakeRunner;
using testing::greedy_request;
using testing::kFakeVocab;

// Proposes the fake model's own chain, with every third position (by position) wrong
// and the chain continued from the wrong token, like a draft model's guess would be.
class ChainProposer : public Proposer {
 public:
  void propose(std::span<const ProposalRequest> requests) override {
    for (const auto& r : requests) {
      r.out->clear();
      int32_t last = r.tokens.back();
      int64_t pos = static_cast<int64_t>(r.tokens.size()) - 1;
      for (int i = 0; i < r.k; ++i, ++pos) {
        int32_t t = FakeRunner::next(last, pos);
        if ((pos * 7) % 3 == 0) t = (t + 1) % kFakeVocab;
        r.out->push_back(t);
        last = t;
      }
    }
  }
};

std::vector<int32_t> prompt_of(int n, int32_t start) {
  std::vector<int32_t> p;
  for (int i = 0; i < n; ++i) p.push_back(start + i % 200);
  return p;
}

std::vector<int32_t> chain(const std::vector<int32_t>& prompt, int n) {
  std::vector<int32_t> out;
  int32_t last = prompt.back();
  for (int i = 0; i < n; ++i) out.push_back(last = FakeRunner::next(last, static_cast<int64_t>(prompt.size()) + i - 1));
  return out;
}

struct SpecRun {
  std::unique_ptr<Engine> engine;
  FakeRunner* runner = nullptr;
  ChainProposer* proposer = nullptr;
};

SpecRun make(EngineConfig c, int32_t blocks, bool soft = false) {
  SpecRun r;
  auto runner = std::make_unique<FakeRunner>();
  runner->soft = soft;
  r.runner = runner.get();
  r.engine = std::make_unique<Engine>(std::move(runner), testing::synthetic_tokenizer(), c, Hash128{3, 3}, blocks, 512);
  auto p = std::make_unique<ChainProposer>();
  r.proposer = p.get();
  r.engine->set_proposer(std::move(p));
  return r;
}

// The value of `name{position="j"}` (j < 0: the unlabelled series) in an exposition, 0 when absent.
int64_t series_value(const std::string& text, const std::string& name, int j) {
  const std::string key = j < 0 ? name + " " : name + "{position=\"" + std::to_string(j) + "\"} ";
  const size_t at = text.find("\n" + key);
  if (at == std::string::npos) return 0;
  return static_cast<int64_t>(std::stod(text.substr(at + 1 + key.size())));
}

TEST(SpeculativeTest, GreedyOutputIsThePlainOutputAloneInABatchAndUnderPreemption) {
  for (int32_t blocks : {256, 10}) {  // roomy, then small enough to preempt
    EngineConfig c;
    c.kv.block_size = 8;
    c.batching.max_batch_tokens = 64;
    c.speculative.tokens = 4;
    c.admission.kv_high = c.admission.kv_low = 1.0;
    SpecRun r = make(c, blocks);
    std::vector<std::shared_ptr<RequestHandle>> handles;
    std::vector<std::vector<int32_t>> want;
    for (int i = 0; i < 16; ++i) {
      RequestParams p = greedy_request(prompt_of(3 + i % 5, 10 + 13 * i), 20 + i);
      p.speculative = i % 2 == 0;  // mixed with plain requests
      want.push_back(chain(p.prompt, p.max_tokens));
      handles.push_back(*r.engine->submit(p));
    }
    r.engine->run_until_idle();
    for (size_t i = 0; i < handles.size(); ++i) EXPECT_EQ(collect(*handles[i]).tokens, want[i]) << "request " << i;
    const EngineSnapshot s = r.engine->snapshot();
    EXPECT_GT(s.spec_accepted_tokens, 0);
    EXPECT_LT(s.spec_accepted_tokens, s.spec_draft_tokens);  // some proposals were wrong
    EXPECT_EQ(s.kv_blocks_used, 0);
    // By position: the counts add up to the totals, and no position accepts more than
    // was proposed there, nor a later position more than an earlier one.
    const std::string text = r.engine->registry().render();
    int64_t proposed_sum = 0, accepted_sum = 0;
    for (int j = 0; j < 4; ++j) {
      const int64_t proposed = series_value(text, "llmserve_spec_decode_draft_tokens_per_pos_total", j);
      const int64_t accepted = series_value(text, "llmserve_spec_decode_accepted_tokens_per_pos_total", j);
      EXPECT_LE(accepted, proposed) << "position " << j;
      if (j > 0) {
        EXPECT_LE(accepted, series_value(text, "llmserve_spec_decode_accepted_tokens_per_pos_total", j - 1));
      }
      proposed_sum += proposed;
      accepted_sum += accepted;
    }
    EXPECT_EQ(proposed_sum, s.spec_draft_tokens);
    EXPECT_EQ(accepted_sum, s.spec_accepted_tokens);
    EXPECT_EQ(series_value(text, "llmserve_spec_decode_draft_tokens_per_pos_total", 0),
              series_value(text, "llmserve_spec_decode_drafts_total", -1));
    if (blocks == 10) {
      EXPECT_GT(s.preemptions, 0);
    }
    // Fewer forward passes than tokens: the point of it.
    int64_t passes = 0;
    for (const auto& call : r.runner->calls) passes += static_cast<int64_t>(!call.empty());
    EXPECT_LT(passes, 16 * 20) << "blocks " << blocks;
  }
}

TEST(SpeculativeTest, ProposalsNeverReachPastMaxTokens) {
  EngineConfig c;
  c.speculative.tokens = 8;
  SpecRun r = make(c, 64);
  RequestParams p = greedy_request(prompt_of(4, 40), 3);
  auto h = *r.engine->submit(p);
  r.engine->run_until_idle();
  const auto got = collect(*h);
  EXPECT_EQ(got.tokens, chain(p.prompt, 3));
  EXPECT_EQ(got.finish.reason, FinishReason::kLength);
  for (const auto& call : r.runner->calls) {
    for (const auto& ch : call) EXPECT_LE(ch.start + ch.n, static_cast<int64_t>(p.prompt.size()) + 3);
  }
}

// Stop strings and logprobs act on accepted tokens as on plain ones: with proposals, a
// request that asks for top-3 logprobs and stops at the text of its own 6th plain token
// (found by a plain run first) gives the plain run's tokens, text, finish and logprobs.
TEST(SpeculativeTest, StopStringsAndLogprobsMatchThePlainRun) {
  struct Run {
    std::vector<TokenEvent> tokens;
    FinishEvent finish;
    int64_t accepted = 0;  // proposed tokens kept
  };
  auto run = [](RequestParams p, bool speculative) {
    EngineConfig c;
    c.speculative.tokens = 6;
    SpecRun r = make(c, 64, /*soft=*/true);
    p.speculative = speculative;
    auto h = *r.engine->submit(p);
    r.engine->run_until_idle();
    Run out;
    for (auto& e : h->drain()) {
      if (auto* t = std::get_if<TokenEvent>(&e)) {
        out.tokens.push_back(*t);
      } else {
        out.finish = std::get<FinishEvent>(e);
      }
    }
    out.accepted = r.engine->snapshot().spec_accepted_tokens;
    return out;
  };
  for (int32_t start : {5, 40, 90}) {
    RequestParams p = greedy_request(prompt_of(6, start), 24);
    p.top_logprobs = 3;
    const Run open = run(p, false);
    ASSERT_EQ(open.tokens.size(), 24u);
    std::string stop;
    for (size_t i = 5; i < open.tokens.size() && stop.empty(); ++i) stop = open.tokens[i].text;
    ASSERT_FALSE(stop.empty());
    p.stop = {stop};
    const Run plain = run(p, false), spec = run(p, true);
    EXPECT_EQ(plain.finish.reason, FinishReason::kStop) << "start " << start;
    EXPECT_LT(plain.tokens.size(), 24u);
    EXPECT_GT(spec.accepted, 0) << "start " << start;
    EXPECT_EQ(spec.finish.reason, plain.finish.reason);
    EXPECT_EQ(spec.finish.text, plain.finish.text);
    EXPECT_EQ(spec.finish.completion_tokens, plain.finish.completion_tokens);
    ASSERT_EQ(spec.tokens.size(), plain.tokens.size()) << "start " << start;
    for (size_t i = 0; i < plain.tokens.size(); ++i) {
      EXPECT_EQ(spec.tokens[i].token, plain.tokens[i].token) << i;
      EXPECT_EQ(spec.tokens[i].text, plain.tokens[i].text) << i;
      EXPECT_FLOAT_EQ(spec.tokens[i].logprob, plain.tokens[i].logprob) << i;
      ASSERT_EQ(spec.tokens[i].top.size(), 3u);
      for (size_t k = 0; k < 3; ++k) {
        EXPECT_EQ(spec.tokens[i].top[k].token, plain.tokens[i].top[k].token);
        EXPECT_FLOAT_EQ(spec.tokens[i].top[k].logprob, plain.tokens[i].top[k].logprob);
      }
    }
  }
}

// Sampling at temperature 1 from the fake model's soft distribution (four tokens with
// logits 2, 1, 0, -1 after every token): with proposals, each seed gives exactly the
// tokens it gives without, and the joint distribution of the first two tokens (the
// second decided by a verification) over 4000 seeds matches the exact one (chi-square over 16 cells, df 15, threshold 37.70: a
// false alarm with probability 0.001).
TEST(SpeculativeTest, SampledOutputKeepsTheSeedAndTheTargetDistribution) {
  EngineConfig c;
  c.speculative.tokens = 3;
  SpecRun spec = make(c, 1024, /*soft=*/true);
  SpecRun plain = make(c, 1024, /*soft=*/true);
  plain.engine->set_proposer(nullptr);
  const std::vector<int32_t> prompt = {17, 5};
  std::map<std::pair<int32_t, int32_t>, int> counts;
  const int kDraws = 4000;
  for (int seed = 1; seed <= kDraws; ++seed) {
    RequestParams p = greedy_request(prompt, 3);  // the first comes from the prefill; 2 and 3 from a verification
    p.sampling.temperature = 1.0f;
    p.sampling.seed = static_cast<uint64_t>(seed);
    p.ignore_eos = true;
    auto a = *spec.engine->submit(p);
    auto b = *plain.engine->submit(p);
    spec.engine->run_until_idle();
    plain.engine->run_until_idle();
    const auto ta = collect(*a).tokens, tb = collect(*b).tokens;
    ASSERT_EQ(ta, tb) << "seed " << seed;
    ASSERT_EQ(ta.size(), 3u);
    counts[{ta[0], ta[1]}]++;
  }
  EXPECT_GT(spec.engine->snapshot().spec_accepted_tokens, 0);
  // Exact probabilities: softmax(2, 1, 0, -1) over top, top+1, top+2, top+3.
  const double z = std::exp(2.0) + std::exp(1.0) + 1.0 + std::exp(-1.0);
  auto p_of = [&](int d) { return std::exp(2.0 - d) / z; };
  const int64_t pos = static_cast<int64_t>(prompt.size()) - 1;
  double chi2 = 0;
  for (int d1 = 0; d1 < 4; ++d1) {
    const int32_t t1 = (FakeRunner::next(prompt.back(), pos) + d1) % kFakeVocab;
    for (int d2 = 0; d2 < 4; ++d2) {
      const int32_t t2 = (FakeRunner::next(t1, pos + 1) + d2) % kFakeVocab;
      const double expected = kDraws * p_of(d1) * p_of(d2);
      const double diff = counts[{t1, t2}] - expected;
      chi2 += diff * diff / expected;
    }
  }
  EXPECT_LT(chi2, 37.70);
}

}  // namespace
}  // namespace llms
