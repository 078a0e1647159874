// The llmserve binary end to end: generate, inspect, convert and make-model on the
// shared stories260K model and on generated models, and its answers to bad input.
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <nlohmann/json.hpp>

#include "command_util.h"
#include "io/gguf_file.h"

namespace {

const std::string kBin = LLMSERVE_BIN;
const std::string kShared = LLMSERVE_SHARED_DIR;
const std::string kStories = kShared + "/models/stories260K.gguf";

using llms::test::CmdResult;

CmdResult run(const std::string& args, bool merge_stderr = false) {
  return llms::test::run_command(kBin + " " + args + (merge_stderr ? " 2>&1" : " 2>/dev/null"));
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

bool have_stories() { return std::filesystem::exists(kStories); }

TEST(CliTest, GreedyStoryMatchesReferenceImplementation) {
  if (!have_stories()) GTEST_SKIP() << "needs " << kStories;
  const CmdResult r = run("generate -m " + kStories + " -p 'Once upon a time' -n 40 --temp 0");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string expected =
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the park.";
  EXPECT_EQ(r.out.substr(0, expected.size()), expected) << r.out;
}

TEST(CliTest, SeededSamplingIsReproducible) {
  if (!have_stories()) GTEST_SKIP() << "needs " << kStories;
  const std::string args = "generate -m " + kStories + " -p 'Once upon a time' -n 30 --temp 1.0 --seed ";
  const CmdResult a = run(args + "7"), b = run(args + "7"), c = run(args + "8");
  ASSERT_EQ(a.exit_code, 0);
  EXPECT_EQ(a.out, b.out);
  EXPECT_NE(a.out, c.out);
}

// Speculative decoding changes how many passes the target runs, never what it writes:
// eight prompts batched, greedy and seeded-sampled, with the model's own Q4_0 as the
// draft and with prompt lookup, give the plain outputs token for token.
TEST(CliTest, SpeculativeDecodingGivesThePlainOutputs) {
  if (!have_stories()) GTEST_SKIP() << "needs " << kStories;
  const std::string dir = ::testing::TempDir() + "/" + std::to_string(getpid());
  const std::string draft = dir + "_draft_q4_0.gguf", prompts = dir + "_prompts.txt";
  ASSERT_EQ(run("quantize " + kStories + " " + draft + " --type q4_0").exit_code, 0);
  std::ofstream(prompts) << "Once upon a time\nLily and Ben\nThe dog\nOne day, a little\nThe sun was\nTom had a red\n"
                            "She wanted to\nThe big tree\n";
  for (const char* sampling : {"--temp 0", "--temp 0.8 --seed 3"}) {
    const std::string base = "generate -m " + kStories + " --prompts-file " + prompts + " --parallel 8 -n 60 --json " + sampling;
    const CmdResult plain = run(base);
    ASSERT_EQ(plain.exit_code, 0);
    for (const std::string& spec : std::vector<std::string>{" --speculative ngram", " --speculative draft --draft-model " + draft}) {
      const CmdResult r = run(base + spec);
      ASSERT_EQ(r.exit_code, 0) << spec;
      // Every line but the last, the summary (its timings and counters differ), is identical.
      auto last_line = [](const std::string& out) { return out.rfind('\n', out.size() - 2) + 1; };
      EXPECT_EQ(plain.out.substr(0, last_line(plain.out)), r.out.substr(0, last_line(r.out))) << sampling << spec;
      const auto summary = nlohmann::json::parse(r.out.substr(last_line(r.out)));
      EXPECT_GT(summary["spec_accepted_tokens"].get<int64_t>(), 0) << sampling << spec;
    }
  }
  EXPECT_NE(run("generate -m " + kStories + " -p x --speculative draft", true).out.find("draft_model"), std::string::npos);
  std::filesystem::remove(draft);
  std::filesystem::remove(prompts);
}

// bench-speculative replays the target's own greedy output: unchanged, every proposed
// token is accepted and a pass yields several tokens; with every token corrupted none is,
// and a pass yields one. Both runs check the output against plain decoding.
TEST(CliTest, BenchSpeculativeAcceptanceFollowsTheCorruptedShare) {
  if (!have_stories()) GTEST_SKIP() << "needs " << kStories;
  const std::string base = "bench-speculative -m " + kStories + " -n 40 --rounds 1 --json --corrupt ";
  const CmdResult clean = run(base + "0");
  ASSERT_EQ(clean.exit_code, 0) << clean.out;
  const auto c = nlohmann::json::parse(clean.out);
  EXPECT_TRUE(c["identical"].get<bool>());
  EXPECT_DOUBLE_EQ(c["acceptance"].get<double>(), 1.0);
  EXPECT_GT(c["tokens_per_pass"].get<double>(), 2.0);
  const CmdResult wrong = run(base + "1");
  ASSERT_EQ(wrong.exit_code, 0) << wrong.out;
  const auto w = nlohmann::json::parse(wrong.out);
  EXPECT_TRUE(w["identical"].get<bool>());
  EXPECT_DOUBLE_EQ(w["acceptance"].get<double>(), 0.0);
  EXPECT_LE(w["tokens_per_pass"].get<double>(), 1.0);
  EXPECT_NE(run(base + "1.5", true).out.find("--corrupt"), std::string::npos);
}

TEST(CliTest, InspectJsonDescribesTheModel) {
  if (!have_stories()) GTEST_SKIP() << "needs " << kStories;
  const CmdResult r = run("inspect --json " + kStories);
  ASSERT_EQ(r.exit_code, 0);
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["architecture"], "llama");
  EXPECT_EQ(j["hyperparameters"]["n_layer"], 5);
  EXPECT_EQ(j["hyperparameters"]["n_head_kv"], 4);
  EXPECT_EQ(j["tokenizer"]["vocab_size"], 512);
  EXPECT_EQ(j["tensors"].size(), 48u);
  EXPECT_EQ(j["file_size"], std::filesystem::file_size(kStories));
  // 64*512*2 (embedding, output) + 5 layers * (64*64*2 + 64*32*2 + 64*172*3 + 64*2) + 64
  EXPECT_EQ(j["parameters"], 64 * 512 * 2 + 5 * (64 * 64 * 2 + 64 * 32 * 2 + 64 * 172 * 3 + 64 * 2) + 64);
  EXPECT_FALSE(j["synthetic"].get<bool>());
  const CmdResult text = run("inspect " + kStories);
  EXPECT_NE(text.out.find("blk.4.ffn_down.weight"), std::string::npos);
}

TEST(CliTest, ConvertedCheckpointGeneratesTheSameStory) {
  if (!have_stories()) GTEST_SKIP() << "needs " << kStories;
  const std::string out = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_cli_convert.gguf";
  const CmdResult c = run("convert --from llama2c " + kShared + "/models/stories260K.bin " + kShared + "/models/tok512.bin " + out);
  ASSERT_EQ(c.exit_code, 0) << c.out;
  const std::string args = " -p 'Once upon a time' -n 40 --temp 0";
  EXPECT_EQ(run("generate -m " + out + args).out, run("generate -m " + kStories + args).out);
  std::filesystem::remove(out);
}

TEST(CliTest, MakeModelWritesASyntheticModelThatGenerates) {
  const std::string out = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_cli_tiny.gguf";
  const CmdResult m = run("make-model --preset tiny --type f16 --seed 3 " + out);
  ASSERT_EQ(m.exit_code, 0) << m.out;
  const CmdResult i = run("inspect --json " + out);
  const auto j = nlohmann::json::parse(i.out);
  EXPECT_TRUE(j["synthetic"].get<bool>());
  EXPECT_EQ(j["hyperparameters"]["n_layer"], 2);
  EXPECT_EQ(j["bytes_by_type"].contains("f16"), true);
  EXPECT_NE(run("inspect " + out).out.find("RANDOM"), std::string::npos);
  const CmdResult g = run("generate -m " + out + " -p 'hello world' -n 12 --ignore-eos --temp 0 --json");
  ASSERT_EQ(g.exit_code, 0) << g.out;
  const auto first = nlohmann::json::parse(g.out.substr(0, g.out.find('\n')));
  EXPECT_EQ(first["completion_tokens"], 12);
  // Same seed, same file: byte-identical.
  const std::string again = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_cli_tiny2.gguf";
  ASSERT_EQ(run("make-model --preset tiny --type f16 --seed 3 " + again).exit_code, 0);
  EXPECT_EQ(slurp(out), slurp(again));
  std::filesystem::remove(out);
  std::filesystem::remove(again);
}

// quantize --lora writes the adapter's merged weights (tools/lora_merge_test.cc checks
// their logits): the adapted matrices differ from a plain quantize's, the rest do not,
// and the file names the adapter; misuse is a clear error.
TEST(CliTest, QuantizeMergesALoraAdapter) {
  const std::string dir = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_cli_merge";
  std::filesystem::create_directories(dir);
  ASSERT_EQ(run("make-model --preset tiny " + dir + "/base.gguf --lora " + dir + "/a.gguf --lora-rank 4").exit_code, 0);
  CmdResult r = run("quantize " + dir + "/base.gguf " + dir + "/merged.gguf --type q8_0 --lora " + dir + "/a.gguf");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  ASSERT_EQ(run("quantize " + dir + "/base.gguf " + dir + "/plain.gguf --type q8_0").exit_code, 0);
  const llms::GgufFile merged = llms::GgufFile::open(dir + "/merged.gguf").value();
  const llms::GgufFile plain = llms::GgufFile::open(dir + "/plain.gguf").value();
  auto bytes = [](const llms::GgufFile& f, const std::string& name) {
    const llms::GgufTensorInfo* t = f.find_tensor(name);
    const llms::TensorData d = f.read(*t);
    return std::string(reinterpret_cast<const char*>(d.data()), t->num_bytes);
  };
  EXPECT_NE(bytes(merged, "blk.0.attn_q.weight"), bytes(plain, "blk.0.attn_q.weight"));
  EXPECT_NE(bytes(merged, "blk.1.ffn_down.weight"), bytes(plain, "blk.1.ffn_down.weight"));
  EXPECT_EQ(bytes(merged, "blk.0.attn_norm.weight"), bytes(plain, "blk.0.attn_norm.weight"));
  EXPECT_EQ(bytes(merged, "token_embd.weight"), bytes(plain, "token_embd.weight"));
  const auto named = merged.get_string_or("llmserve.quantize.lora", "");
  ASSERT_TRUE(named.ok());
  EXPECT_NE(named->find("a.gguf"), std::string::npos) << *named;
  r = run("quantize " + dir + "/base.gguf " + dir + "/x.gguf --type q8_0 --lora-scale 2", true);
  EXPECT_NE(r.out.find("--lora-scale needs --lora"), std::string::npos) << r.out;
  r = run("quantize " + dir + "/base.gguf " + dir + "/x.gguf --type q8_0 --lora " + dir + "/none.gguf", true);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("none.gguf"), std::string::npos) << r.out;
  r = run("quantize " + dir + "/base.gguf " + dir + "/x.gguf --target-bpw 6 --calib " + dir + "/base.gguf --lora " + dir +
          "/a.gguf", true);
  EXPECT_NE(r.out.find("--lora merges with --type"), std::string::npos) << r.out;
  std::filesystem::remove_all(dir);
}

