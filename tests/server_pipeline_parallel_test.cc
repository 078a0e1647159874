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
#include <gtest/gtest.h>

#include "mpi_group_util.h"
#include "server_test_util.h"

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
  check_every_architecture_equals_one_process("--pipeline-parallel 2", 3);
}

// The prefix cache and prompt-lookup speculation across stages: a repeated prompt reads
// its cached blocks (on both stages), and the speculative answer is the plain one.
TEST(PipelineParallelServe, PrefixCacheAndSpeculationWorkAcrossStages) {
  check_prefix_cache_and_speculation("--pipeline-parallel 2");
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
