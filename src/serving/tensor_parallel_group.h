// The group of `llmserve serve --tensor-parallel N` (or `--pipeline-parallel M`: the
// ranks are pipeline stages, each with a contiguous run of layers, model/tensor_shard.h;
// or both: a grid of N × M ranks, N sharing each stage's layers), launched as N × M
// processes by mpirun: opens the MPI world (dist/mpi_world.h), checks that it has N × M ranks and
// that every rank runs the same build on the same model file, and runs the ranks
// other than 0 (run_group_worker(): their share of the model and the worker loop of
// engine/tensor_parallel_worker.h). Rank 0 serves: its EngineConfig::ranks is the group.
//
// Thread-safety: called from the process's main thread, once.
#pragma once

#include <memory>
#include <string>

#include "base/hash.h"
#include "base/status.h"
#include "dist/communicator.h"
#include "model/tensor_shard.h"

namespace llms {

struct GroupOptions {
  Parallelism parallel;        // --tensor-parallel, --pipeline-parallel
  double step_timeout_s = 30;  // --step-timeout-s: the longest a collective waits for a rank
  std::string model_path;
  int threads = 0;             // kernel threads per rank (0: one per core)
};

// The flags that set the group's shape: "--tensor-parallel 2", "--pipeline-parallel 3",
// "--tensor-parallel 2 --pipeline-parallel 2".
std::string group_flags(Parallelism parallel);

// The checked group; FAILED_PRECONDITION when the world's size is not
// options.parallel.ranks() or a rank differs in build or model file (every rank fails alike).
Result<std::unique_ptr<Communicator>> open_serving_group(const GroupOptions& options);
// A rank > 0: loads its share and runs plans until rank 0 says stop (OK) or the group fails.
Status run_group_worker(Communicator& ranks, const GroupOptions& options);

// What identifies the model at `path` (a file: its size, first 8 MiB and last 1 MiB;
// a directory: each file's name, size and first 1 MiB) without reading all of it.
Result<Hash128> model_identity(const std::string& path);
// What identifies this build: the version and the executable's bytes.
Result<Hash128> build_identity();

}  // namespace llms