// A mixture of experts through the tools: inspect names its experts, bench-engine
// --profile runs it (an MoE layer has no dense FFN matrix) and reports the routing.
TEST(CliTest, MixtureOfExpertsModelInspectsAndBenchmarks) {
  const std::string out = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_cli_moe.gguf";
  const CmdResult m = run("make-model --preset tiny --experts 4 --experts-used 2 --type q8_0 " + out);
  ASSERT_EQ(m.exit_code, 0) << m.out;
  const auto j = nlohmann::json::parse(run("inspect --json " + out).out);
  EXPECT_EQ(j["hyperparameters"]["experts"], 4);
  EXPECT_EQ(j["hyperparameters"]["experts_used"], 2);
  const CmdResult b = run("bench-engine -m " + out + " --requests 4 --concurrency 4 --prompt-min 4 --prompt-max 8 "
                          "--output-min 4 --output-max 4 -t 1 --profile --json");
  ASSERT_EQ(b.exit_code, 0) << b.out;
  const auto r = nlohmann::json::parse(b.out.substr(b.out.find('[')));
  EXPECT_EQ(r[0]["completed"], 4);
  EXPECT_GE(r[0]["expert_load_imbalance"].get<double>(), 1.0);
  std::filesystem::remove(out);
}

// bench-engine in open loop: Poisson arrivals, goodput against bounds nothing misses
// (all the throughput) and a warm-up round; bounds it cannot judge and an unknown
// tuner mode are refused.
TEST(CliTest, BenchEngineRunsOpenLoopWithGoodput) {
  const std::string out = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_cli_open.gguf";
  ASSERT_EQ(run("make-model --preset tiny --type q8_0 " + out).exit_code, 0);
  const std::string load = "bench-engine -m " + out + " --batching continuous --requests 6 --prompt-min 4 "
                           "--prompt-max 8 --output-min 4 --output-max 4 -t 1 ";
  const CmdResult b = run(load + "--request-rate 100 --goodput ttft:3600000 tpot:3600000 --warmup 1 --json");
  ASSERT_EQ(b.exit_code, 0) << b.out;
  const auto r = nlohmann::json::parse(b.out.substr(b.out.find('[')));
  EXPECT_EQ(r[0]["completed"], 6);
  EXPECT_EQ(r[0]["failed"], 0);
  EXPECT_EQ(r[0]["request_rate"], 100.0);
  EXPECT_DOUBLE_EQ(r[0]["goodput_tokens_per_s"].get<double>(), r[0]["tokens_per_s"].get<double>());
  CmdResult bad = run(load + "--goodput e2el:100", true);
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.out.find("judges ttft and tpot only"), std::string::npos) << bad.out;
  bad = run(load + "--autotune sometimes", true);
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.out.find("sometimes"), std::string::npos) << bad.out;
  std::filesystem::remove(out);
}

