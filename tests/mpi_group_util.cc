#include "mpi_group_util.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "command_util.h"
#include "engine/testing/engine_test_util.h"
#include "tools/synthetic.h"

namespace llms::test {

std::string mpirun() {
  std::string launcher = std::string(LLMSERVE_MPIRUN) + " --allow-run-as-root --oversubscribe";
  // Open MPI leaves its own allocations (and those of the plugins it unloads, which
  // LeakSanitizer cannot name, so no suppression can match them) at MPI_Finalize: under
  // AddressSanitizer the ranks check everything but leaks. The same code's leaks are
  // checked in one process by the thread-group tests (src/model/tensor_parallel_test.cc).
  if (llms::testing::kUnderAsan) launcher += " -x LSAN_OPTIONS=detect_leaks=0";
  return launcher;
}

std::string group_mpirun(const std::string& group_flags) {
  int ranks = 1;
  for (const char* flag : {"--tensor-parallel ", "--pipeline-parallel "}) {
    if (const size_t at = group_flags.find(flag); at != std::string::npos) {
      ranks *= std::stoi(group_flags.substr(at + std::strlen(flag)));
    }
  }
  return mpirun() + " -np " + std::to_string(ranks);
}

const std::vector<std::string>& group_prompts() {
  static const std::vector<std::string> prompts = {"Once upon a time", "The little dog", "She wanted to", "One day, a big"};
  return prompts;
}

std::vector<Answer> ask(int port) {
  std::vector<Answer> out;
  for (const std::string& prompt : group_prompts()) {
    const HttpResult r = http_post(port, "/v1/completions",
                                   Json{{"prompt", prompt}, {"max_tokens", 24}, {"temperature", 0}, {"logprobs", 1}});
    EXPECT_EQ(r.status, 200) << r.body;
    const Json j = r.json();
    Answer a;
    a.text = j["choices"][0]["text"].get<std::string>();
    for (const auto& lp : j["choices"][0]["logprobs"]["token_logprobs"]) a.logprobs.push_back(lp.get<double>());
    out.push_back(std::move(a));
  }
  return out;
}

pid_t rank_pid(pid_t parent, int rank) {
  const std::string want = "OMPI_COMM_WORLD_RANK=" + std::to_string(rank);
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(e.path() / "stat");
    std::string pid, comm, state;
    pid_t ppid = 0;
    if (!(stat >> pid >> comm >> state >> ppid) || ppid != parent) continue;
    std::ifstream env(e.path() / "environ", std::ios::binary);
    for (std::string var; std::getline(env, var, '\0');) {
      if (var == want) return static_cast<pid_t>(std::stol(name));
    }
  }
  return -1;
}

bool stop_group(const ServeChild& group) {
  const pid_t rank0 = rank_pid(group.pid, 0);
  if (rank0 <= 0) return false;
  kill(rank0, SIGTERM);
  int status = 0;
  waitpid(group.pid, &status, 0);
  close(group.stdout_fd);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

void check_group_equals_one_process(const std::string& model, const std::string& group_flags, double logprobs_within,
                                    const std::string& flags) {
  const ServeChild one = spawn_serve("-m " + model + " --threads 1 " + flags);
  ASSERT_GT(one.port, 0);
  const std::vector<Answer> want = ask(one.port);
  stop_serve(one);

  const ServeChild group = spawn_serve("-m " + model + " --threads 1 " + group_flags + " " + flags, group_mpirun(group_flags));
  ASSERT_GT(group.port, 0) << "the group did not start";
  const std::vector<Answer> got = ask(group.port);
  // The same answer streamed.
  const SseResult streamed = http_stream(group.port, "/v1/completions",
                                         Json{{"prompt", group_prompts()[0]}, {"max_tokens", 24}, {"temperature", 0}, {"stream", true}});
  std::string text;
  for (const Json& c : streamed.chunks()) text += c["choices"][0].value("text", "");
  EXPECT_TRUE(streamed.done());
  EXPECT_EQ(text, want[0].text);
  EXPECT_TRUE(stop_group(group));

  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].text, want[i].text) << group_prompts()[i];
    ASSERT_EQ(got[i].logprobs.size(), want[i].logprobs.size());
    for (size_t t = 0; logprobs_within > 0 && t < want[i].logprobs.size(); ++t) {
      EXPECT_NEAR(got[i].logprobs[t], want[i].logprobs[t], logprobs_within) << group_prompts()[i] << " token " << t;
    }
  }
}

