// LoRA adapters under a memory budget (lora_memory, --lora-memory): the budget holds
// two of three adapters; requests cycling over all three get what each gets on a
// server that holds them all, the resident bytes never pass the budget, and each
// request for an unloaded adapter loads it (and unloads the least recently used one)
// as the counters show. An adapter bigger than the budget is refused when it is
// registered. Loading and unloading adapters through the admin API while requests run
// loses none: each ends with its own answer, or, for the adapter unloaded at that
// moment, the unknown-model 404. Loading an adapter again holds no HTTP I/O thread.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <map>
#include <thread>

#include "base/mapped_file.h"
#include "deploy_test_util.h"
#include "io/gguf_file.h"
#include "io/lora_file.h"
#include "model/lora.h"
#include "model/model.h"
#include "lora_test_util.h"
#include "server_test_util.h"
#include "tools/synthetic.h"
#include "tools/synthetic_lora.h"

namespace llms::test {
namespace {

constexpr int kAdapters = 3;
constexpr int kTokens = 12;

class ServerLoraMemoryTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(::testing::TempDir() + "/server_lora_memory_test_" + std::to_string(getpid()));
    GgufFile base = write_lora_base(*dir_, 9);
    for (int i = 0; i < kAdapters; ++i) {  // one rank: each holds the same bytes
      SyntheticLoraSpec ls;
      ls.rank = 8, ls.alpha = 16, ls.std_dev = 0.15f, ls.seed = 300 + static_cast<uint64_t>(i);
      ASSERT_TRUE(write_lora_gguf(make_synthetic_lora(base, ls).value(), DType::kF32, adapter_path(i)).ok());
    }
    auto model = Model::load(base_path()).value();
    adapter_bytes_ = LoraAdapter::load(adapter_path(0), *model).value()->bytes();
    ASSERT_GT(adapter_bytes_, 0);
    // Each adapter alone, on a server that holds them all.
    alone_ = new std::map<std::string, std::string>();
    auto server = serve(0, false);
    ASSERT_NE(server, nullptr);
    for (const std::string& m : models()) {
      const HttpResult r = http_post(server->port(), "/v1/completions", completion(m));
      ASSERT_EQ(r.status, 200) << r.body;
      (*alone_)[m] = r.json()["choices"][0]["text"].get<std::string>();
    }
    for (int i = 0; i < kAdapters; ++i) ASSERT_NE((*alone_)[name(i)], (*alone_)["base"]) << "adapter " << i;
  }
  static void TearDownTestSuite() {
    std::filesystem::remove_all(*dir_);
    delete dir_;
    delete alone_;
  }

  static std::string base_path() { return *dir_ + "/base.gguf"; }
  static std::string adapter_path(int i) { return *dir_ + "/lora" + std::to_string(i) + ".gguf"; }
  static std::string name(int i) { return "tune" + std::to_string(i); }
  static std::vector<std::string> models() { return {"base", name(0), name(1), name(2)}; }
  // A budget of two adapters and a half.
  static int64_t budget() { return 2 * adapter_bytes_ + adapter_bytes_ / 2; }
  static std::unique_ptr<LlmServer> serve(int64_t lora_memory, bool admin) {
    const std::string token = write_text(temp_path("lora_memory_token"), std::string(kToken) + "\n");
    return start_server(base_path(), [&](ServeConfig& c) {
      c.server.model_name = "base";
      for (int i = 0; i < kAdapters; ++i) c.server.lora += name(i) + "=" + adapter_path(i) + "\n";
      c.server.lora_memory = lora_memory;
      c.engine.result_cache_bytes = 0;  // every request runs
      if (admin) c.server.admin_token_file = token;
    });
  }
  static Json completion(const std::string& model) {
    return Json{{"model", model}, {"prompt", "Once upon a time"}, {"max_tokens", kTokens},
                {"temperature", 0}, {"ignore_eos", true}};
  }

  static std::string* dir_;
  static std::map<std::string, std::string>* alone_;
  static int64_t adapter_bytes_;
};

std::string* ServerLoraMemoryTest::dir_ = nullptr;
std::map<std::string, std::string>* ServerLoraMemoryTest::alone_ = nullptr;
int64_t ServerLoraMemoryTest::adapter_bytes_ = 0;

