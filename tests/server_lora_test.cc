// LoRA adapters served end to end: `lora` (NAME=PATH) at start, a request naming an
// adapter as its model runs with it, /v1/models lists each with its base as parent,
// prefix-cache and result-cache entries are per adapter, and a batch mixing eight
// adapters and the base gives each request exactly what it gets alone.
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <thread>

#include "io/gguf_file.h"
#include "io/lora_file.h"
#include "server/config_file.h"
#include "lora_test_util.h"
#include "server_test_util.h"
#include "tools/synthetic.h"
#include "tools/synthetic_lora.h"

namespace llms::test {
namespace {

constexpr int kAdapters = 8;
constexpr int kTokens = 24;

class ServerLoraTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(::testing::TempDir() + "/server_lora_test_" + std::to_string(getpid()));
    GgufFile base = write_lora_base(*dir_, 5);
    for (int i = 0; i < kAdapters; ++i) {
      SyntheticLoraSpec ls;
      ls.rank = 4 + i, ls.alpha = 16, ls.std_dev = 0.15f, ls.seed = 100 + static_cast<uint64_t>(i);
      const LoraFile file = make_synthetic_lora(base, ls).value();
      // Half as llama.cpp's GGUF adapters, half as PEFT directories.
      const Status s = i % 2 == 0 ? write_lora_gguf(file, DType::kF32, adapter_path(i))
                                  : write_lora_peft(file, base, DType::kF16, adapter_path(i));
      ASSERT_TRUE(s.ok()) << s.to_string();
    }
  }
  static void TearDownTestSuite() {
    std::filesystem::remove_all(*dir_);
    delete dir_;
  }

  static std::string base_path() { return *dir_ + "/base.gguf"; }
  static std::string adapter_path(int i) {
    return *dir_ + "/lora" + std::to_string(i) + (i % 2 == 0 ? ".gguf" : "_peft");
  }
  static std::string adapter_name(int i) { return "tune" + std::to_string(i); }
  static std::string lora_specs() {
    std::string out;
    for (int i = 0; i < kAdapters; ++i) out += adapter_name(i) + "=" + adapter_path(i) + "\n";
    return out;
  }
  // A server of the base with every adapter; `result_cache`: its bytes (0: off).
  static std::unique_ptr<LlmServer> serve(int64_t result_cache) {
    return start_server(base_path(), [result_cache](ServeConfig& c) {
      c.server.model_name = "base";
      c.server.lora = lora_specs();
      c.engine.result_cache_bytes = result_cache;
    });
  }
  static Json completion(const std::string& model, const std::string& prompt) {
    return Json{{"model", model},   {"prompt", prompt},     {"max_tokens", kTokens},
                {"temperature", 0}, {"ignore_eos", true}};
  }

  static std::string* dir_;
};

std::string* ServerLoraTest::dir_ = nullptr;

TEST_F(ServerLoraTest, ModelsListsEachAdapterWithItsBaseAsParent) {
  auto server = serve(0);
  ASSERT_NE(server, nullptr);
  const Json list = http_get(server->port(), "/v1/models").json();
  ASSERT_EQ(list["data"].size(), static_cast<size_t>(kAdapters + 1)) << list.dump();
  EXPECT_EQ(list["data"][0]["id"], "base");
  std::map<std::string, Json> by_id;
  for (const Json& card : list["data"]) by_id[card["id"].get<std::string>()] = card;
  for (int i = 0; i < kAdapters; ++i) {
    const Json& card = by_id[adapter_name(i)];
    EXPECT_EQ(card["parent"], "base") << card.dump();
    EXPECT_EQ(card["root"], adapter_path(i)) << card.dump();
  }
  const HttpResult one = http_get(server->port(), "/v1/models/" + adapter_name(3));
  EXPECT_EQ(one.status, 200);
  EXPECT_EQ(one.json()["parent"], "base");
  EXPECT_EQ(http_get(server->port(), "/v1/models/tune99").status, 404);
}

