// EngineStatus: what the engine makes visible after each step — the gauges of its
// metrics, the usage figures admission control acts on, the retry hint for a full
// queue, and the snapshot other threads read — so that the engine's own file reads as
// the step loop.
//
// Thread-safety: publish(), account_kv_slots() and note_finish() on the engine thread;
// snapshot() from any thread.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "engine/admission.h"
#include "engine/finish_reason.h"
#include "engine/engine_metrics.h"
#include "engine/sequence.h"
#include "kv/kv_block_manager.h"

namespace llms {

struct EngineSnapshot {
  int running = 0;
  int waiting = 0;               // queued and preempted sequences, not yet (again) running
  int32_t kv_blocks_total = 0;
  int32_t kv_blocks_used = 0;
  int32_t kv_blocks_cached = 0;  // idle blocks kept for the prefix cache
  PrefixCacheStats prefix;
  AdmissionState admission;
  int64_t steps = 0;
  int64_t preemptions = 0;
  int64_t prefill_tokens_computed = 0;  // prompt tokens run through the model
  int64_t last_step_ns = 0;      // when the last step ended (0: none yet)
  // Averaged over every step so far (after the step's tokens were written):
  double kv_waste_pct = 0;       // reserved token slots not holding a token
  double kv_shared_pct = 0;      // slots saved by prefix sharing, of what unshared tables would hold
  // Since start: what a canary is judged by.
  int64_t completed = 0;         // ended stop or length
  int64_t failed = 0;            // ended error
  int64_t abnormal = 0;          // completed with at least one abnormal kind (output_check.h)
  double itl_sum_s = 0;          // inter-token latencies, summed
  int64_t itl_count = 0;
  int64_t spec_draft_tokens = 0;     // speculative decoding: proposed tokens verified
  int64_t spec_accepted_tokens = 0;  // and accepted
  double expert_load_imbalance = 0;  // mixture of experts: max / mean tokens per expert (0: dense)
  bool thread_running = false;
  // The LoRA adapters (names, sorted, once each) of the running and of the waiting
  // requests (vLLM's lora_requests_info).
  std::vector<std::string> running_adapters;
  std::vector<std::string> waiting_adapters;
};

// The LoRA adapters' names of `seqs`' requests, sorted, once each.
std::vector<std::string> adapter_names(const std::vector<Sequence*>& seqs);

class EngineStatus {
 public:
  EngineStatus(EngineMetrics& metrics, AdmissionController& admission, int64_t memory_limit_bytes)
      : metrics_(metrics), admission_(admission), memory_limit_bytes_(memory_limit_bytes) {}

  // After a step's tokens are written: adds the running set's KV slots to the
  // waste and sharing averages.
  void account_kv_slots(const std::vector<Sequence*>& running, const KvBlockManager& kv);
  // A request ended at `now` (feeds the completion rate behind the retry hint and
  // the outcome counts of the snapshot).
  void note_finish(int64_t now, FinishReason reason, bool abnormal);
  // Publishes gauges, admission usage and the snapshot. RSS is read at most every
  // 100 ms unless `force_rss`.
  void publish(int64_t now, bool force_rss, const KvBlockManager& kv, int running, int waiting);

  EngineSnapshot snapshot() const;
  void set_adapters(std::vector<std::string> running, std::vector<std::string> waiting);

 private:
  EngineMetrics& metrics_;
  AdmissionController& admission_;
  const int64_t memory_limit_bytes_;
  int64_t last_rss_check_ns_ = 0;
  double completions_per_s_ = 1.0;
  int64_t last_finish_ns_ = 0;
  double waste_slots_ = 0, reserved_slots_ = 0, logical_slots_ = 0;  // summed over steps
  int64_t completed_ = 0, failed_ = 0, abnormal_ = 0;

  mutable std::mutex mu_;
  EngineSnapshot snapshot_;
};

}  // namespace llms
