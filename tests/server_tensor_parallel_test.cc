// `llmserve serve --tensor-parallel 2` under `mpirun -np 2`: greedy text equal to one
// process's, log-probabilities within 1e-4, streaming, the prefix cache, speculative
// decoding, a stream cancelled midway, the start-up refusals (a group
// of the wrong size, ranks with different model files), and a worker killed with
// kill -9 mid-request (503, then mpirun exits non-zero). Registered only where CMake
// finds MPI and mpirun.
#include <gtest/gtest.h>

#include "mpi_group_util.h"
#include "server_test_util.h"

namespace llms::test {
namespace {

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
  check_every_architecture_equals_one_process("--tensor-parallel 2", 2);
}

// A model one process refuses under a memory limit (its weights alone pass the low
// watermark) is served by two ranks under the same limit each: each holds half.
TEST(TensorParallelServe, AModelTooBigForOneProcessFitsInTwoRanksUnderTheSameLimit) {
  check_too_big_for_one_fits_in_two("--tensor-parallel 2");
}

// The prefix cache and speculative decoding (prompt lookup) under tensor parallelism: a
// repeated prompt reads its cached blocks, and the speculative answer is the plain one.
TEST(TensorParallelServe, PrefixCacheAndSpeculationWorkInTheGroup) {
  check_prefix_cache_and_speculation("--tensor-parallel 2");
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