TEST(CliTest, BadInputsGiveClearErrors) {
  CmdResult r = run("generate -m /nonexistent.gguf -p hi", true);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("error: cannot open '/nonexistent.gguf'"), std::string::npos) << r.out;
  r = run("make-model --preset huge /tmp/x.gguf", true);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("unknown preset 'huge'"), std::string::npos) << r.out;
  r = run("inspect " + kBin, true);  // not a GGUF file
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("not a GGUF file"), std::string::npos) << r.out;
  r = run("generate --bogus-flag", true);
  EXPECT_NE(r.exit_code, 0);
  if (have_stories()) {
    r = run("generate -m " + kStories + " -p hi --kv-type q9", true);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.out.find("--kv-type"), std::string::npos) << r.out;
    r = run("generate -m " + kStories + " -p hi --top-p 0", true);
    EXPECT_NE(r.out.find("top_p"), std::string::npos) << r.out;
    const std::string text = std::string(LLMSERVE_SOURCE_DIR) + "/tests/data/eval_stories.txt";
    for (const auto& [args, named] : std::vector<std::pair<std::string, std::string>>{
             {"--thresholds 1.5", "--thresholds"}, {"--thresholds 0.9 --exit-layers 5", "--exit-layers"},
             {"--thresholds 0.9,", "--thresholds"}, {"", "--thresholds is required"}}) {
      r = run("eval-early-exit -m " + kStories + " -f " + text + " " + args, true);
      EXPECT_EQ(r.exit_code, 1) << args;
      EXPECT_NE(r.out.find(named), std::string::npos) << args << ": " << r.out;
    }
  }
}

}  // namespace