TEST_F(ServerLoraTest, UnknownModelIsStillNotFoundAndTheBaseNameIsTheBase) {
  auto server = serve(0);
  ASSERT_NE(server, nullptr);
  const HttpResult unknown = http_post(server->port(), "/v1/completions", completion("tune99", "Hello"));
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(unknown.json()["error"]["code"], "model_not_found") << unknown.body;
  const Json base = http_post(server->port(), "/v1/completions", completion("base", "Hello")).json();
  const Json none = http_post(server->port(), "/v1/completions", Json{{"prompt", "Hello"}, {"max_tokens", kTokens},
                                                                         {"temperature", 0}, {"ignore_eos", true}})
                        .json();
  EXPECT_EQ(base["choices"][0]["text"], none["choices"][0]["text"]);
  const Json tuned = http_post(server->port(), "/v1/completions", completion(adapter_name(0), "Hello")).json();
  EXPECT_EQ(tuned["model"], adapter_name(0));  // the answer names the model asked for
  EXPECT_NE(tuned["choices"][0]["text"], base["choices"][0]["text"]);
  // Chat goes the same way.
  const Json chat = http_post(server->port(), "/v1/chat/completions",
                              Json{{"model", adapter_name(1)},
                                   {"messages", Json::array({{{"role", "user"}, {"content", "Hi"}}})},
                                   {"max_tokens", 4}})
                        .json();
  EXPECT_EQ(chat["model"], adapter_name(1)) << chat.dump();
}

// The prefix cache never shares blocks between adapters (their keys and values
// differ), and shares them between requests of one adapter.
TEST_F(ServerLoraTest, PrefixCacheIsPerAdapter) {
  auto server = serve(0);
  ASSERT_NE(server, nullptr);
  std::string prompt;
  for (int i = 0; i < 12; ++i) prompt += "the quick brown fox jumps ";
  auto cached = [&](const std::string& model) {
    const Json r = http_post(server->port(), "/v1/completions", completion(model, prompt)).json();
    return r["usage"]["prompt_tokens_details"]["cached_tokens"].get<int64_t>();
  };
  EXPECT_EQ(cached(adapter_name(0)), 0);
  EXPECT_EQ(cached(adapter_name(1)), 0);  // the same prompt, another adapter: nothing cached
  EXPECT_EQ(cached("base"), 0);           // nor for the base
  EXPECT_GT(cached(adapter_name(1)), 0);  // the same adapter again: its blocks
  EXPECT_GT(cached("base"), 0);
}

// 32 requests over the 8 adapters and the base: run together, each gets exactly the
// tokens it gets alone. The answers alone come from a server with a result cache (so
// an adapter's answer replayed from the base's entry would show as equal to the base's).
TEST_F(ServerLoraTest, MixedBatchGivesEachRequestItsAnswerAlone) {
  const std::vector<std::string> prompts = {"Once upon a time", "The cat sat", "In a land far away", "Hello"};
  struct Job {
    std::string model, prompt;
  };
  std::vector<Job> jobs;
  for (int i = 0; i < 32; ++i) {
    const int m = i % (kAdapters + 1);
    jobs.push_back({m == kAdapters ? "base" : adapter_name(m), prompts[static_cast<size_t>(i) % prompts.size()]});
  }
  using Key = std::pair<std::string, std::string>;  // model, prompt
  std::map<Key, std::string> alone;
  {
    auto server = serve(16 << 20);
    ASSERT_NE(server, nullptr);
    for (const std::string& p : prompts) {  // the base first: its entries are in the result cache
      alone[Key("base", p)] = http_post(server->port(), "/v1/completions", completion("base", p)).json()["choices"][0]["text"];
    }
    for (const Job& j : jobs) {
      if (alone.count(Key(j.model, j.prompt))) continue;
      const Json r = http_post(server->port(), "/v1/completions", completion(j.model, j.prompt)).json();
      ASSERT_EQ(r["usage"]["completion_tokens"], kTokens) << r.dump();
      alone[Key(j.model, j.prompt)] = r["choices"][0]["text"];
      // The adapters' effect is visible: not the base's text.
      EXPECT_NE(alone[Key(j.model, j.prompt)], alone[Key("base", j.prompt)]) << j.model << " on " << j.prompt;
    }
  }
  auto server = serve(0);
  ASSERT_NE(server, nullptr);
  std::vector<Json> answers(jobs.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < jobs.size(); ++i) {
    threads.emplace_back([&, i] {
      answers[i] = http_post(server->port(), "/v1/completions", completion(jobs[i].model, jobs[i].prompt)).json();
    });
  }
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < jobs.size(); ++i) {
    ASSERT_TRUE(answers[i].contains("choices")) << answers[i].dump();
    EXPECT_EQ(answers[i]["choices"][0]["text"], alone[Key(jobs[i].model, jobs[i].prompt)])
        << "request " << i << ": " << jobs[i].model << " on " << jobs[i].prompt;
  }
  // They shared passes: fewer steps than tokens generated one request at a time.
  EXPECT_LT(metric(*server, "llmserve_engine_steps_total"), 32.0 * kTokens);
}

