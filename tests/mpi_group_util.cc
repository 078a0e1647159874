#include "mpi_group_util.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace llms::test {

std::string mpirun() { return std::string(LLMSERVE_MPIRUN) + " --allow-run-as-root --oversubscribe"; }

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

  const ServeChild group = spawn_serve("-m " + model + " --threads 1 " + group_flags + " " + flags, mpirun() + " -np 2");
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

}  // namespace llms::test
