// Several models per server, end to end, on two real models (stories260K's GGUF file
// and tinystories-656k's Hugging Face directory): each request runs on the model its
// `model` names (or an alias of it; none: the first model) and answers exactly what
// that model answers served alone; an unknown model is a 404 listing the served ones;
// /v1/models lists each with its context and version; the memory limit counts every
// model's weights and KV cache at start; engine metrics carry a model label; the
// flags (--model NAME=PATH repeated, --models-dir, --alias) work from the command line.
#include <unistd.h>

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "server_test_util.h"

namespace llms::test {
namespace {

constexpr int kTokens = 16;

std::string tiny_dir() { return shared_dir() + "/models/tinystories-656k/hf"; }

bool have_models() { return have_stories() && std::filesystem::exists(tiny_dir() + "/config.json"); }

// stories260K as "stories" (the default) and tinystories-656k as "tiny", alias "small".
void two_models(ServeConfig& c) {
  c.server.model_path = "stories=" + stories_path() + "\ntiny=" + tiny_dir();
  c.server.alias = "tiny=small";
}

Json completion(const std::string& model, const std::string& prompt) {
  Json body = {{"prompt", prompt}, {"max_tokens", kTokens}, {"temperature", 0}, {"ignore_eos", true}};
  if (!model.empty()) body["model"] = model;
  return body;
}

Json chat(const std::string& model, const std::string& text) {
  return Json{{"model", model},
              {"messages", Json::array({Json{{"role", "user"}, {"content", text}}})},
              {"max_tokens", kTokens},
              {"temperature", 0},
              {"ignore_eos", true}};
}

// What a request answers: the text and its token counts.
struct Answer {
  std::string text;
  int64_t prompt_tokens = -1, completion_tokens = -1;
  bool operator==(const Answer&) const = default;
};

void PrintTo(const Answer& a, std::ostream* os) {
  *os << "{\"" << a.text << "\", prompt " << a.prompt_tokens << ", completion " << a.completion_tokens << "}";
}

Answer answer_of(int port, const std::string& path, const Json& body) {
  const HttpResult r = http_post(port, path, body);
  EXPECT_EQ(r.status, 200) << r.body;
  const Json j = r.json();
  if (r.status != 200 || !j.is_object()) return {};
  const Json& choice = j["choices"][0];
  return Answer{choice.contains("text") ? choice["text"].get<std::string>()
                                        : choice["message"]["content"].get<std::string>(),
                j["usage"]["prompt_tokens"].get<int64_t>(), j["usage"]["completion_tokens"].get<int64_t>()};
}

const std::vector<std::string>& prompts() {
  static const std::vector<std::string> p = {"Once upon a time", "The little dog", "Lily saw a big"};
  return p;
}

// The weights and KV pool a server of one model holds, as its metrics publish them.
double resident_bytes(LlmServer& s) {
  return metric(s, "llmserve_memory_bytes{part=\"weights\"}") +
         metric(s, "llmserve_memory_bytes{part=\"kv_reserved\"}");
}

class ServerModelsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_models()) {
      GTEST_SKIP() << "needs stories260K.gguf and tinystories-656k/hf in " << shared_dir() << "/models";
    }
  }
};