// Early exit never runs an adapter request (nor fails a step an adapter request
// shares with requests that may exit), and speculative proposals are verified with
// the adapter: the answers equal a plain server's.
TEST_F(ServerLoraTest, EarlyExitAndSpeculationLeaveAdapterAnswersAlone) {
  std::map<std::string, std::string> plain;
  {
    auto server = serve(0);
    ASSERT_NE(server, nullptr);
    for (int i = 0; i < 4; ++i) {
      plain[adapter_name(i)] =
          http_post(server->port(), "/v1/completions", completion(adapter_name(i), "Once upon a time"))
              .json()["choices"][0]["text"];
    }
  }
  auto server = start_server(base_path(), [](ServeConfig& c) {
    c.server.model_name = "base";
    c.server.lora = lora_specs();
    c.engine.result_cache_bytes = 0;
    c.engine.early_exit.layers = {1};
    c.engine.early_exit.threshold = 0.001;  // below 1 / n_vocab: a token that may exit does, after layer 1
    c.engine.speculative.mode = SpeculativeMode::kNgram;
  });
  ASSERT_NE(server, nullptr);
  // Alone, a base request exits early: the settings are live.
  ASSERT_EQ(http_post(server->port(), "/v1/completions", completion("base", "Hello")).status, 200);
  EXPECT_GT(metric(*server, "llmserve_early_exit_tokens_total{layer=\"1\"}"), 0);
  std::vector<Json> answers(8);
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {  // adapters and base (exiting) requests side by side
    threads.emplace_back([&, i] {
      const std::string model = i < 4 ? adapter_name(i) : "base";
      answers[static_cast<size_t>(i)] =
          http_post(server->port(), "/v1/completions", completion(model, "Once upon a time")).json();
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(answers[static_cast<size_t>(i)].contains("choices")) << answers[i].dump();
  for (int i = 0; i < 4; ++i) EXPECT_EQ(answers[static_cast<size_t>(i)]["choices"][0]["text"], plain[adapter_name(i)]);
}

// What is wrong with --lora stops the server at start, naming the entry.
TEST_F(ServerLoraTest, BadAdapterListsAreStartupErrors) {
  auto start_with = [&](const std::string& lora) {
    ServeConfig c;
    c.server.model_path = base_path();
    c.server.model_name = "base";
    c.server.port = 0;
    c.engine.kv.cache_bytes = 16 << 20;
    c.engine.threads = 1;
    c.server.lora = lora;
    auto s = LlmServer::start(c);
    return s.ok() ? std::string() : s.status().message();
  };
  EXPECT_NE(start_with("tune0" + adapter_path(0)).find("is not NAME=PATH"), std::string::npos);
  EXPECT_NE(start_with("a=" + adapter_path(0) + "\na=" + adapter_path(2)).find("'a' is given twice"),
            std::string::npos);
  EXPECT_NE(start_with("base=" + adapter_path(0)).find("the base model's name"), std::string::npos);
  EXPECT_NE(start_with("a=").find("the path is empty"), std::string::npos);
  const std::string missing = start_with("gone=" + *dir_ + "/no_such_adapter.gguf");
  EXPECT_NE(missing.find("adapter 'gone'"), std::string::npos) << missing;
  // A base model the adapter does not fit: another shape.
  SyntheticSpec other = synthetic_preset("tiny").value();
  other.n_embd = 96, other.n_ff = 256;
  ASSERT_TRUE(write_synthetic_model(other, *dir_ + "/other.gguf").ok());
  ServeConfig c;
  c.server.model_path = *dir_ + "/other.gguf";
  c.server.port = 0;
  c.engine.kv.cache_bytes = 16 << 20;
  c.engine.threads = 1;
  c.server.lora = "tune0=" + adapter_path(0);
  auto s = LlmServer::start(c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("adapter 'tune0'"), std::string::npos) << s.status().message();
  // Precision variants are refused (an adapter binds to one model's weights).
  c.server.model_path = base_path();
  ASSERT_TRUE(set_config_value(c, "precision_variants", "q8_0").ok());
  auto v = LlmServer::start(c);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("precision_variants"), std::string::npos) << v.status().message();
}

}  // namespace
}  // namespace llms::test
