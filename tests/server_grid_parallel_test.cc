// `llmserve serve --tensor-parallel 2 --pipeline-parallel 2` under `mpirun -np 4`: a
// grid of two stages, each split over two tensor ranks (rank = stage × 2 + tensor rank;
// rank 0 embeds, samples and serves). Greedy text equal to one process's on
// stories260K and on a generated model of every architecture, log-probabilities
// within 1e-4 (F32), streaming, the prefix cache and speculative decoding; a stream
// cancelled midway; the refusal of a group of the wrong size; the rank farthest from
// rank 0 (the last stage's tensor rank 1) killed with kill -9 mid-request (503, then
// mpirun exits non-zero). Registered only where CMake finds MPI and mpirun.
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>

#include "command_util.h"
#include "mpi_group_util.h"
#include "server_test_util.h"
#include "tools/synthetic.h"

namespace llms::test {
namespace {

const std::string kGrid = "--tensor-parallel 2 --pipeline-parallel 2";

TEST(GridParallelServe, StoriesGreedyOutputEqualsOneProcess) {
  if (!have_stories()) GTEST_SKIP() << "needs stories260K.gguf";
  check_group_equals_one_process(stories_path(), kGrid, 0);
  check_group_equals_one_process(stories_path(), kGrid, 1e-4, "--kv-type f32");
}

// Each architecture we serve, generated with three layers (stages of one and two, the
// head counted with the last) and two KV heads or more, F32 weights and KV cache.
TEST(GridParallelServe, EveryArchitectureEqualsOneProcess) {
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
    spec.n_layer = 3;
    spec.n_head_kv = c.n_head_kv;
    spec.n_expert = c.n_expert, spec.n_expert_used = c.n_expert_used;
    spec.n_ctx = 256;
    spec.seed = 37;
    const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_grid_" + c.name + ".gguf";
    ASSERT_TRUE(write_synthetic_model(spec, path).ok());
    check_group_equals_one_process(path, kGrid, 1e-4, "--kv-type f32");
    std::filesystem::remove(path);
  }
}

// The prefix cache and prompt-lookup speculation on the grid: a repeated prompt reads
// its cached blocks (on every rank), and the speculative answer is the plain one.
TEST(GridParallelServe, PrefixCacheAndSpeculationWorkOnTheGrid) {
  if (!have_stories()) GTEST_SKIP() << "needs stories260K.gguf";
  const ServeChild group = spawn_serve("-m " + stories_path() + " --threads 1 " + kGrid +
                                           " --speculative ngram --result-cache-bytes 0",
                                       group_mpirun(kGrid));
  ASSERT_GT(group.port, 0) << "the group did not start";
  const std::string prompt =
      "Once upon a time there was a little girl named Lily. She liked to play in the park with her friends. One day";
  Json body = {{"prompt", prompt}, {"max_tokens", 64}, {"temperature", 0}, {"speculative", false}};
  const HttpResult plain = http_post(group.port, "/v1/completions", body);
  ASSERT_EQ(plain.status, 200) << plain.body;
  body["speculative"] = true;
  const HttpResult speculated = http_post(group.port, "/v1/completions", body);
  ASSERT_EQ(speculated.status, 200) << speculated.body;
  EXPECT_EQ(speculated.json()["choices"][0]["text"], plain.json()["choices"][0]["text"]);
  EXPECT_GT(speculated.json()["usage"]["prompt_tokens_details"]["cached_tokens"].get<int64_t>(), 0) << speculated.body;
  EXPECT_GT(metric(group.port, "llmserve_spec_decode_accepted_tokens_total"), 0);
  EXPECT_TRUE(stop_group(group));
}

TEST(GridParallelServe, AGroupOfTheWrongSizeIsRefused) {
  const CmdResult r = run_command(mpirun() + " -np 2 " + LLMSERVE_BIN + " serve --port 0 -m " + synthetic_path() +
                                  " --threads 1 " + kGrid + " 2>&1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find(kGrid + " needs 4 ranks (mpirun -np 4), this group has 2"), std::string::npos) << r.out;
}

TEST(GridParallelServe, AStreamCancelledMidwayFreesItsBlocksAndTheGridGoesOn) {
  check_cancelled_stream_frees_blocks(kGrid);
}

// Rank 3 shares no communicator with rank 0: rank 0 learns of its death through the
// last stage's tensor rank 0, which waits for it in an allreduce, and through its own
// receive of the logits, within the step deadline.
TEST(GridParallelServe, TheFarthestRankKilledMidRequestEndsItWith503AndTheGroupExitsNonZero) {
  check_rank_killed_mid_request(kGrid, 3);
}

}  // namespace
}  // namespace llms::test