TEST_F(ServerModelsTest, EachRequestAnswersAsItsModelServedAlone) {
  std::vector<Answer> stories_alone, tiny_alone;
  {
    auto s = start_server(stories_path());
    auto t = start_server(tiny_dir());
    for (const std::string& p : prompts()) {
      stories_alone.push_back(answer_of(s->port(), "/v1/completions", completion("", p)));
      tiny_alone.push_back(answer_of(t->port(), "/v1/completions", completion("", p)));
    }
    stories_alone.push_back(answer_of(s->port(), "/v1/chat/completions", chat("", "Tell me a story")));
    tiny_alone.push_back(answer_of(t->port(), "/v1/chat/completions", chat("", "Tell me a story")));
  }
  // The two models do answer differently, or the test could not tell them apart.
  ASSERT_NE(stories_alone[0].text, tiny_alone[0].text);

  auto server = start_server(stories_path(), two_models);
  const int port = server->port();
  // Both models at once: each prompt to each model from its own thread.
  std::vector<Answer> stories(prompts().size()), tiny(prompts().size()), by_alias(prompts().size()),
      by_default(prompts().size());
  std::vector<std::thread> threads;
  auto ask = [port](const std::string& model, const std::string& prompt, Answer* out) {
    *out = answer_of(port, "/v1/completions", completion(model, prompt));
  };
  for (size_t i = 0; i < prompts().size(); ++i) {
    threads.emplace_back(ask, "stories", prompts()[i], &stories[i]);
    threads.emplace_back(ask, "tiny", prompts()[i], &tiny[i]);
    threads.emplace_back(ask, "small", prompts()[i], &by_alias[i]);
    threads.emplace_back(ask, "", prompts()[i], &by_default[i]);
  }
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < prompts().size(); ++i) {
    EXPECT_EQ(stories[i], stories_alone[i]) << prompts()[i];
    EXPECT_EQ(tiny[i], tiny_alone[i]) << prompts()[i];
    EXPECT_EQ(by_alias[i], tiny_alone[i]) << prompts()[i];
    EXPECT_EQ(by_default[i], stories_alone[i]) << prompts()[i];  // no model: the first
  }
  // Chat runs each model's own template and tokenizer.
  EXPECT_EQ(answer_of(port, "/v1/chat/completions", chat("stories", "Tell me a story")), stories_alone.back());
  EXPECT_EQ(answer_of(port, "/v1/chat/completions", chat("tiny", "Tell me a story")), tiny_alone.back());
  // The answer names the model as asked.
  EXPECT_EQ(http_post(port, "/v1/completions", completion("small", "Once")).json()["model"], "small");
  // Tokenizing goes by the model too: the two vocabularies differ.
  const Json s_tok = http_post(port, "/tokenize", Json{{"model", "stories"}, {"prompt", "Once upon a time"}}).json();
  const Json t_tok = http_post(port, "/tokenize", Json{{"model", "tiny"}, {"prompt", "Once upon a time"}}).json();
  EXPECT_EQ(s_tok["count"].get<int64_t>(), stories_alone[0].prompt_tokens);
  EXPECT_EQ(t_tok["count"].get<int64_t>(), tiny_alone[0].prompt_tokens);
}

TEST_F(ServerModelsTest, StreamsAndEmbeddingsRouteByModelToo) {
  Json tiny_embedding, stories_embedding;
  std::string tiny_text;
  {
    auto t = start_server(tiny_dir());
    auto s = start_server(stories_path());
    tiny_embedding = http_post(t->port(), "/v1/embeddings", Json{{"input", "Once upon a time"}}).json();
    stories_embedding = http_post(s->port(), "/v1/embeddings", Json{{"input", "Once upon a time"}}).json();
    tiny_text = answer_of(t->port(), "/v1/completions", completion("", prompts()[2])).text;
  }
  auto server = start_server(stories_path(), two_models);
  Json body = completion("tiny", prompts()[2]);
  body["stream"] = true;
  const SseResult sse = http_stream(server->port(), "/v1/completions", body);
  ASSERT_EQ(sse.status, 200);
  ASSERT_TRUE(sse.done());
  std::string streamed;
  for (const Json& chunk : sse.chunks()) {
    if (!chunk["choices"].empty()) streamed += chunk["choices"][0].value("text", "");
  }
  EXPECT_EQ(streamed, tiny_text);
  const Json e =
      http_post(server->port(), "/v1/embeddings", Json{{"model", "tiny"}, {"input", "Once upon a time"}}).json();
  EXPECT_EQ(e["data"][0]["embedding"], tiny_embedding["data"][0]["embedding"]);
  const Json d = http_post(server->port(), "/v1/embeddings", Json{{"input", "Once upon a time"}}).json();
  EXPECT_EQ(d["data"][0]["embedding"], stories_embedding["data"][0]["embedding"]);
  EXPECT_NE(e["data"][0]["embedding"], d["data"][0]["embedding"]);
}

TEST_F(ServerModelsTest, UnknownModelIs404ListingTheServedOnes) {
  auto server = start_server(stories_path(), two_models);
  for (const char* path : {"/v1/completions", "/v1/chat/completions"}) {
    const Json body = std::string(path) == "/v1/completions" ? completion("gpt-4", "Once") : chat("gpt-4", "Hi");
    const HttpResult r = http_post(server->port(), path, body);
    EXPECT_EQ(r.status, 404) << r.body;
    const Json e = r.json()["error"];
    EXPECT_EQ(e["code"], "model_not_found") << r.body;
    EXPECT_EQ(e["param"], "model") << r.body;
    const std::string message = e["message"].get<std::string>();
    EXPECT_NE(message.find("'gpt-4'"), std::string::npos) << message;
    EXPECT_NE(message.find("'stories', 'tiny'"), std::string::npos) << message;
  }
  const HttpResult card = http_get(server->port(), "/v1/models/gpt-4");
  EXPECT_EQ(card.status, 404) << card.body;
  EXPECT_EQ(card.json()["error"]["code"], "model_not_found");
}

