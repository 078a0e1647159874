// The loop of a rank other than 0 in a tensor-parallel group: no HTTP, no scheduler,
// no sampling. It waits for rank 0's plans (engine/step_plan.h) and runs each on its
// share of the model with its own KV pool (its KV heads of every block), until rank 0
// says stop or the group fails.
//
// Thread-safety: runs on the calling thread until it returns.
#pragma once

#include "base/status.h"
#include "model/model.h"

namespace llms {

// `model` is this rank's share (Model::load with the group). Returns OK after stop;
// the group's error (a dead rank 0, a collective past its deadline) otherwise.
Status run_tensor_parallel_worker(const Model& model, int threads);

}  // namespace llms