namespace {

// imatrix and the planner end to end on stories260K: an importance file from one half
// of the project's story text, a plan for 8 bits per weight from it, measured on the
// other half; and their refusals of bad input.
// A fresh folder holding the project's story text in two halves, calib.txt and eval.txt.
std::string story_halves(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_" + name;
  std::filesystem::create_directories(dir);
  const std::string text = slurp(std::string(LLMSERVE_SOURCE_DIR) + "/tests/data/eval_stories.txt");
  const size_t half = text.find('\n', text.size() / 2);
  std::ofstream(dir + "/calib.txt") << text.substr(0, half);
  std::ofstream(dir + "/eval.txt") << text.substr(half);
  return dir;
}

TEST(CliTest, ImatrixAndPlannerWriteAMeasuredPlan) {
  if (!have_stories()) GTEST_SKIP() << "needs " << kStories;
  const std::string dir = story_halves("plan");
  CmdResult r = run("imatrix -m " + kStories + " -f " + dir + "/calib.txt -o " + dir + "/imat.gguf", true);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("36 weight tensors"), std::string::npos) << r.out;
  r = run("quantize " + kStories + " " + dir + "/plan.gguf --target-bpw 8 --calib " + dir + "/calib.txt --eval " + dir +
          "/eval.txt --imatrix " + dir + "/imat.gguf --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_LE(j["bpw"].get<double>(), 8.0);         // within the target
  EXPECT_GT(j["bpw"].get<double>(), 8.0 * 0.99);  // and within 1% of it
  EXPECT_EQ(j["file_bytes"].get<uint64_t>(), std::filesystem::file_size(dir + "/plan.gguf"));
  EXPECT_GT(j["measured_kl"].get<double>(), 0.0);
  EXPECT_EQ(j["tensors"].size(), 37u);  // 5 layers x 7 matrices, the head, the embedding
  r = run("quantize " + kStories + " " + dir + "/x.gguf", true);
  EXPECT_NE(r.out.find("--type is required"), std::string::npos) << r.out;
  r = run("quantize " + kStories + " " + dir + "/x.gguf --target-bpw 6", true);
  EXPECT_NE(r.out.find("need --calib"), std::string::npos) << r.out;
  r = run("quantize " + kStories + " " + dir + "/x.gguf --type q4_0 --imatrix " + kStories, true);
  EXPECT_NE(r.out.find("no importance data"), std::string::npos) << r.out;
  r = run("imatrix -m " + kStories + " -f /nonexistent.txt -o " + dir + "/y.gguf", true);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("/nonexistent.txt"), std::string::npos) << r.out;
  std::filesystem::remove_all(dir);
}