TEST_F(ServerLoraMemoryTest, BudgetHoldsTwoOfThreeAndRequestsCycleOverAll) {
  auto server = serve(budget(), false);
  ASSERT_NE(server, nullptr);
  const int port = server->port();
  // At start: three read, the first unloaded to make room for the third.
  EXPECT_EQ(metric(*server, "llmserve_lora_loads_total"), 3);
  EXPECT_EQ(metric(*server, "llmserve_lora_evictions_total"), 1);
  EXPECT_EQ(metric(*server, "llmserve_lora_resident_bytes"), 2.0 * adapter_bytes_);
  EXPECT_EQ(metric(*server, "llmserve_lora_memory_budget_bytes"), budget());
  // Cycling over three adapters with room for two, every request finds its adapter
  // unloaded (the least recently used is the one it needs next): one load and one
  // eviction each.
  const int kRequests = 9;
  for (int k = 0; k < kRequests; ++k) {
    const std::string m = name(k % kAdapters);
    const HttpResult r = http_post(port, "/v1/completions", completion(m));
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.json()["choices"][0]["text"], (*alone_)[m]) << "request " << k << " (" << m << ")";
    EXPECT_LE(metric(*server, "llmserve_lora_resident_bytes"), budget()) << "after request " << k;
    EXPECT_EQ(metric(*server, "llmserve_lora_loads_total"), 3 + k + 1) << "after request " << k;
    EXPECT_EQ(metric(*server, "llmserve_lora_evictions_total"), 1 + k + 1) << "after request " << k;
  }
  EXPECT_EQ(metric(*server, "llmserve_lora_load_seconds_count"), 3 + kRequests);
  EXPECT_GT(metric(*server, "llmserve_lora_load_seconds_sum"), 0);
  // The adapter just used is resident: asking again loads nothing; nor does the base.
  const std::string last = name((kRequests - 1) % kAdapters);
  ASSERT_EQ(http_post(port, "/v1/completions", completion(last)).status, 200);
  ASSERT_EQ(http_post(port, "/v1/completions", completion("base")).status, 200);
  EXPECT_EQ(metric(*server, "llmserve_lora_loads_total"), 3 + kRequests);
  // /v1/models still lists all three (an unloaded adapter stays registered).
  EXPECT_EQ(http_get(port, "/v1/models").json()["data"].size(), static_cast<size_t>(kAdapters + 1));
}

TEST_F(ServerLoraMemoryTest, AnAdapterBiggerThanTheBudgetIsRefusedWhenRegistered) {
  ServeConfig c;
  c.server.model_path = base_path();
  c.server.model_name = "base";
  c.server.port = 0;
  c.engine.kv.cache_bytes = 16 << 20;
  c.engine.threads = 1;
  c.server.lora = name(0) + "=" + adapter_path(0);
  c.server.lora_memory = adapter_bytes_ - 1;
  auto s = LlmServer::start(c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("more than the whole LoRA memory budget"), std::string::npos)
      << s.status().message();
  EXPECT_NE(s.status().message().find("adapter 'tune0'"), std::string::npos) << s.status().message();
  // Through the admin API: a 400 naming it, and nothing registered.
  auto server = start_server(base_path(), [&](ServeConfig& sc) {
    sc.server.model_name = "base";
    sc.server.lora_memory = adapter_bytes_ - 1;
    sc.server.admin_token_file = write_text(temp_path("lora_memory_token2"), std::string(kToken) + "\n");
  });
  ASSERT_NE(server, nullptr);
  const HttpResult r = http_post(server->port(), "/v1/load_lora_adapter",
                                 Json{{"lora_name", "big"}, {"lora_path", adapter_path(0)}}, kAuth);
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("more than the whole LoRA memory budget"), std::string::npos) << r.body;
  EXPECT_EQ(http_post(server->port(), "/v1/completions", completion("big")).status, 404);
}