TEST_F(ServerModelsTest, ModelsListsEachWithItsContextAndVersion) {
  int stories_len = 0, tiny_len = 0;
  {
    auto s = start_server(stories_path());
    auto t = start_server(tiny_dir());
    stories_len = http_get(s->port(), "/v1/models").json()["data"][0]["max_model_len"].get<int>();
    tiny_len = http_get(t->port(), "/v1/models").json()["data"][0]["max_model_len"].get<int>();
  }
  auto server = start_server(stories_path(), two_models);
  const Json list = http_get(server->port(), "/v1/models").json();
  ASSERT_EQ(list["data"].size(), 2u) << list.dump();
  const Json& a = list["data"][0];
  const Json& b = list["data"][1];
  EXPECT_EQ(a["id"], "stories");
  EXPECT_EQ(b["id"], "tiny");
  EXPECT_EQ(a["max_model_len"], stories_len);
  EXPECT_EQ(b["max_model_len"], tiny_len);
  for (const Json* m : {&a, &b}) {
    EXPECT_EQ((*m)["object"], "model");
    EXPECT_EQ((*m)["owned_by"], "llmserve");
    EXPECT_EQ((*m)["version"], (*m)["id"]);  // a model served from a file: its version is its name
  }
  EXPECT_FALSE(a.contains("aliases"));
  EXPECT_EQ(b["aliases"], Json::array({"small"}));
  // One card by name or alias.
  EXPECT_EQ(http_get(server->port(), "/v1/models/tiny").json(), b);
  EXPECT_EQ(http_get(server->port(), "/v1/models/small").json(), b);
  EXPECT_EQ(http_get(server->port(), "/v1/models/stories").json(), a);
}

TEST_F(ServerModelsTest, MemoryLimitCountsEveryModel) {
  double stories_bytes = 0, tiny_bytes = 0;
  {
    auto s = start_server(stories_path());
    auto t = start_server(tiny_dir());
    stories_bytes = resident_bytes(*s);
    tiny_bytes = resident_bytes(*t);
  }
  ASSERT_GT(stories_bytes, 0);
  ASSERT_GT(tiny_bytes, 0);
  // A limit whose low watermark (0.7 of it) holds either model alone but not both.
  const double low = std::max(stories_bytes, tiny_bytes) + std::min(stories_bytes, tiny_bytes) / 2;
  const auto limit = static_cast<int64_t>(low / 0.7);
  auto limited = [limit](ServeConfig& c) {
    c.engine.admission.memory_limit_bytes = limit;
    c.engine.admission.rss_low = 0.7;
  };
  EXPECT_NE(start_server(stories_path(), limited), nullptr);
  EXPECT_NE(start_server(tiny_dir(), limited), nullptr);
  ServeConfig c;
  c.server.port = 0;
  c.engine.kv.cache_bytes = 16 << 20;  // as start_server() sizes it
  c.engine.threads = 1;
  two_models(c);
  limited(c);
  auto both = LlmServer::start(c);
  ASSERT_FALSE(both.ok());
  const std::string message = both.status().message();
  EXPECT_NE(message.find("model 'tiny'"), std::string::npos) << message;  // the one that did not fit
  EXPECT_NE(message.find("models loaded before it"), std::string::npos) << message;
  EXPECT_NE(message.find("memory_limit_bytes"), std::string::npos) << message;
}

TEST_F(ServerModelsTest, EngineMetricsCarryTheModel) {
  auto server = start_server(stories_path(), two_models);
  const int port = server->port();
  int64_t stories_generated = 0, tiny_generated = 0, stories_prompt = 0, tiny_prompt = 0;
  for (int i = 0; i < 3; ++i) {
    const Answer a = answer_of(port, "/v1/completions", completion("stories", prompts()[static_cast<size_t>(i)]));
    stories_generated += a.completion_tokens;
    stories_prompt += a.prompt_tokens;
  }
  const Answer t = answer_of(port, "/v1/completions", completion("small", prompts()[0]));
  tiny_generated = t.completion_tokens;
  tiny_prompt = t.prompt_tokens;
  const std::string text = http_get(port, "/metrics").body;
  EXPECT_EQ(metric(text, "llmserve_requests_finished_total{model=\"stories\",reason=\"length\"}"), 3) << text;
  EXPECT_EQ(metric(text, "llmserve_requests_finished_total{model=\"tiny\",reason=\"length\"}"), 1);
  EXPECT_EQ(metric(text, "llmserve_generation_tokens_total{model=\"stories\"}"), stories_generated);
  EXPECT_EQ(metric(text, "llmserve_generation_tokens_total{model=\"tiny\"}"), tiny_generated);
  EXPECT_EQ(metric(text, "llmserve_prompt_tokens_total{model=\"stories\"}"), stories_prompt);
  EXPECT_EQ(metric(text, "llmserve_prompt_tokens_total{model=\"tiny\"}"), tiny_prompt);
  // vLLM's names carry each model's name as model_name.
  EXPECT_NE(text.find("vllm:num_requests_running{model_name=\"tiny\""), std::string::npos) << text;
  EXPECT_NE(text.find("vllm:num_requests_running{model_name=\"stories\""), std::string::npos);
}