// --type with a calibration text: the measured policy spends the bytes the rule's
// protection costs where the text says they matter, on stories260K, measured on the
// held-out half; and its refusals of bad input.
TEST(CliTest, MeasuredPolicyProtectsWithinTheRulesBytes) {
  if (!have_stories()) GTEST_SKIP() << "needs " << kStories;
  const std::string dir = story_halves("measured");
  const std::string texts = " --calib " + dir + "/calib.txt --eval " + dir + "/eval.txt";
  CmdResult r = run("quantize " + kStories + " " + dir + "/m.gguf --type q8_0 --json" + texts);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_LE(j["bytes"].get<uint64_t>(), j["rule"]["bytes"].get<uint64_t>());
  EXPECT_LT(j["measured_kl"].get<double>(), j["rule"]["measured_kl"].get<double>());
  EXPECT_EQ(j["tensors"].size(), 37u);
  for (const auto& t : j["tensors"]) {  // Q8_0 where it fits, or more; the 172-wide rows take F16 or F32
    const std::string type = t["type"].get<std::string>();
    EXPECT_TRUE(type == "q8_0" || type == "f16" || type == "f32") << t["name"] << " " << type;
  }
  r = run("quantize " + kStories + " " + dir + "/x.gguf --type q8_0 --policy measured", true);
  EXPECT_NE(r.out.find("need --calib"), std::string::npos) << r.out;
  r = run("quantize " + kStories + " " + dir + "/x.gguf --type q8_0 --keep f16:output" + texts + " --policy measured", true);
  EXPECT_NE(r.out.find("give one of them"), std::string::npos) << r.out;
  r = run("quantize " + kStories + " " + dir + "/x.gguf --type q8_0 --policy best", true);
  EXPECT_NE(r.out.find("--policy must be"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(dir + "/x.gguf"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/m.gguf.rule.tmp.gguf"));
  std::filesystem::remove_all(dir);
}

TEST(CliTest, BenchServeRefusesBadFlagsByName) {
  const std::pair<const char*, const char*> cases[] = {
      {"--endpoint /v1/embeddings", "--endpoint '/v1/embeddings'"},
      {"--request-rate 0", "rate '0' must be > 0"},
      {"--burstiness -1", "--burstiness must be > 0"},
      {"--goodput ttft:fast", "--goodput 'ttft:fast'"},
      {"--percentiles 50,200", "--percentiles '200'"},
      {"--sweep-rates 1,2 --request-rate 4", "exclude each other"},
      {"--dataset /nonexistent.jsonl", "neither random, shared-prefix, sonnet nor"},
  };
  // Refused before anything is sent: no server listens on port 1.
  for (const auto& [flags, message] : cases) {
    const CmdResult r = run(std::string("bench serve --base-url http://127.0.0.1:1 ") + flags, true);
    EXPECT_EQ(r.exit_code, 1) << flags << ": " << r.out;
    EXPECT_NE(r.out.find(message), std::string::npos) << flags << ": " << r.out;
  }
  CmdResult r = run("bench serve --base-url localhost:8080", true);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("--base-url 'localhost:8080' must start with http://"), std::string::npos) << r.out;
  r = run("bench serve --base-url http://127.0.0.1:1 --num-prompts 1", true);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("cannot reach http://127.0.0.1:1/v1/models"), std::string::npos) << r.out;
}

}  // namespace

