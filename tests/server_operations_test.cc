// Operations: the memory breaker that gives memory back and closes again, readiness
// that does not follow KV use, Retry-After on every 503, SIGHUP reloading the config
// file and reopening the logs, the access log, JSON logs.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "command_util.h"
#include "engine/testing/engine_test_util.h"
#include "server_test_util.h"

namespace llms::test {
namespace {

std::string temp_path(const std::string& name) {
  const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_" + name;
  std::filesystem::remove(path);
  return path;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> lines_of(const std::string& path) {
  std::vector<std::string> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The latch of issue 54: weights, a KV pool of 8 MB and a burst of 48 requests took the
// process over the high mark of a 17 MB limit, and it stayed there with nothing running,
// refusing everything. Now memory is given back once the burst is over: it falls under
// the low mark and requests are served again within 10 s.
TEST(OperationsMemory, BreakerReleasesAndClosesAfterABurst) {
  if (!have_stories()) GTEST_SKIP() << "needs ../shared/models/stories260K.gguf";
  // The server is this build's binary: under AddressSanitizer its shadow memory alone is
  // far above a 17 MB limit.
  if (llms::testing::kUnderAsan) GTEST_SKIP() << "process memory is not the program's own under AddressSanitizer";
  constexpr int64_t kLimit = 17'000'000;
  const ServeChild child = spawn_serve("-m " + stories_path() + " --memory-limit-bytes " + std::to_string(kLimit) +
                                       " --kv-cache-memory 8000000 2>/dev/null");
  ASSERT_GT(child.port, 0);
  const int port = child.port;
  std::atomic<int> served{0}, refused{0}, refused_without_retry_after{0};
  std::vector<std::thread> burst;
  for (int i = 0; i < 48; ++i) {
    burst.emplace_back([&, i] {
      const HttpResult r = http_post(port, "/v1/completions",
                                     Json{{"prompt", "Once upon a time " + std::to_string(i)}, {"max_tokens", 200},
                                          {"ignore_eos", true}});
      if (r.status == 200) ++served;
      if (r.status == 503) {
        ++refused;
        if (r.header("Retry-After").empty()) ++refused_without_retry_after;
      }
    });
  }
  for (auto& t : burst) t.join();
  EXPECT_GT(served.load(), 0);
  EXPECT_EQ(served + refused, 48);
  EXPECT_EQ(refused_without_retry_after.load(), 0);
  const double peak = metric(port, "llmserve_process_resident_memory_bytes");
  // Served again within 10 s, with process memory under the low mark (0.7 of the limit).
  EXPECT_TRUE(poll_until(
      [&] {
        return http_get(port, "/ready").status == 200 &&
               http_post(port, "/v1/completions", Json{{"prompt", "Once"}, {"max_tokens", 2}}).status == 200;
      },
      10));
  EXPECT_TRUE(poll_until([&] { return metric(port, "llmserve_process_resident_memory_bytes") < 0.7 * kLimit; }, 10))
      << "peak " << peak << ", now " << metric(port, "llmserve_process_resident_memory_bytes");
  EXPECT_GE(metric(port, "llmserve_memory_releases_total"), 1);
  EXPECT_EQ(metric(port, "llmserve_memory_watermark_refusing"), 0);
  stop_serve(child);
}

// Weights and a KV pool that do not fit under the low mark are refused at start,
// with the figures and what to change.
TEST(OperationsMemory, PoolAboveTheLowMarkIsAClearErrorAtStart) {
  const CmdResult r = run_command(std::string(LLMSERVE_BIN) + " serve --port 0 -m " + synthetic_path() +
                                  " --memory-limit-bytes 20000000 --kv-cache-memory 16000000 2>&1");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("exceed the low memory watermark"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("lower kv_cache_memory"), std::string::npos) << r.out;
}

// A saturating load keeps the KV pool at 95% and more; /ready stays 200 while the
// waiting queue has room, and its message is of now when it does say 503.
TEST(OperationsReadiness, KvSaturationKeepsReady) {
  auto server = start_server(synthetic_path(), [](ServeConfig& c) {
    c.engine.kv.cache_bytes = 1 << 20;
    c.engine.admission.max_waiting_requests = 256;
  });
  const int port = server->port();
  std::vector<std::unique_ptr<RawClient>> hogs;
  for (int i = 0; i < 24; ++i) {
    hogs.push_back(std::make_unique<RawClient>(port));
    hogs.back()->send_request(
        "POST", "/v1/completions",
        Json{{"prompt", "a long story " + std::to_string(i)}, {"max_tokens", 900}, {"ignore_eos", true}, {"stream", true}}
            .dump());
  }
  // Observations of /ready while the pool is saturated: each one a check that can fail
  // (a slow, shared machine gets fewer of them in the time the load lasts).
  constexpr int kSaturatedChecks = 8;
  int saturated_checks = 0, not_ready = 0;
  std::string reason;
  poll_until(
      [&] {
        const double kv = metric(*server, "llmserve_kv_cache_usage_ratio");
        const HttpResult ready = http_get(port, "/ready");
        if (kv >= 0.95 && metric(*server, "llmserve_kv_cache_usage_ratio") >= 0.95) {
          ++saturated_checks;
          if (ready.status != 200) ++not_ready, reason = ready.body;
        }
        return saturated_checks >= kSaturatedChecks;
      },
      60);
  EXPECT_GE(saturated_checks, kSaturatedChecks) << "the load never held the KV pool at 95%";
  EXPECT_EQ(not_ready, 0) << reason;
  for (auto& h : hogs) h->close();
}

TEST(OperationsReadiness, FullQueueIsNotReadyWithRetryAfter) {
  auto server = start_server(slow_synthetic_path(), [](ServeConfig& c) {
    c.engine.batching.max_running = 1;
    c.engine.admission.max_waiting_requests = 1;
  });
  const int port = server->port();
  RawClient hog(port), queued(port);
  hog.send_request("POST", "/v1/completions",
                   Json{{"prompt", "a long story"}, {"max_tokens", 4000}, {"ignore_eos", true}, {"stream", true}}.dump());
  ASSERT_NE(hog.read_until("data:", 10).find("data:"), std::string::npos);
  queued.send_request("POST", "/v1/completions", Json{{"prompt", "x"}, {"max_tokens", 4}}.dump());
  ASSERT_TRUE(poll_until([&] { return http_get(port, "/ready").status == 503; }));
  const HttpResult ready = http_get(port, "/ready");
  EXPECT_NE(ready.body.find("waiting queue is full (1 requests)"), std::string::npos) << ready.body;
  EXPECT_EQ(ready.header("Retry-After"), "1");
  hog.close();
  EXPECT_TRUE(poll_until([&] { return http_get(port, "/ready").status == 200; }));
}

// One JSON line per exchange, with the completion's id, tokens, TTFT and finish reason.
TEST(OperationsLogs, AccessLogLines) {
  const std::string path = temp_path("access.log");
  auto server = start_server(synthetic_path(), [&](ServeConfig& c) { c.server.access_log = path; });
  const int port = server->port();
  const HttpResult r = http_post(port, "/v1/completions", Json{{"prompt", "hello"}, {"max_tokens", 3}, {"ignore_eos", true}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(http_get(port, "/health").status, 200);
  ASSERT_TRUE(poll_until([&] { return lines_of(path).size() >= 2; }));
  const std::vector<std::string> lines = lines_of(path);
  const Json c = Json::parse(lines[0]), h = Json::parse(lines[1]);
  EXPECT_EQ(c["request_id"], r.json()["id"]);
  EXPECT_EQ(c["endpoint"], "/v1/completions");
  EXPECT_EQ(c["method"], "POST");
  EXPECT_EQ(c["status"], 200);
  EXPECT_EQ(c["version"], r.header("x-llmserve-model-version"));
  EXPECT_EQ(c["prompt_tokens"], r.json()["usage"]["prompt_tokens"]);
  EXPECT_EQ(c["output_tokens"], 3);
  EXPECT_EQ(c["finish_reason"], "length");
  EXPECT_GT(c["ttft_s"].get<double>(), 0);
  EXPECT_GE(c["total_s"].get<double>(), c["ttft_s"].get<double>());
  EXPECT_EQ(c["time"].get<std::string>().back(), 'Z');
  EXPECT_EQ(h["endpoint"], "/health");
  EXPECT_TRUE(h["request_id"].is_null());
}

// SIGHUP: the file's reloadable keys applied and logged, a key that needs a restart
// named, the log file reopened after a rotation; the server keeps serving.
TEST(OperationsLogs, SighupReloadsConfigAndReopensLogs) {
  const std::string config = temp_path("reload.toml"), log = temp_path("server.log");
  const std::string access1 = temp_path("access1.log"), access2 = temp_path("access2.log");
  std::ofstream(config) << "log_file = \"" << log << "\"\naccess_log = \"" << access1 << "\"\nmax_running = 4\n";
  const ServeChild child = spawn_serve("-m " + synthetic_path() + " --config " + config);
  ASSERT_GT(child.port, 0);
  ASSERT_EQ(http_post(child.port, "/v1/completions", Json{{"prompt", "a"}, {"max_tokens", 2}}).status, 200);
  ASSERT_TRUE(poll_until([&] { return lines_of(access1).size() == 1; }));
  EXPECT_NE(read_all(log).find("] engine:"), std::string::npos);  // text lines at first

  std::ofstream(config) << "log_file = \"" << log << "\"\naccess_log = \"" << access2 << "\"\nmax_running = 9\n"
                        << "log_format = \"json\"\nlog_level = \"debug\"\n";
  std::filesystem::rename(log, log + ".1");  // a rotation
  ASSERT_EQ(kill(child.pid, SIGHUP), 0);
  ASSERT_TRUE(poll_until([&] { return read_all(log).find("key(s) applied") != std::string::npos; }));
  const std::string reloaded = read_all(log);
  EXPECT_NE(reloaded.find("config reload: log_format: \\\"text\\\" -> \\\"json\\\""), std::string::npos) << reloaded;
  EXPECT_NE(reloaded.find("config reload: access_log:"), std::string::npos) << reloaded;
  EXPECT_NE(reloaded.find("max_running changed (4 -> 9) but takes a restart"), std::string::npos) << reloaded;
  for (const std::string& line : lines_of(log)) EXPECT_TRUE(Json::accept(line)) << line;
  EXPECT_NE(read_all(log + ".1").find("SIGHUP: reloading"), std::string::npos);
  ASSERT_EQ(http_post(child.port, "/v1/completions", Json{{"prompt", "b"}, {"max_tokens", 2}}).status, 200);
  EXPECT_TRUE(poll_until([&] { return lines_of(access2).size() == 1; }));
  EXPECT_EQ(lines_of(access1).size(), 1u);
  stop_serve(child);
}

}  // namespace
}  // namespace llms::test
