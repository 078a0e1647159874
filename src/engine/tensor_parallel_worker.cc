#include "engine/tensor_parallel_worker.h"

#include <memory>

#include "base/log.h"
#include "engine/model_runner.h"
#include "engine/step_plan.h"

namespace llms {

Status run_tensor_parallel_worker(const Model& model, int threads) {
  Communicator& ranks = model.ranks();
  std::unique_ptr<LocalModelRunner> runner;
  ForwardOutput out;  // rank 0 alone receives logits; a worker's stay empty
  int64_t passes = 0;
  for (;;) {
    std::vector<uint8_t> bytes;
    LLMS_RETURN_IF_ERROR(ranks.broadcast(bytes, /*idle=*/true));
    LLMS_ASSIGN_OR_RETURN(StepPlan plan, decode_plan(bytes));
    switch (plan.kind) {
      case PlanKind::kSetup: {
        const PlanSetup& s = plan.setup;
        KvCacheConfig kc = model.kv_config(s.num_blocks, s.block_size, s.k_type, s.v_type);
        kc.commit_at_start = s.commit_at_start;
        runner = std::make_unique<LocalModelRunner>(model, kc, threads, s.context_length);
        log_info("rank {}: KV pool of {} blocks of {} tokens ({:.1f} MiB, its {} KV heads), {} threads", ranks.rank(),
                 s.num_blocks, s.block_size, static_cast<double>(runner->kv_reserved_bytes()) / (1 << 20),
                 model.config().n_head_kv, runner->num_threads());
        break;
      }
      case PlanKind::kForward: {
        if (!runner) return failed_precondition("tensor parallel: a pass arrived before the setup");
        const Status st = runner->forward_here(plan.chunks, out);
        // Rank 0 ran the same checks on the same chunks and reports the error; only
        // the group's own failures end this loop.
        if (st.code() == StatusCode::kUnavailable || st.code() == StatusCode::kDeadlineExceeded) return st;
        ++passes;
        break;
      }
      case PlanKind::kDiscard:
        if (runner) runner->discard_kv_blocks(plan.blocks);
        break;
      case PlanKind::kHeartbeat: {
        std::vector<uint8_t> all;
        const uint8_t here = 1;
        LLMS_RETURN_IF_ERROR(ranks.allgather({&here, 1}, all));
        break;
      }
      case PlanKind::kStop:
        log_info("rank {}: stop after {} passes", ranks.rank(), passes);
        return ok_status();
    }
  }
}

}  // namespace llms
