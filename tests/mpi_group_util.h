// Helpers of the end-to-end tests of groups under mpirun (`serve --tensor-parallel 2`,
// `serve --pipeline-parallel 2`): the launcher, the greedy answers compared with one
// process's, the pid of a rank, and a group stopped as an orchestrator would.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "server_test_util.h"

namespace llms::test {

// mpirun with the options every group test needs (root in containers, more ranks than cores).
std::string mpirun();
// mpirun() with as many ranks as `group_flags` (--tensor-parallel N, --pipeline-parallel
// M, or both) need: -np N × M.
std::string group_mpirun(const std::string& group_flags);

struct Answer {
  std::string text;
  std::vector<double> logprobs;
};

// The prompts every comparison asks.
const std::vector<std::string>& group_prompts();
// Each prompt's greedy completion (24 tokens) with its tokens' log-probabilities.
std::vector<Answer> ask(int port);

// The pid of the child of `parent` that MPI made rank `rank` (its OMPI_COMM_WORLD_RANK).
pid_t rank_pid(pid_t parent, int rank);
// Rank 0 stopped (SIGTERM) stops the workers: true when every rank and mpirun exit 0.
bool stop_group(const ServeChild& group);

// Greedy text of the group (`group_flags`, e.g. "--pipeline-parallel 2", under
// group_mpirun()) equal to one process's, also streamed; with `logprobs_within` > 0, each
// token's log-probability within it.
void check_group_equals_one_process(const std::string& model, const std::string& group_flags, double logprobs_within,
                                    const std::string& flags = "");

// A generated model of each architecture we serve (`n_layer` layers, F32 weights and
// KV cache): the group's greedy text equals one process's, log-probabilities within 1e-4.
void check_every_architecture_equals_one_process(const std::string& group_flags, int n_layer);
// The prefix cache and prompt-lookup speculation in the group (stories260K): a
// repeated prompt reads its cached blocks on every rank, the speculative answer is
// the plain one, and drafts were proposed and accepted.
void check_prefix_cache_and_speculation(const std::string& group_flags);

// The group (`group_flags` under group_mpirun(), on the slow synthetic model) with a
// client that leaves mid-stream: the request is cancelled, its KV blocks freed, and
// the next request served.
void check_cancelled_stream_frees_blocks(const std::string& group_flags);
// Rank `rank` killed with SIGKILL while a request runs: the request ends with 503
// model_lost, /ready stops answering 200, and mpirun exits non-zero within 10 s.
void check_rank_killed_mid_request(const std::string& group_flags, int rank = 1);
// Rank 1 killed while no request runs: rank 0's heartbeat notices, and mpirun exits
// non-zero within 10 s.
void check_rank_killed_while_idle(const std::string& group_flags);
// `flag 3` (--tensor-parallel, --pipeline-parallel) under mpirun -np 2: refused, naming
// the ranks it needs and the group's size.
void check_wrong_group_size_refused(const std::string& flag);
// Rank 0 and rank 1 started with different -m (MPMD): refused before any rank serves.
void check_different_model_files_refused(const std::string& group_flags);
// A generated 97 MiB model that one process refuses under a 100 MiB limit (low mark 70
// MiB) starts in the group under the same limit on each rank: rank 0 holds less than
// 60% of the weights, and answers.
void check_too_big_for_one_fits_in_two(const std::string& group_flags);

}  // namespace llms::test
