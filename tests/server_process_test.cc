// `llmserve serve` as a process: configuration (file, flags, --print-config, errors)
// and graceful shutdown on SIGTERM under load.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <thread>

#include "base/clock.h"
#include "command_util.h"
#include "server_test_util.h"

namespace llms::test {
namespace {

const std::string kBin = LLMSERVE_BIN;

CmdResult run(const std::string& args) { return run_command(kBin + " " + args + " 2>&1"); }

std::string temp_file(const std::string& name, const std::string& content) {
  const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_" + name;
  std::ofstream(path) << content;
  return path;
}

TEST(ServeProcess, ConfigFileFlagsAndPrintConfig) {
  const std::string model = synthetic_path();
  CmdResult r = run("serve -m " + model + " --print-config");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("model = \"" + model + "\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("max_batch_tokens = 512"), std::string::npos);
  EXPECT_NE(r.out.find("kv_block_size = 16"), std::string::npos);

  const std::string file = temp_file("serve.toml", "max_running = 7\nport = 1234\nprefix_cache = false\n");
  r = run("serve -m " + model + " --config " + file + " --max-running 9 --print-config");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("max_running = 9"), std::string::npos) << r.out;  // the flag wins
  EXPECT_NE(r.out.find("port = 1234"), std::string::npos);
  EXPECT_NE(r.out.find("prefix_cache = false"), std::string::npos);

  // The printed configuration is itself a valid config file.
  const std::string printed = temp_file("printed.toml", r.out);
  EXPECT_EQ(run("serve --config " + printed + " --print-config").out, r.out);

  r = run("serve -m " + model + " --config " + temp_file("bad.toml", "bogus_key = 1\n") + " --print-config");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("unknown configuration key 'bogus_key'"), std::string::npos) << r.out;
  r = run("serve -m " + model + " --kv-block-size 4 --print-config");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("kv_block_size"), std::string::npos) << r.out;
  r = run("serve -m " + model + " --kv-high-watermark lots --print-config");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("kv_high_watermark: 'lots' is not a number"), std::string::npos) << r.out;
  r = run("serve -m /nonexistent.gguf --port 0");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("/nonexistent.gguf"), std::string::npos) << r.out;
}


// One flag table: the earlier spellings are aliases of the table's keys, `--no-X` sets a
// boolean key false, a bare boolean flag sets it true, and `--kv-type` sets both types.
TEST(ServeProcess, SharedFlagsAndTheirAliases) {
  const std::string model = synthetic_path();
  CmdResult r = run("serve -m " + model + " --ctx 96 --parallel 3 --no-prefix-cache --kv-type q8_0 --slo-shed -t 1 --print-config");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  for (const char* line : {"context_length = 96", "max_running = 3", "prefix_cache = false", "kv_k_type = \"q8_0\"",
                           "kv_v_type = \"q8_0\"", "slo_shed = true", "threads = 1"}) {
    EXPECT_NE(r.out.find(std::string("\n") + line), std::string::npos) << line << "\n" << r.out;
  }
  // A later, more specific flag wins over the shorthand; a bad value names the flag used.
  r = run("serve -m " + model + " --kv-type q8_0 --kv-v-type f32 --print-config");
  EXPECT_NE(r.out.find("kv_v_type = \"f32\""), std::string::npos) << r.out;
  r = run("serve -m " + model + " --parallel lots --print-config");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("--max-running"), std::string::npos) << r.out;
  // generate takes the same keys, checked by the same rule.
  r = run("generate -m " + model + " -p hello -n 2 --context-length 0 --max-running 0");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("--max-running"), std::string::npos) << r.out;
}