namespace {

// prune and eval-prune end to end on stories260K: a pruned file that generates and
// reports its per-tensor sparsity, an eval table, and bad input refused with nothing
// written.
TEST(CliTest, PruneWritesAPrunedModelAndRefusesBadInput) {
  if (!have_stories()) GTEST_SKIP() << "needs " << kStories;
  const std::string dir = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_prune";
  std::filesystem::create_directories(dir);
  const std::string out = dir + "/p.gguf";
  CmdResult r = run("prune " + kStories + " " + out + " --sparsity 0.3 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["tensors"].size(), 35u);
  for (const auto& t : j["tensors"]) EXPECT_NEAR(t["achieved"].get<double>(), 0.3, 0.02) << t["name"];
  r = run("generate -m " + out + " -p \"Once upon a time\" -n 8 --temp 0");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.rfind("Once upon a time", 0), 0u) << r.out;
  std::ofstream(dir + "/text.txt") << slurp(std::string(LLMSERVE_SOURCE_DIR) + "/tests/data/eval_stories.txt").substr(0, 2000);
  r = run("eval-prune -m " + kStories + " -f " + dir + "/text.txt --sparsities 0,0.4 --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto e = nlohmann::json::parse(r.out);
  ASSERT_EQ(e["levels"].size(), 2u);
  EXPECT_EQ(e["levels"][0]["kl_divergence"].get<double>(), 0.0);
  EXPECT_GT(e["levels"][1]["kl_divergence"].get<double>(), 0.0);
  const std::string bad = dir + "/bad.gguf";
  for (const auto& [args, says] : std::vector<std::pair<std::string, std::string>>{
           {"/nonexistent.gguf " + bad + " --sparsity 0.5", "cannot open '/nonexistent.gguf'"},
           {kStories + " " + bad + " --sparsity 1.2", "--sparsity must be in [0, 1)"},
           {kStories + " " + bad + " --sparsity 0.5 --pattern 3:4", "unknown --pattern '3:4'"},
           {kStories + " " + bad + " --sparsity 0.5 --pattern block:8", "172 wide, which 8 does not divide"},
           {kStories + " " + bad + " --sparsity 0.7 --pattern 2:4", "its sparsity is 0.5"},
           {kStories + " " + bad + " --sparsity 0.5 --schedule steep", "unknown --schedule 'steep'"},
           {kStories + " " + bad, "--sparsity S is required"}}) {
    r = run("prune " + args, true);
    EXPECT_EQ(r.exit_code, 1) << args;
    EXPECT_NE(r.out.find(says), std::string::npos) << r.out;
    EXPECT_FALSE(std::filesystem::exists(bad)) << args;
  }
  std::filesystem::remove_all(dir);
}


// eval-task scores given answers as the reference script does, and a model's greedy
// answers the same way whether scored at once or saved and scored again.
TEST(CliTest, EvalTaskScoresAnswersAndModels) {
  const std::string data = std::string(LLMSERVE_SOURCE_DIR) + "/tests/data/task_score/";
  CmdResult r = run("eval-task --hypotheses " + data + "pairs.jsonl --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto expected = nlohmann::json::parse(slurp(data + "expected.json"))["all"];
  const auto got = nlohmann::json::parse(r.out);
  EXPECT_NEAR(got["bleu"].get<double>(), expected["bleu"].get<double>(), 1e-9);
  EXPECT_NEAR(got["chrf"].get<double>(), expected["chrf"].get<double>(), 1e-9);
  EXPECT_NEAR(got["exact_match"].get<double>(), expected["exact_match"].get<double>(), 1e-12);
  EXPECT_NE(run("eval-task --json", true).exit_code, 0);

  if (!have_stories()) GTEST_SKIP() << "needs " << kStories;
  const std::string dir = testing::TempDir() + "/eval_task_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  {
    std::ofstream refs(dir + "/refs.jsonl");
    refs << R"({"prompt": "Once upon a time", "reference": ", there was a little girl named Lily."})" << "\n"
         << R"({"messages": [{"role": "user", "content": "Tell a story"}], "reference": "Once upon a time"})" << "\n";
  }
  r = run("eval-task -m " + kStories + " --base " + kStories + " --reference " + dir + "/refs.jsonl --max-tokens 12 " +
          "--save-answers " + dir + "/answers.jsonl --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto model = nlohmann::json::parse(r.out);
  EXPECT_GT(model["bleu"].get<double>(), 0) << r.out;
  EXPECT_EQ(model["references"], 2);
  EXPECT_EQ(model["delta"]["bleu"].get<double>(), 0);
  r = run("eval-task --hypotheses " + dir + "/answers.jsonl --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)["bleu"], model["bleu"]);
  EXPECT_EQ(nlohmann::json::parse(r.out)["chrf"], model["chrf"]);
  std::filesystem::remove_all(dir);
}

}  // namespace
