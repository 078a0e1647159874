// `llmserve serve --tensor-parallel 2 --pipeline-parallel 2` under `mpirun -np 4`: a
// grid of two stages, each split over two tensor ranks (rank = stage × 2 + tensor rank;
// rank 0 embeds, samples and serves). Greedy text equal to one process's on
// stories260K and on a generated model of every architecture, log-probabilities
// within 1e-4 (F32), streaming, the prefix cache and speculative decoding; a stream
// cancelled midway; the refusal of a group of the wrong size; the rank farthest from
// rank 0 (the last stage's tensor rank 1) killed with kill -9 mid-request (503, then
// mpirun exits non-zero). Registered only where CMake finds MPI and mpirun.
#include <gtest/gtest.h>

#include "command_util.h"
#include "mpi_group_util.h"
#include "server_test_util.h"

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
TEST(GridParallelServe, EveryArchitectureEqualsOneProcess) { check_every_architecture_equals_one_process(kGrid, 3); }

// The prefix cache and prompt-lookup speculation on the grid: a repeated prompt reads
// its cached blocks (on every rank), and the speculative answer is the plain one.
TEST(GridParallelServe, PrefixCacheAndSpeculationWorkOnTheGrid) { check_prefix_cache_and_speculation(kGrid); }

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
