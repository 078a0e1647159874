// LoRA adapters against llama.cpp: tests/data/lora_ref_<name>.txt (written by
// scripts/lora-reference.sh) holds llama-server's greedy tokens and top-5
// log-probabilities with `--lora ADAPTER.gguf` on a generated model. The test
// regenerates the model and the adapter with the same make-model arguments (seeded,
// so the same files), the adapter as a GGUF file and as a PEFT directory, and checks
// every greedy token and top-5 log-probability of both.
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "command_util.h"
#include "llama_reference.h"
#include "model/lora.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace llms {
namespace {

// F32 weights, F32 KV, F32 adapters: what is left is the order of sums (the bound).
constexpr double kTolerance = 5e-3;

void make(const std::string& args) {
  const auto made = test::run_command(std::string(LLMSERVE_BIN) + " make-model " + args + " 2>&1");
  ASSERT_EQ(made.exit_code, 0) << made.out;
}

TEST(LoraReferenceTest, GgufAndPeftAdaptersMatchLlamaCpp) {
  const std::string ref_path = std::string(LLMSERVE_SOURCE_DIR) + "/tests/data/lora_ref_llama.txt";
  const test::Reference ref = test::read_reference(ref_path);
  ASSERT_EQ(ref.prompts.size(), 3u) << ref_path;
  ASSERT_FALSE(ref.lora_args.empty());
  const std::string base = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_lora_ref";
  make(ref.make_model_args + ref.lora_args + " --lora " + base + "-lora.gguf " + base + ".gguf");
  make(ref.make_model_args + ref.lora_args + " --lora-format peft --lora " + base + "-peft " + base + ".gguf");
  auto model = Model::load(base + ".gguf");
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  auto tokenizer = Tokenizer::from_gguf((*model)->file());
  ASSERT_TRUE(tokenizer.ok());
  for (const std::string form : {"-lora.gguf", "-peft"}) {
    auto adapter = LoraAdapter::load(base + form, **model);
    ASSERT_TRUE(adapter.ok()) << adapter.status().to_string();
    EXPECT_EQ((*adapter)->num_matrices(), 2 * 7) << form;
    for (size_t i = 0; i < ref.prompts.size(); ++i) {
      const test::Agreement a =
          test::compare_prompt(**model, ref.prompts[i], ref.context, **tokenizer, 0.0, adapter->get());
      EXPECT_EQ(a.greedy_mismatches + a.near_ties, 0) << form << " prompt " << i;
      EXPECT_LE(a.worst_logprob_diff, kTolerance) << form << " prompt " << i;
      std::printf("adapter%s prompt %zu: greedy %d/32 equal, worst top-5 |logprob difference| %.2e (bound %.0e)\n",
                  form.c_str(), i, 32 - a.greedy_mismatches - a.near_ties, a.worst_logprob_diff, kTolerance);
    }
  }
  // Without the adapter the base model is far from the reference: the adapter is what
  // the comparison checks.
  double base_worst = 0;
  int base_mismatches = 0;
  for (const test::RefPrompt& p : ref.prompts) {
    const test::Agreement a = test::compare_prompt(**model, p, ref.context, **tokenizer, 0.0);
    base_worst = std::max(base_worst, a.worst_logprob_diff);
    base_mismatches += a.greedy_mismatches;
  }
  EXPECT_GT(base_worst, 20 * kTolerance);
  EXPECT_GT(base_mismatches, 0);
  std::printf("base without the adapter: %d greedy steps differ, worst |logprob difference| %.2e\n", base_mismatches,
              base_worst);
  std::filesystem::remove_all(base + "-peft");
  std::filesystem::remove(base + "-lora.gguf");
  std::filesystem::remove(base + ".gguf");
}

}  // namespace
}  // namespace llms