TEST_F(ServerModelsTest, OneModelKeepsItsMetricsAsBefore) {
  auto server = start_server(stories_path());
  EXPECT_EQ(answer_of(server->port(), "/v1/completions", completion("", "Once")).completion_tokens, kTokens);
  const std::string text = http_get(server->port(), "/metrics").body;
  EXPECT_EQ(text.find("model=\""), std::string::npos);  // no model label with one model
  EXPECT_EQ(metric(text, "llmserve_generation_tokens_total"), kTokens);
}

TEST_F(ServerModelsTest, ModelsDirServesEachModelNamedAfterIt) {
  const std::string dir = ::testing::TempDir() + "/server_models_test_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  std::filesystem::create_symlink(stories_path(), dir + "/stories.gguf");
  std::filesystem::create_directory_symlink(tiny_dir(), dir + "/tiny");
  std::ofstream(dir + "/README.txt") << "not a model\n";
  Answer alone;
  {
    auto t = start_server(tiny_dir());
    alone = answer_of(t->port(), "/v1/completions", completion("", prompts()[1]));
  }
  {
    auto server = start_server("", [&](ServeConfig& c) {
      c.server.model_path.clear();
      c.server.models_dir = dir;
    });
    const Json list = http_get(server->port(), "/v1/models").json();
    ASSERT_EQ(list["data"].size(), 2u) << list.dump();
    EXPECT_EQ(list["data"][0]["id"], "stories");  // by name: the first is the default
    EXPECT_EQ(list["data"][1]["id"], "tiny");
    EXPECT_EQ(answer_of(server->port(), "/v1/completions", completion("tiny", prompts()[1])), alone);
  }
  std::filesystem::remove_all(dir);
}

TEST_F(ServerModelsTest, CommandLineFlags) {
  const std::string args = "-t 1 --kv-cache-memory 16MiB --model stories=" + stories_path() + " --model tiny=" +
                           tiny_dir() + " --alias tiny=small --alias stories=default";
  const ServeChild child = spawn_serve(args);
  ASSERT_GT(child.port, 0);
  const Json list = http_get(child.port, "/v1/models").json();
  ASSERT_EQ(list["data"].size(), 2u) << list.dump();
  EXPECT_EQ(list["data"][0]["id"], "stories");
  EXPECT_EQ(list["data"][0]["aliases"], Json::array({"default"}));
  EXPECT_EQ(list["data"][1]["aliases"], Json::array({"small"}));
  EXPECT_EQ(http_post(child.port, "/v1/completions", completion("default", "Once")).status, 200);
  EXPECT_EQ(http_post(child.port, "/v1/completions", completion("small", "Once")).status, 200);
  EXPECT_EQ(http_post(child.port, "/v1/completions", completion("hf", "Once")).status, 404);
  EXPECT_EQ(WEXITSTATUS(stop_serve(child)), 0);
}

TEST_F(ServerModelsTest, RefusedCombinationsSayWhy) {
  auto refused = [](const std::function<void(ServeConfig&)>& tweak) {
    ServeConfig c;
    c.server.port = 0;
    two_models(c);
    tweak(c);
    const Status s = c.validate();
    return s.ok() ? std::string() : s.message();
  };
  EXPECT_NE(refused([](ServeConfig& c) { c.server.model_root = "/nonexistent"; }).find("model_root"),
            std::string::npos);
  EXPECT_NE(refused([](ServeConfig& c) { c.server.kv_events = "tcp://127.0.0.1:5557"; }).find("kv_events"),
            std::string::npos);
  EXPECT_NE(refused([](ServeConfig& c) { c.server.alias = "nope=x"; }).find("no model 'nope'"), std::string::npos);
  EXPECT_NE(refused([](ServeConfig& c) { c.server.alias = "tiny=stories"; }).find("already names"), std::string::npos);
  EXPECT_NE(refused([](ServeConfig& c) { c.server.model_path += "\nstories=" + tiny_dir(); }).find("given twice"),
            std::string::npos);
  EXPECT_NE(refused([](ServeConfig& c) { c.server.lora = "tiny=/x.gguf"; }).find("served model"), std::string::npos);
  EXPECT_NE(refused([](ServeConfig& c) { c.server.model_name = "x"; }).find("model_name"), std::string::npos);
  EXPECT_NE(refused([](ServeConfig& c) { c.server.models_dir = "/nonexistent-dir"; }).find("models_dir"),
            std::string::npos);
  EXPECT_EQ(refused([](ServeConfig&) {}), "");
}

}  // namespace
}  // namespace llms::test