// Two clients cycle over the base and the three adapters (room for two) while the
// admin API unloads and loads tune2 again and again. Every request ends with the
// answer its model gives alone, but for tune2 while it is unloaded: the unknown-model
// 404. A 503 lora_memory_full (both resident adapters in use at that instant) says
// to retry, and the client does, as its Retry-After asks.
TEST_F(ServerLoraMemoryTest, LoadAndUnloadUnderLoadLoseNoRequest) {
  auto server = serve(budget(), true);
  ASSERT_NE(server, nullptr);
  const int port = server->port();
  const int kClients = 2, kPerClient = 24;
  std::atomic<int> ok{0}, unloaded{0}, retries{0}, wrong{0};
  std::atomic<bool> done{false};
  std::vector<std::string> failures(kClients);
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      for (int k = 0; k < kPerClient; ++k) {
        const std::string m = models()[static_cast<size_t>(k + c) % models().size()];
        for (int attempt = 0;; ++attempt) {
          const HttpResult r = http_post(port, "/v1/completions", completion(m));
          if (r.status == 200 && r.json()["choices"][0]["text"] == (*alone_)[m]) {
            ++ok;
          } else if (r.status == 404 && m == name(2) && r.json()["error"]["code"] == "model_not_found") {
            ++unloaded;
          } else if (r.status == 503 && r.json()["error"]["code"] == "lora_memory_full" && attempt < 1000) {
            ++retries;
            std::this_thread::yield();
            continue;
          } else {
            ++wrong;
            failures[static_cast<size_t>(c)] = m + ": " + std::to_string(r.status) + " " + r.body;
          }
          break;
        }
      }
    });
  }
  int cycles = 0;
  std::thread admin([&] {
    while (!done.load()) {
      const HttpResult u = http_post(port, "/v1/unload_lora_adapter", Json{{"lora_name", name(2)}}, kAuth);
      const HttpResult l = http_post(port, "/v1/load_lora_adapter",
                                     Json{{"lora_name", name(2)}, {"lora_path", adapter_path(2)}}, kAuth);
      EXPECT_EQ(u.status, 200) << u.body;
      EXPECT_EQ(l.status, 200) << l.body;
      ++cycles;
    }
  });
  for (auto& t : clients) t.join();
  done.store(true);
  admin.join();
  for (const std::string& f : failures) EXPECT_TRUE(f.empty()) << f;
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(ok.load() + unloaded.load(), kClients * kPerClient);
  EXPECT_GT(cycles, 0);
  EXPECT_LE(metric(*server, "llmserve_lora_resident_bytes"), budget());
  // After the churn tune2 is registered again and answers as it does alone.
  const HttpResult again = http_post(port, "/v1/completions", completion(name(2)));
  ASSERT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(again.json()["choices"][0]["text"], (*alone_)[name(2)]);
  std::printf("ok %d, unloaded-404 %d, retried 503 %d, admin cycles %d\n", ok.load(), unloaded.load(), retries.load(),
              cycles);
}

// A request for an adapter --lora-memory had unloaded waits while its files are read
// again, off the HTTP I/O threads: with one I/O thread, and the adapter's
// adapter_config.json a FIFO nothing is written to yet (so the read waits), /health is
// answered; once the file's text is written, the request gets its adapter's answer.
TEST_F(ServerLoraMemoryTest, LoadingAnAdapterAgainHoldsNoIoThread) {
  // Adapter 0's factors as a PEFT directory, registered first and unloaded for tune1.
  const std::string peft = *dir_ + "/slow_peft";
  GgufFile base = GgufFile::open(base_path()).value();
  SyntheticLoraSpec ls;
  ls.rank = 8, ls.alpha = 16, ls.std_dev = 0.15f, ls.seed = 300;
  ASSERT_TRUE(write_lora_peft(make_synthetic_lora(base, ls).value(), base, DType::kF32, peft).ok());
  auto server = start_server(base_path(), [&](ServeConfig& c) {
    c.server.model_name = "base";
    c.server.lora = "slow=" + peft + "\n" + name(1) + "=" + adapter_path(1) + "\n";
    c.server.lora_memory = adapter_bytes_ + adapter_bytes_ / 2;  // room for one
    c.server.io_threads = 1;
    c.engine.result_cache_bytes = 0;
  });
  ASSERT_NE(server, nullptr);
  ASSERT_EQ(metric(*server, "llmserve_lora_evictions_total"), 1);  // slow, to make room for tune1
  const std::string config = peft + "/adapter_config.json";
  const std::string text = read_file(config).value();
  std::filesystem::remove(config);
  ASSERT_EQ(::mkfifo(config.c_str(), 0600), 0);
  HttpResult slow;
  std::thread client([&] { slow = http_post(server->port(), "/v1/completions", completion("slow")); });
  // A writer can open the FIFO once the load has it open for reading.
  int fd = -1;
  EXPECT_TRUE(poll_until([&] { return (fd = ::open(config.c_str(), O_WRONLY | O_NONBLOCK)) >= 0; }));
  RawClient health(server->port());
  EXPECT_TRUE(health.send_raw("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
  EXPECT_EQ(health.read_until("\r\n\r\n", 10).rfind("HTTP/1.1 200", 0), 0u) << health.received();
  if (fd >= 0) {
    EXPECT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
    ::close(fd);
  }
  client.join();
  ASSERT_EQ(slow.status, 200) << slow.body;
  EXPECT_EQ(slow.json()["choices"][0]["text"], (*alone_)[name(0)]);  // tune0's factors
  EXPECT_EQ(metric(*server, "llmserve_lora_loads_total"), 3);
}

}  // namespace
}  // namespace llms::test
