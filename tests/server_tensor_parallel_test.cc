// `llmserve serve --tensor-parallel 2` under `mpirun -np 2`: greedy text equal to one
// process's, log-probabilities within 1e-4, streaming, the prefix cache, speculative
// decoding, a stream cancelled midway, the start-up refusals (a group
// of the wrong size, ranks with different model files), and a worker killed with
// kill -9 mid-request (503, then mpirun exits non-zero). Registered only where CMake
// finds MPI and mpirun.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>

#include "command_util.h"
#include "mpi_group_util.h"
#include "server_test_util.h"
#include "tools/synthetic.h"

namespace llms::test {
namespace {

const std::string kBin = LLMSERVE_BIN;
const std::string kMpirun = mpirun();

void check_equal_to_one_process(const std::string& model, double logprobs_within, const std::string& flags = "") {
  check_group_equals_one_process(model, "--tensor-parallel 2", logprobs_within, flags);
}

TEST(TensorParallelServe, StoriesGreedyOutputEqualsOneProcess) {
  if (!have_stories()) GTEST_SKIP() << "needs stories260K.gguf";
  check_equal_to_one_process(stories_path(), 0);
  // F32 weights; with an F32 KV cache too, the log-probabilities agree within 1e-4 (an
  // F16 cache rounds the ranks' slightly different sums apart: up to 5e-4 seen).
  check_equal_to_one_process(stories_path(), 1e-4, "--kv-type f32");
}

TEST(TensorParallelServe, GeneratedF32ModelLogprobsWithin1e4OfOneProcess) {
  check_equal_to_one_process(synthetic_path(), 1e-4);
}

// Each architecture we serve, generated (F32 weights, F32 KV cache): the group's greedy
// text equals one process's and its log-probabilities are within 1e-4.
TEST(TensorParallelServe, EveryArchitectureEqualsOneProcess) {
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
    spec.n_head_kv = c.n_head_kv;
    spec.n_expert = c.n_expert, spec.n_expert_used = c.n_expert_used;
    spec.n_ctx = 256;
    spec.seed = 31;
    const std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_tp_" + c.name + ".gguf";
    ASSERT_TRUE(write_synthetic_model(spec, path).ok());
    check_equal_to_one_process(path, 1e-4, "--kv-type f32");
    std::filesystem::remove(path);
  }
}

// A model one process refuses under a memory limit (its weights alone pass the low
// watermark) is served by two ranks under the same limit each: each holds half.
TEST(TensorParallelServe, AModelTooBigForOneProcessFitsInTwoRanksUnderTheSameLimit) {
  check_too_big_for_one_fits_in_two("--tensor-parallel 2");
}

// The prefix cache and speculative decoding (prompt lookup) under tensor parallelism: a
// repeated prompt reads its cached blocks, and the speculative answer is the plain one.
TEST(TensorParallelServe, PrefixCacheAndSpeculationWorkInTheGroup) {
  if (!have_stories()) GTEST_SKIP() << "needs stories260K.gguf";
  const ServeChild group = spawn_serve("-m " + stories_path() + " --threads 1 --tensor-parallel 2 --speculative ngram --result-cache-bytes 0",
                                       kMpirun + " -np 2");
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

// A client that leaves mid-stream cancels its request on every rank: its blocks are
// freed, and the group goes on serving in step.
TEST(TensorParallelServe, AStreamCancelledMidwayFreesItsBlocksAndTheGroupGoesOn) {
  check_cancelled_stream_frees_blocks("--tensor-parallel 2");
}

TEST(TensorParallelServe, AGroupOfTheWrongSizeIsRefused) { check_wrong_group_size_refused("--tensor-parallel"); }

// MPMD: rank 0 and rank 1 started with different -m.
TEST(TensorParallelServe, RanksWithDifferentModelFilesAreRefused) {
  check_different_model_files_refused("--tensor-parallel 2");
}

TEST(TensorParallelServe, AWorkerKilledMidRequestEndsItWith503AndTheGroupExitsNonZero) {
  check_rank_killed_mid_request("--tensor-parallel 2");
}

// With no request running, the group still notices a dead worker (rank 0's heartbeat,
// a round trip every second with the step deadline): not ready, then a non-zero exit.
TEST(TensorParallelServe, AWorkerKilledWhileIdleEndsTheGroupWithoutARequest) {
  check_rank_killed_while_idle("--tensor-parallel 2");
}

}  // namespace
}  // namespace llms::test