TEST(ServeProcess, SigtermDuringLoadFinishesOrCancelsEveryRequestAndExitsZero) {
  const ServeChild child = spawn_serve("-m " + slow_synthetic_path() +
                                       " --max-running 2 --shutdown-timeout 1 --kv-cache-memory 64MiB --threads 1");
  ASSERT_GT(child.port, 0);
  ASSERT_TRUE(poll_until([&] { return http_get(child.port, "/ready").status == 200; }, 60));

  constexpr int kClients = 6;
  std::vector<SseResult> results(kClients);
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&, i] {
      const bool is_long = i >= 2;
      results[i] = http_stream(child.port, i % 2 ? "/v1/completions" : "/v1/chat/completions",
                               i % 2 ? Json{{"prompt", "story"}, {"max_tokens", is_long ? 6000 : 3}, {"ignore_eos", true},
                                            {"stream", true}}
                                     : Json{{"messages", {{{"role", "user"}, {"content", "story"}}}},
                                            {"max_tokens", is_long ? 6000 : 3}, {"ignore_eos", true}, {"stream", true}});
    });
  }
  // Every request has arrived and the long ones are in flight (running or queued) when
  // the signal comes: a request that arrived after it would rightly get 503.
  const auto arrived = [&] {
    const std::string m = http_get(child.port, "/metrics").body;
    const auto done = [&](const char* endpoint) {
      const double v = metric(m, std::string("llmserve_http_requests_total{endpoint=\"") + endpoint +
                                     "\",method=\"POST\",status=\"200\"}");
      return std::isnan(v) ? 0.0 : v;
    };
    const double active = metric(m, "llmserve_http_active_requests");
    return active >= kClients - 2 && active + done("/v1/completions") + done("/v1/chat/completions") >= kClients;
  };
  ASSERT_TRUE(poll_until(arrived, 60));
  ASSERT_EQ(kill(child.pid, SIGTERM), 0);
  for (auto& t : clients) t.join();

  int cancelled = 0, complete = 0;
  for (int i = 0; i < kClients; ++i) {
    const SseResult& r = results[i];
    ASSERT_EQ(r.status, 200) << i;
    EXPECT_TRUE(r.done()) << i << ": " << r.raw;
    std::string finish;
    for (const Json& c : r.chunks()) {
      for (const Json& ch : c["choices"]) {
        if (!ch["finish_reason"].is_null()) finish = ch["finish_reason"];
      }
    }
    if (finish == "cancelled") {
      ++cancelled;
    } else {
      EXPECT_EQ(finish, "length") << i << ": " << r.raw;
      ++complete;
    }
  }
  EXPECT_GE(cancelled, 1);
  EXPECT_EQ(cancelled + complete, kClients);
  int status = 0;
  ASSERT_EQ(waitpid(child.pid, &status, 0), child.pid);
  close(child.stdout_fd);
  EXPECT_TRUE(WIFEXITED(status)) << "signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(http_get(child.port, "/health").status, 0);  // nobody listens any more
}

// The deploy commands: on the links alone, then against a running server (which
// loads, gates and switches); a refused deploy exits 1 with the reason.
TEST(ServeProcess, DeployRollbackVersionsCommands) {
  if (!have_stories()) GTEST_SKIP() << "needs ../shared/models/stories260K.gguf";
  const std::string root = temp_file("cli_root", "");
  std::filesystem::remove_all(root);
  CmdResult r = run("deploy --root " + root + " --version v1 --from " + stories_path() + " --link");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("current -> v1"), std::string::npos) << r.out;
  r = run("deploy --root " + root + " --version ../v9 --from " + stories_path());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("not allowed"), std::string::npos) << r.out;
  r = run("rollback --root " + root);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("no previous version"), std::string::npos) << r.out;

  const std::string token = temp_file("cli_token", "cli-admin-token-0123456789\n");
  const ServeChild child = spawn_serve("--model-root " + root + " --admin-token-file " + token + " --threads 1");
  ASSERT_GT(child.port, 0);
  const std::string url = " --url http://127.0.0.1:" + std::to_string(child.port) + " --admin-token-file " + token;
  r = run("deploy --root " + root + " --version v2 --from " + stories_path() + url);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("v2 serves; passed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("current: v2"), std::string::npos) << r.out;
  const std::string half = temp_file("cli_half.gguf", std::string(4096, 'G'));
  r = run("deploy --root " + root + " --version v3 --from " + half + url);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("refused (409)"), std::string::npos) << r.out;
  r = run("versions --root " + root + url + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const Json versions = Json::parse(r.out);
  ASSERT_EQ(versions.size(), 3u);
  EXPECT_TRUE(versions[1]["current"].get<bool>() && versions[1]["loaded"].get<bool>());  // v2
  EXPECT_TRUE(versions[1]["gate"]["passed"].get<bool>());
  // The refused version is marked on disk, and --prune removes it (and only it).
  r = run("versions --root " + root + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const Json on_disk = Json::parse(r.out);
  ASSERT_EQ(on_disk.size(), 3u);
  EXPECT_EQ(on_disk[2]["mark"], "refused") << on_disk.dump();  // v3
  EXPECT_NE(on_disk[2]["mark_reason"].get<std::string>().find("refused_load"), std::string::npos);
  EXPECT_TRUE(on_disk[0]["mark"].is_null() && on_disk[1]["mark"].is_null());
  r = run("versions --root " + root + " --prune");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("removed v3"), std::string::npos) << r.out;
  EXPECT_EQ(Json::parse(run("versions --root " + root + " --json").out).size(), 2u);
  r = run("rollback --root " + root + url);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("current: v1"), std::string::npos) << r.out;
  r = run("versions --root " + root + " --url http://127.0.0.1:" + std::to_string(child.port) + " --admin-token-file " +
          temp_file("cli_bad_token", "wrong-token-0123456789\n"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("401"), std::string::npos) << r.out;
  kill(child.pid, SIGTERM);
  int status = 0;
  waitpid(child.pid, &status, 0);
  close(child.stdout_fd);
}

}  // namespace
}  // namespace llms::test
