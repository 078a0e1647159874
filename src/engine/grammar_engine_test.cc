// Constrained generation in the engine, on the fake runner: its one hot logit is
// masked out wherever the grammar forbids it, and greedy sampling then picks the
// lowest allowed id. The synthetic vocabulary has ids 0-2 for <unk>, <s>, </s> (EOS)
// and the byte tokens <0xNN> at 3 + NN, so every expectation follows by hand.
#include <gtest/gtest.h>

#include "engine/engine.h"
#include "engine/testing/engine_test_util.h"
#include "grammar/gbnf_parser.h"

namespace llms {
namespace {

using testing::collect;
using testing::FakeRunner;
using testing::greedy_request;

int32_t byte_token(char c) { return 3 + static_cast<unsigned char>(c); }

class GrammarEngineTest : public ::testing::Test {
 protected:
  GrammarEngineTest() {
    auto runner = std::make_unique<FakeRunner>();
    runner_ = runner.get();
    engine_ = std::make_unique<Engine>(std::move(runner), testing::synthetic_tokenizer(), EngineConfig{}, Hash128{1, 2},
                                       64, 512);
  }

  std::shared_ptr<const CompiledGrammar> grammar(const std::string& gbnf) {
    auto g = parse_gbnf(gbnf);
    EXPECT_TRUE(g.ok()) << g.status().to_string();
    auto cg = engine_->compile_grammar(std::make_shared<const Grammar>(std::move(g).value()));
    EXPECT_TRUE(cg.ok()) << cg.status().to_string();
    return std::move(cg).value();
  }

  testing::Collected run(RequestParams p) {
    auto h = engine_->submit(std::move(p));
    EXPECT_TRUE(h.ok()) << h.status().to_string();
    engine_->run_until_idle();
    return collect(**h);
  }

  FakeRunner* runner_;
  std::unique_ptr<Engine> engine_;
};

TEST_F(GrammarEngineTest, ConstrainedAndUnconstrainedShareABatch) {
  const auto free_alone = run(greedy_request({10, 11}, 4));
  runner_->calls.clear();
  RequestParams c = greedy_request({10, 11}, 8);
  c.grammar = grammar(R"(root ::= "hi" [0-9])");
  auto hc = engine_->submit(c);
  auto hf = engine_->submit(greedy_request({10, 11}, 4));
  ASSERT_TRUE(hc.ok() && hf.ok());
  engine_->run_until_idle();
  const auto constrained = collect(**hc);
  const auto free = collect(**hf);
  // "hi", then the lowest allowed id of [0-9] is the byte token of '0'; then the
  // grammar is complete and the request stops without sampling EOS.
  EXPECT_EQ(constrained.tokens, (std::vector<int32_t>{byte_token('h'), byte_token('i'), byte_token('0')}));
  EXPECT_EQ(constrained.text, "hi0");
  EXPECT_EQ(constrained.finish.reason, FinishReason::kStop);
  // The unconstrained request is untouched by its neighbour.
  EXPECT_EQ(free.tokens, free_alone.tokens);
  ASSERT_FALSE(runner_->calls.empty());
  EXPECT_EQ(runner_->calls[0].size(), 2u);  // both prompts in the first forward pass
}

TEST_F(GrammarEngineTest, EndOfGenerationOnlyWhereTheGrammarMayEnd) {
  RequestParams p = greedy_request({10}, 8);
  p.grammar = grammar(R"(root ::= "a"+)");
  const auto out = run(p);
  // EOS (id 2) is the lowest id, but only allowed after the first "a". EOS ends the
  // request without a token event of its own, and counts as a completion token.
  EXPECT_EQ(out.tokens, (std::vector<int32_t>{byte_token('a')}));
  EXPECT_EQ(out.finish.completion_tokens, 2);
  EXPECT_EQ(out.text, "a");
  EXPECT_EQ(out.finish.reason, FinishReason::kStop);
}

TEST_F(GrammarEngineTest, IgnoreEosKeepsGoingWithinTheGrammar) {
  RequestParams p = greedy_request({10}, 3);
  p.grammar = grammar(R"(root ::= "a"+)");
  p.ignore_eos = true;
  const auto out = run(p);
  EXPECT_EQ(out.text, "aaa");
  EXPECT_EQ(out.finish.reason, FinishReason::kLength);
}

TEST_F(GrammarEngineTest, UnfinishedGrammarEndsWithLength) {
  RequestParams p = greedy_request({10}, 2);
  p.grammar = grammar(R"(root ::= "hello")");
  const auto out = run(p);
  EXPECT_EQ(out.text, "he");
  EXPECT_EQ(out.finish.reason, FinishReason::kLength);
}

TEST_F(GrammarEngineTest, SampledOutputStaysInTheGrammar) {
  const auto g = grammar(R"(root ::= [a-c]{3} ("-" [x-z])?)");
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    RequestParams p = greedy_request({10}, 10);
    p.sampling.temperature = 1.0f;
    p.sampling.seed = seed;
    p.grammar = g;
    const auto out = run(p);
    ASSERT_EQ(out.finish.reason, FinishReason::kStop) << out.finish.message;
    ASSERT_TRUE(out.text.size() == 3 || out.text.size() == 5) << out.text;
    for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(out.text[i] >= 'a' && out.text[i] <= 'c') << out.text;
    if (out.text.size() == 5) {
      EXPECT_TRUE(out.text[3] == '-' && out.text[4] >= 'x' && out.text[4] <= 'z') << out.text;
    }
  }
}

TEST_F(GrammarEngineTest, LogitBiasOutweighsTheModel) {
  RequestParams p = greedy_request({10}, 3);
  p.sampling.logit_bias = {{byte_token('q'), 100.0f}};  // the fake's hot logit is only 10
  const auto out = run(p);
  EXPECT_EQ(out.text, "qqq");
  RequestParams bad = greedy_request({10}, 3);
  bad.sampling.logit_bias = {{5000, 1.0f}};
  EXPECT_EQ(engine_->submit(bad).status().message(), "logit_bias names token id 5000, outside the vocabulary (0..299)");
}

TEST_F(GrammarEngineTest, CompiledGrammarsAreCachedByHash) {
  const auto a = grammar(R"(root ::= "x")");
  const auto b = grammar(R"(root ::= "x")");
  EXPECT_EQ(a.get(), b.get());
  EXPECT_EQ(engine_->grammar_cache_stats().hits, 1);
  EXPECT_EQ(engine_->grammar_cache_stats().misses, 1);
}

TEST_F(GrammarEngineTest, GrammarForAnotherVocabularyIsRefused) {
  auto g = parse_gbnf(R"(root ::= "x")");
  auto other = std::make_shared<const TokenVocabulary>(std::vector<std::string>{"x"}, std::vector<int32_t>{});
  RequestParams p = greedy_request({10}, 3);
  p.grammar = CompiledGrammar::compile(std::make_shared<const Grammar>(std::move(g).value()), other).value();
  EXPECT_EQ(engine_->submit(p).status().message(), "the grammar was compiled for another engine's vocabulary");
}

}  // namespace
}  // namespace llms

