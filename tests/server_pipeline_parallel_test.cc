// `llmserve serve --pipeline-parallel 2` under `mpirun -np 2`: the layers in two
// stages (rank 0 embeds, samples and serves; rank 1 runs the last layers and the head).
// Greedy text equal to one process's on stories260K and on a generated model of every
// architecture, log-probabilities within 1e-4 (F32), streaming, the prefix cache and
// speculative decoding; a model one process refuses under a memory limit fits in two
// stages under the same limit each; the start-up refusals (a group of the wrong size,
// ranks with different model files); a stream
// cancelled midway; a stage killed with kill -9 mid-request (503, then mpirun exits
// non-zero) and while idle. Registered only
// where CMake finds MPI and mpirun.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "command_util.h"
#include "mpi_group_util.h"
#include "server_test_util.h"
#include "tools/synthetic.h"

namespace llms::test {
namespace {

TEST(PipelineParallelServe, StoriesGreedyOutputEqualsOneProcess) {
  if (!have_stories()) GTEST_SKIP() << "needs stories260K.gguf";
  check_group_equals_one_process(stories_path(), "--pipeline-parallel 2", 0);
  check_group_equals_one_process(stories_path(), "--pipeline-parallel 2", 1e-4, "--kv-type f32");
}

// Each architecture we serve, generated with three layers (stages of one and two, the
// head counted with the last), F32 weights and KV cache.
TEST(PipelineParallelServe, EveryArchitectureEqualsOneProcess) {
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
    spec.seed = 31;
    const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_pp_" + c.name + ".gguf";
    ASSERT_TRUE(write_synthetic_model(spec, path).ok());
    check_group_equals_one_process(path, "--pipeline-parallel 2", 1e-4, "--kv-type f32");
    std::filesystem::remove(path);
  }
}

// The prefix cache and prompt-lookup speculation across stages: a repeated prompt reads
// its cached blocks (on both stages), and the speculative answer is the plain one.
TEST(PipelineParallelServe, PrefixCacheAndSpeculationWorkAcrossStages) {
  if (!have_stories()) GTEST_SKIP() << "needs stories260K.gguf";
  const ServeChild group = spawn_serve("-m " + stories_path() +
                                           " --threads 1 --pipeline-parallel 2 --speculative ngram --result-cache-bytes 0",
                                       mpirun() + " -np 2");
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

// A model one process refuses under a memory limit is served by two stages under the
// same limit each: rank 0 holds its layers only.
TEST(PipelineParallelServe, AModelTooBigForOneProcessFitsInTwoStagesUnderTheSameLimit) {
  check_too_big_for_one_fits_in_two("--pipeline-parallel 2");
}

TEST(PipelineParallelServe, AGroupOfTheWrongSizeIsRefused) { check_wrong_group_size_refused("--pipeline-parallel"); }

TEST(PipelineParallelServe, StagesWithDifferentModelFilesAreRefused) {
  check_different_model_files_refused("--pipeline-parallel 2");
}

TEST(PipelineParallelServe, AStageKilledMidRequestEndsItWith503AndTheGroupExitsNonZero) {
  check_rank_killed_mid_request("--pipeline-parallel 2");
}

// A client that leaves mid-stream cancels its request: its blocks are freed (rank 0's
// block manager decides for every stage) and the group goes on serving.
TEST(PipelineParallelServe, AStreamCancelledMidwayFreesItsBlocksAndTheGroupGoesOn) {
  check_cancelled_stream_frees_blocks("--pipeline-parallel 2");
}

// With no request running, a dead stage is noticed by rank 0's heartbeat.
TEST(PipelineParallelServe, AStageKilledWhileIdleEndsTheGroupWithoutARequest) {
  check_rank_killed_while_idle("--pipeline-parallel 2");
}

}  // namespace
}  // namespace llms::test
