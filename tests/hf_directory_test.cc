// A Hugging Face directory through the engine: the real TinyStories-656K directory
// served (continuous batching, paged F32 KV cache, the sampler's log-probabilities)
// gives the same greedy tokens and per-step log-probabilities as the F32 GGUF that
// `convert --from hf` writes of it, and as llama.cpp's llama-server on that file
// (tests/data/hf_tinystories_656k_f32.txt, written by scripts/hf-reference.sh).
#include <unistd.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "command_util.h"
#include "io/gguf_file.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"
#include "tools/batch_generator.h"

namespace llms {
namespace {

const std::string kModels = std::string(LLMSERVE_SHARED_DIR) + "/models/tinystories-656k";

struct LlamaCppRun {
  std::vector<int32_t> prompt;
  std::vector<int32_t> tokens;
  std::vector<std::map<int32_t, double>> top;  // per step: id -> log-probability
};

LlamaCppRun read_llama_cpp_run() {
  LlamaCppRun r;
  std::ifstream in(std::string(LLMSERVE_SOURCE_DIR) + "/tests/data/hf_tinystories_656k_f32.txt");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string kind;
    words >> kind;
    if (kind == "prompt") {
      for (int32_t t; words >> t;) r.prompt.push_back(t);
    } else if (kind == "step") {
      int32_t t = 0;
      words >> t;
      r.tokens.push_back(t);
      r.top.emplace_back();
      for (std::string pair; words >> pair;) {
        const size_t colon = pair.find(':');
        r.top.back()[std::stoi(pair.substr(0, colon))] = std::stod(pair.substr(colon + 1));
      }
    }
  }
  return r;
}

// 64 greedy tokens of `prompt` with the top-10 log-probabilities of each step, through
// the engine (F32 KV cache, end of text ignored as llama.cpp's run did).
GenerationOutput generate(const Model& model, const Tokenizer& tokenizer, const std::vector<int32_t>& prompt) {
  RequestParams p;
  p.prompt = prompt;
  p.max_tokens = 64;
  p.sampling.temperature = 0.0f;
  p.ignore_eos = true;
  p.top_logprobs = 10;
  EngineConfig ec;
  ec.kv.k_type = ec.kv.v_type = DType::kF32;
  ec.threads = 2;
  BatchGenerator gen(model, tokenizer, ec);
  auto out = gen.run(std::span<const RequestParams>(&p, 1), nullptr, nullptr);
  EXPECT_TRUE(out.ok()) << out.status().to_string();
  return out.ok() ? std::move(out->front()) : GenerationOutput{};
}

TEST(HfDirectoryTest, TinyStoriesThroughTheEngineMatchesItsGgufAndLlamaCpp) {
  if (!std::filesystem::exists(kModels + "/hf/model.safetensors")) GTEST_SKIP() << "needs " << kModels;
  const LlamaCppRun ref = read_llama_cpp_run();
  ASSERT_EQ(ref.tokens.size(), 64u);
  const std::string gguf = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_tinystories_engine.gguf";
  const auto conv = test::run_command(std::string(LLMSERVE_BIN) + " convert --from hf " + kModels + "/hf " + gguf +
                                      " --vocab-from " + kModels + "/TinyStories-656K-Q8_0.gguf 2>&1");
  ASSERT_EQ(conv.exit_code, 0) << conv.out;
  auto dir = Model::load(kModels + "/hf");
  auto file = Model::load(gguf);
  ASSERT_TRUE(dir.ok()) << dir.status().to_string();
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  auto tokenizer = Tokenizer::from_gguf((*file)->file());  // the directory's vocabulary, as llama.cpp converts it
  ASSERT_TRUE(tokenizer.ok());
  ASSERT_EQ((*tokenizer)->encode("Once upon a time"), ref.prompt);

  const GenerationOutput a = generate(**dir, **tokenizer, ref.prompt);
  const GenerationOutput b = generate(**file, **tokenizer, ref.prompt);
  EXPECT_EQ(a.tokens, ref.tokens);
  EXPECT_EQ(a.tokens, b.tokens);
  ASSERT_EQ(a.top_logprobs.size(), 64u);
  ASSERT_EQ(b.top_logprobs.size(), 64u);
  double vs_gguf = 0, vs_llama = 0;
  for (size_t s = 0; s < 64; ++s) {
    ASSERT_EQ(a.top_logprobs[s].size(), b.top_logprobs[s].size());
    vs_gguf = std::max(vs_gguf, static_cast<double>(std::abs(a.logprobs[s] - b.logprobs[s])));
    for (size_t k = 0; k < a.top_logprobs[s].size(); ++k) {
      EXPECT_EQ(a.top_logprobs[s][k].token, b.top_logprobs[s][k].token);
      vs_gguf = std::max(vs_gguf, static_cast<double>(std::abs(a.top_logprobs[s][k].logprob - b.top_logprobs[s][k].logprob)));
      const auto it = ref.top[s].find(a.top_logprobs[s][k].token);
      if (it != ref.top[s].end()) vs_llama = std::max(vs_llama, std::abs(a.top_logprobs[s][k].logprob - it->second));
    }
  }
  EXPECT_LE(vs_gguf, 1e-4);
  EXPECT_LE(vs_llama, 1e-4);
  std::printf("tinystories-656k/hf through the engine: 64 greedy tokens as its GGUF's and llama.cpp's; per-step "
              "log-probabilities within %.1e of the GGUF's, %.1e of llama.cpp's\n", vs_gguf, vs_llama);
  std::filesystem::remove(gguf);
}

std::string llmserve(const std::string& args) { return std::string(LLMSERVE_BIN) + " " + args + " 2>&1"; }

// convert --from hf without --vocab-from carries the directory's tokenizer.json as
// llama.cpp's converter maps it: the vocabulary of llama.cpp's own conversion.
TEST(HfDirectoryTest, ConvertedTinyStoriesHasLlamaCppsVocabulary) {
  if (!std::filesystem::exists(kModels + "/hf/model.safetensors")) GTEST_SKIP() << "needs " << kModels;
  const std::string out = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_tinystories_vocab.gguf";
  const auto conv = test::run_command(llmserve("convert --from hf " + kModels + "/hf " + out));
  ASSERT_EQ(conv.exit_code, 0) << conv.out;
  auto ours = GgufFile::open(out);
  auto theirs = GgufFile::open(kModels + "/TinyStories-656K-Q8_0.gguf");
  ASSERT_TRUE(ours.ok() && theirs.ok());
  for (const char* key : {"tokenizer.ggml.model", "tokenizer.ggml.tokens", "tokenizer.ggml.scores",
                          "tokenizer.ggml.token_type", "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
                          "tokenizer.ggml.unknown_token_id"}) {
    const gguf::Value* a = ours->find(key);
    const gguf::Value* b = theirs->find(key);
    ASSERT_TRUE(a != nullptr && b != nullptr) << key;
    if (b->is_array()) {
      ASSERT_EQ(a->as_array().items.size(), b->as_array().items.size()) << key;
      for (size_t i = 0; i < b->as_array().items.size(); ++i) {
        EXPECT_EQ(a->as_array().items[i].summary(), b->as_array().items[i].summary()) << key << "[" << i << "]";
      }
    } else {
      EXPECT_EQ(a->summary(), b->summary()) << key;
    }
  }
  std::filesystem::remove(out);
}

// quantize reads a directory as the GGUF file of the same weights: the same output.
TEST(HfDirectoryTest, QuantizingADirectoryIsQuantizingItsGguf) {
  const std::string base = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_hfquant";
  const std::string shape = "--preset tiny --arch qwen2 --dim 64 --heads 4 --kv-heads 2 --layers 2 --type bf16 ";
  ASSERT_EQ(test::run_command(llmserve("make-model " + shape + base + ".gguf")).exit_code, 0);
  ASSERT_EQ(test::run_command(llmserve("make-model " + shape + "--format hf " + base)).exit_code, 0);
  const auto a = test::run_command(llmserve("quantize " + base + ".gguf " + base + "-a.gguf --type q8_0"));
  const auto b = test::run_command(llmserve("quantize " + base + " " + base + "-b.gguf --type q8_0 --vocab-from " +
                                            base + ".gguf"));
  ASSERT_EQ(a.exit_code, 0) << a.out;
  ASSERT_EQ(b.exit_code, 0) << b.out;
  auto fa = GgufFile::open(base + "-a.gguf");
  auto fb = GgufFile::open(base + "-b.gguf");
  ASSERT_TRUE(fa.ok() && fb.ok());
  ASSERT_EQ(fa->tensors().size(), fb->tensors().size());
  for (const auto& t : fa->tensors()) {
    const GgufTensorInfo* u = fb->find_tensor(t.name);
    ASSERT_NE(u, nullptr) << t.name;
    EXPECT_TRUE(u->dtype == t.dtype && u->num_bytes == t.num_bytes && std::memcmp(u->data, t.data, t.num_bytes) == 0)
        << t.name;
  }
  EXPECT_EQ(fb->get_string_array("tokenizer.ggml.tokens").value(), fa->get_string_array("tokenizer.ggml.tokens").value());
  // Without a vocabulary the output could not be served: an error that says what to give.
  const auto c = test::run_command(llmserve("quantize " + base + " " + base + "-c.gguf --type q8_0"));
  EXPECT_NE(c.exit_code, 0);
  EXPECT_NE(c.out.find("has no tokenizer.json"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("--vocab-from"), std::string::npos) << c.out;
  std::filesystem::remove_all(base);
  for (const char* f : {".gguf", "-a.gguf", "-b.gguf", "-c.gguf"}) std::filesystem::remove(base + f);
}

// What the commands say for what people have instead of a model directory.
TEST(HfDirectoryTest, CommandsExplainWhatIsWrongWithADirectory) {
  const std::string dir = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_hfpickle";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/config.json") << R"({"architectures": ["LlamaForCausalLM"]})";
  std::ofstream(dir + "/pytorch_model.bin") << "PK";
  for (const std::string cmd : {"inspect " + dir, "serve -m " + dir + " --port 0", "generate -m " + dir + " -p x"}) {
    const auto r = test::run_command(llmserve(cmd));
    EXPECT_NE(r.exit_code, 0) << cmd;
    EXPECT_NE(r.out.find("PyTorch pickles (pytorch_model.bin)"), std::string::npos) << cmd << ": " << r.out;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace llms