namespace llms {
namespace {

// Speculation under a grammar: proposals are verified under the mask of the state
// their accepted predecessors reached, so the output is the plain constrained one.
// Once the output settles into "abab...", prompt lookup proposes whole pairs.
TEST(GrammarSpeculativeTest, ProposalsUnderAGrammarGiveThePlainOutput) {
  EngineConfig c;
  c.speculative.mode = SpeculativeMode::kNgram;
  c.speculative.tokens = 4;
  auto runner = std::make_unique<FakeRunner>();
  Engine engine(std::move(runner), testing::synthetic_tokenizer(), c, Hash128{1, 2}, 64, 512);
  auto g = parse_gbnf(R"(root ::= ("a" [b-z])+)");
  ASSERT_TRUE(g.ok());
  auto cg = engine.compile_grammar(std::make_shared<const Grammar>(std::move(g).value()));
  ASSERT_TRUE(cg.ok());
  auto run = [&](bool speculative) {
    RequestParams p = greedy_request({10, 11}, 24);
    p.grammar = *cg;
    p.ignore_eos = true;
    p.speculative = speculative;
    auto h = engine.submit(p);
    EXPECT_TRUE(h.ok());
    engine.run_until_idle();
    return collect(**h);
  };
  const auto plain = run(false);
  const int64_t accepted_before = engine.snapshot().spec_accepted_tokens;
  const auto spec = run(true);
  // The grammar's shape: 12 pairs of "a" and a letter from b to z.
  ASSERT_EQ(plain.text.size(), 24u);
  for (size_t i = 0; i < 24; i += 2) {
    EXPECT_EQ(plain.text[i], 'a') << plain.text;
    EXPECT_TRUE(plain.text[i + 1] >= 'b' && plain.text[i + 1] <= 'z') << plain.text;
  }
  EXPECT_EQ(spec.tokens, plain.tokens);
  EXPECT_EQ(spec.finish.reason, FinishReason::kLength);
  EXPECT_GT(engine.snapshot().spec_accepted_tokens, accepted_before);
}

}  // namespace
}  // namespace llms