void check_every_architecture_equals_one_process(const std::string& group_flags, int n_layer) {
  struct Case {
    const char* name;
    const char* arch;
    int n_head_kv, n_expert, n_expert_used;
  };
  const Case cases[] = {{"llama", "llama", 2, 0, 0},   {"qwen2", "qwen2", 2, 0, 0},        {"phi3", "phi3", 4, 0, 0},
                        {"gemma2", "gemma2", 2, 0, 0}, {"gpt2", "gpt2", 4, 0, 0},          {"mixtral", "llama", 2, 4, 2},
                        {"qwen2moe", "qwen2moe", 2, 8, 2}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    SyntheticSpec spec;
    spec.arch = c.arch;
    spec.n_layer = n_layer;
    spec.n_head_kv = c.n_head_kv;
    spec.n_expert = c.n_expert, spec.n_expert_used = c.n_expert_used;
    spec.n_ctx = 256;
    spec.seed = 31;
    const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_group_" + c.name + ".gguf";
    ASSERT_TRUE(write_synthetic_model(spec, path).ok());
    check_group_equals_one_process(path, group_flags, 1e-4, "--kv-type f32");
    std::filesystem::remove(path);
  }
}

void check_prefix_cache_and_speculation(const std::string& group_flags) {
  if (!have_stories()) GTEST_SKIP() << "needs stories260K.gguf";
  const ServeChild group = spawn_serve(
      "-m " + stories_path() + " --threads 1 " + group_flags + " --speculative ngram --result-cache-bytes 0",
      group_mpirun(group_flags));
  ASSERT_GT(group.port, 0) << "the group did not start";
  const std::string prompt =
      "Once upon a time there was a little girl named Lily. She liked to play in the park with her friends. One day";
  Json body = {{"prompt", prompt}, {"max_tokens", 64}, {"temperature", 0}, {"speculative", false}};
  const HttpResult plain = http_post(group.port, "/v1/completions", body);
  ASSERT_EQ(plain.status, 200) << plain.body;
  EXPECT_EQ(metric(group.port, "llmserve_spec_decode_draft_tokens_total"), 0);
  body["speculative"] = true;
  const HttpResult speculated = http_post(group.port, "/v1/completions", body);
  ASSERT_EQ(speculated.status, 200) << speculated.body;
  EXPECT_EQ(speculated.json()["choices"][0]["text"], plain.json()["choices"][0]["text"]);
  EXPECT_GT(speculated.json()["usage"]["prompt_tokens_details"]["cached_tokens"].get<int64_t>(), 0) << speculated.body;
  EXPECT_GT(metric(group.port, "llmserve_spec_decode_draft_tokens_total"), 0) << "nothing was proposed";
  EXPECT_GT(metric(group.port, "llmserve_spec_decode_accepted_tokens_total"), 0);
  EXPECT_TRUE(stop_group(group));
}

}  // namespace llms::test

