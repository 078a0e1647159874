#include "eval/grammar_benchmark.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>

#include "grammar/json_schema.h"
#include "tools/synthetic.h"

namespace llms {
namespace {

// Speed is not asserted (benchmarks measure it); what is checked is the accounting
// and that the constrained rounds were constrained.
TEST(GrammarBenchmarkTest, RunsBothKindsAndCountsTheSchemasPoints) {
  SyntheticSpec spec;
  spec.n_vocab = 400, spec.n_embd = 32, spec.n_layer = 1, spec.n_head = 2, spec.n_head_kv = 1, spec.n_ff = 64;
  const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_grammar_bench.gguf";
  ASSERT_TRUE(write_synthetic_model(spec, path).ok());
  auto model = Model::load(path).value();
  std::filesystem::remove(path);  // mapped: the model stays readable
  auto tokenizer = Tokenizer::from_gguf(model->file()).value();
  GrammarBenchSpec b;
  b.rounds = 2;
  b.concurrency = 2;
  b.prompt_tokens = 8;
  b.max_tokens = 12;
  b.compile_repeats = 2;
  EngineConfig c;
  c.threads = 1;
  auto r = run_grammar_benchmark(*model, *tokenizer, c, b);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->vocab, 400);
  EXPECT_EQ(r->compile_s.size(), 2u);
  EXPECT_EQ(r->free_tok_s.size(), 2u);
  EXPECT_EQ(r->schema_tok_s.size(), 2u);
  // EOS is ignored and 8 objects of 20 properties do not fit in 12 tokens: every
  // request of both kinds runs to max_tokens.
  EXPECT_EQ(r->free_tokens, 2 * 2 * 12);
  EXPECT_EQ(r->schema_tokens, 2 * 2 * 12);
  EXPECT_EQ(r->compile_stats.num_classified, r->compile_stats.num_points);
  EXPECT_GT(r->decode_stats.num_classified, 0);
  EXPECT_LT(r->decode_stats.num_classified, r->decode_stats.num_points);
  // The schema's grammar is the benchmark's twenty properties in an array.
  auto g = json_schema_grammar(twenty_property_schema());
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_EQ(twenty_property_schema()["properties"].size(), 20u);
}

}  // namespace
}  // namespace llms