namespace llms::test {

void check_cancelled_stream_frees_blocks(const std::string& group_flags) {
  const ServeChild group =
      spawn_serve("-m " + slow_synthetic_path() + " --threads 1 " + group_flags, group_mpirun(group_flags));
  ASSERT_GT(group.port, 0) << "the group did not start";
  const int port = group.port;
  {
    RawClient streamer(port);
    ASSERT_TRUE(streamer.send_request(
        "POST", "/v1/completions",
        Json{{"prompt", "tell a long story"}, {"max_tokens", 4000}, {"ignore_eos", true}, {"stream", true}}.dump()));
    ASSERT_NE(streamer.read_until("\"text\"", 30).find("data: {"), std::string::npos);
    ASSERT_TRUE(poll_until([&] { return metric(port, "llmserve_requests_running") == 1; }));
  }  // closed mid-stream
  EXPECT_TRUE(poll_until([&] { return metric(port, "llmserve_requests_finished_total{reason=\"cancelled\"}") == 1; }));
  EXPECT_TRUE(poll_until([&] { return metric(port, "llmserve_kv_blocks{state=\"used\"}") == 0; }));
  // ignore_eos: the random model may end a sampled answer early, which says nothing of the group.
  const HttpResult after =
      http_post(port, "/v1/completions", Json{{"prompt", "again"}, {"max_tokens", 8}, {"ignore_eos", true}});
  EXPECT_EQ(after.status, 200) << after.body;
  EXPECT_EQ(after.json()["usage"]["completion_tokens"], 8) << after.body;
  EXPECT_EQ(http_get(port, "/ready").status, 200);
  EXPECT_TRUE(stop_group(group));
}

namespace {

// Kills rank `rank` of `group` and waits for mpirun: it must exit non-zero within 10 s.
void kill_rank_and_expect_exit(const ServeChild& group, int rank, const std::function<void()>& after_kill) {
  const pid_t pid = rank_pid(group.pid, rank);
  ASSERT_GT(pid, 0);
  const auto killed = std::chrono::steady_clock::now();
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  after_kill();
  int status = 0;
  ASSERT_TRUE(poll_until([&] { return waitpid(group.pid, &status, WNOHANG) == group.pid; }, 15));
  const double exit_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  close(group.stdout_fd);
  EXPECT_LT(exit_s, 10.0);
  EXPECT_FALSE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "mpirun must exit non-zero, status " << status;
}

// mpirun leaves rank 0 running when another rank dies, so that rank 0 can answer first.
ServeChild spawn_group_that_outlives_a_rank(const std::string& model, const std::string& group_flags) {
  return spawn_serve("-m " + model + " --threads 1 " + group_flags + " --step-timeout-s 2",
                     group_mpirun(group_flags) + " --mca orte_abort_on_non_zero_status 0");
}

}  // namespace

void check_rank_killed_mid_request(const std::string& group_flags, int rank) {
  const ServeChild group = spawn_group_that_outlives_a_rank(slow_synthetic_path(), group_flags);
  ASSERT_GT(group.port, 0) << "the group did not start";
  ASSERT_EQ(http_get(group.port, "/ready").status, 200);
  HttpResult answer;
  std::thread client([&] {
    answer = http_post(group.port, "/v1/completions",
                       Json{{"prompt", "Once upon a time"}, {"max_tokens", 4000}, {"temperature", 0}, {"ignore_eos", true}});
  });
  // Mid-request: the engine has generated tokens.
  ASSERT_TRUE(poll_until([&] { return metric(group.port, "llmserve_generation_tokens_total") > 8; }, 60));
  kill_rank_and_expect_exit(group, rank, [&] {
    client.join();
    EXPECT_EQ(answer.status, 503) << answer.body;
    EXPECT_EQ(answer.json()["error"]["code"], "model_lost") << answer.body;
    EXPECT_NE(http_get(group.port, "/ready").status, 200) << "a group without rank " << rank << " is not ready";
  });
  if (client.joinable()) client.join();
}

void check_rank_killed_while_idle(const std::string& group_flags) {
  const ServeChild group = spawn_group_that_outlives_a_rank(synthetic_path(), group_flags);
  ASSERT_GT(group.port, 0) << "the group did not start";
  ASSERT_EQ(http_get(group.port, "/ready").status, 200);
  kill_rank_and_expect_exit(group, 1, [] {});
}

void check_wrong_group_size_refused(const std::string& flag) {
  const CmdResult r = run_command(mpirun() + " -np 2 " + LLMSERVE_BIN + " serve --port 0 -m " + synthetic_path() +
                                  " --threads 1 " + flag + " 3 2>&1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find(flag + " 3 needs 3 ranks (mpirun -np 3), this group has 2"), std::string::npos) << r.out;
}

void check_different_model_files_refused(const std::string& group_flags) {
  if (!have_stories()) GTEST_SKIP() << "needs stories260K.gguf";
  const std::string common = std::string(" ") + LLMSERVE_BIN + " serve --port 0 --threads 1 " + group_flags + " -m ";
  const CmdResult r = run_command(mpirun() + " -np 1" + common + synthetic_path() + " : -np 1" + common +
                                  stories_path() + " 2>&1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("rank 1's model file differs from rank 0's"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("serving"), std::string::npos) << "no rank may start: " << r.out;
}

void check_too_big_for_one_fits_in_two(const std::string& group_flags) {
  SyntheticSpec spec;  // 97 MiB of F32 matrices in 8 layers
  spec.n_embd = 512, spec.n_head = 8, spec.n_head_kv = 4, spec.n_layer = 8, spec.n_ff = 1536, spec.n_ctx = 256;
  const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_group_memory.gguf";
  ASSERT_TRUE(write_synthetic_model(spec, path).ok());
  // Low watermark 0.7 x 100 MiB = 70 MiB: below one process's weights (97 MiB), above a rank's.
  const std::string flags = " --threads 1 --memory-limit-bytes 104857600 --kv-cache-memory 4194304 --no-warmup-pass";
  const CmdResult one = run_command(std::string(LLMSERVE_BIN) + " serve --port 0 -m " + path + flags + " 2>&1");
  EXPECT_NE(one.exit_code, 0);
  EXPECT_NE(one.out.find("exceed the low memory watermark"), std::string::npos) << one.out;
  const ServeChild group = spawn_serve("-m " + path + flags + " " + group_flags, group_mpirun(group_flags));
  ASSERT_GT(group.port, 0) << "the group did not start under the same limit";
  const double weights = metric(group.port, "llmserve_memory_bytes{part=\"weights\"}");
  EXPECT_LT(weights, 0.6 * 97 * (1 << 20)) << "rank 0 holds more than its part";
  const HttpResult r = http_post(group.port, "/v1/completions", Json{{"prompt", "a b c"}, {"max_tokens", 4}});
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(stop_group(group));
  std::filesystem::remove(path);
}

}  // namespace llms::test
