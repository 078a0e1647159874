// EngineConfig: every setting of the engine, its KV cache and its admission control,
// with defaults; validated once at start (validate() names the bad field).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "engine/autotune.h"
#include "engine/precision_policy.h"
#include "kv/kv_events.h"
#include "tensor/dtype.h"

namespace llms {

// Latency targets; 0 means none (slo.h says how they are used).
struct SloTarget {
  double ttft_ms = 0;  // time to first token
  double itl_ms = 0;   // each inter-token interval, at EngineConfig::slo_percentile
};

enum class SpeculativeMode {
  kOff,
  kNgram,  // prompt lookup (proposer.h)
  kDraft,  // a draft model (draft_model)
};
const char* speculative_mode_name(SpeculativeMode m);
Result<SpeculativeMode> parse_speculative_mode(const std::string& name);

enum class BatchingPolicy {
  kContinuous,  // token budget per step; requests join and leave at every step
  kDynamic,     // wait for max_batch_size requests or max_delay_ms, run the batch to completion
  kNone,        // one request at a time (the baseline)
};

const char* batching_policy_name(BatchingPolicy p);
Result<BatchingPolicy> parse_batching_policy(const std::string& name);

// Samples of each kind the dashboard's window may keep (about 100 bytes each).
inline constexpr int kMaxStatsWindow = 1 << 20;

struct EngineConfig {
  BatchingPolicy batching = BatchingPolicy::kContinuous;
  int max_batch_tokens = 512;    // tokens per forward pass (decodes + prefill chunks)
  int max_running = 64;          // sequences in the running set
  int max_batch_size = 8;        // dynamic: requests per batch
  double max_delay_ms = 20;      // dynamic: the oldest waits at most this long for a full batch

  int block_size = 16;           // KV block size in tokens (kMinKvBlockSize..kMaxKvBlockSize: 8..128)
  int64_t kv_cache_bytes = 0;    // 0: what max_running full contexts need, at most 10% of the memory limit
  // F16, as the peers: half of F32's bytes, and keys and values have ranges F16 holds
  // (docs/engine.md has the costs of each type).
  DType k_type = DType::kF16;
  DType v_type = DType::kF16;
  // Commit the KV cache's memory at start, as llama.cpp does, rather than as blocks are
  // first written: no step pays a page's first touch, and all of it is resident at once.
  bool kv_commit_at_start = false;
  // Run one pass over a dummy batch of max_batch_tokens tokens (logits for max_running
  // rows) when the engine is created, as vLLM's profiling run does, so that the first
  // requests do not pay the activation buffers' growth and first touch (a 512-token
  // step of a 110M model took 100 ms longer the first time). Its outputs are dropped.
  bool warmup_pass = true;
  bool prefix_cache = true;
  // A waiting request whose prompt shares whole KV blocks with a running sequence's
  // prompt that is still being computed waits until those blocks are computed, then
  // takes them from the prefix cache, instead of computing the same prefix beside it;
  // and among waiting requests of equal effective priority, the one with the longest
  // cached prefix goes first. false: first come, first served.
  bool prefix_clustering = true;
  int64_t result_cache_bytes = 64 << 20;  // completed deterministic outputs; 0 disables
  int context_length = 0;        // 0: the model's training context

  int max_waiting_requests = 1024;
  int64_t max_waiting_tokens = 1 << 22;  // prompt tokens queued, in all
  double kv_high_watermark = 0.8;        // refuse new requests above this KV use...
  double kv_low_watermark = 0.7;         // ...until it falls below this
  double rss_high_watermark = 0.8;       // the same for process memory / memory limit
  double rss_low_watermark = 0.7;
  int64_t memory_limit_bytes = 0;        // 0: the machine's (or cgroup's) memory

  double default_timeout_s = 600;        // per request, queueing + generation

  double long_job_factor = 8.0;   // cost above this x the recent median: long-job lane
  double long_job_share = 0.25;   // most of a step's budget the long-job lane may take
  double aging_s = 5.0;           // waiting this long raises effective priority by one
  int interactive_boost = 10;     // priority advantage of the interactive lane
  SloTarget slo_interactive;      // targets of interactive-lane requests without their own
  SloTarget slo_batch;            // targets of batch-lane requests without their own
  double slo_percentile = 0.99;   // an ITL target holds for this share of a request's intervals
  // Holds max_batch_tokens and max_running where the interactive ITL target is met
  // (autotune.h); the configured values are the upper bounds.
  AutotuneMode autotune = AutotuneMode::kOff;
  int autotune_min_batch_tokens = 32;
  // Refuses a waiting request as soon as its TTFT target is forecast to be missed
  // (engine/slo_shedding.h), so that past capacity the requests kept meet theirs.
  bool slo_shed = false;

  int threads = 0;                // kernel threads; 0 = one per core
  bool profile = false;           // time each step's parts (Engine::step_profile())
  int stats_window = 1024;        // steps and requests the dashboard's window keeps (stats_window.h)

  SpeculativeMode speculative = SpeculativeMode::kOff;
  int spec_tokens = 4;            // most tokens proposed per sequence and step (K)
  int spec_ngram_max = 4;         // longest suffix the ngram proposer looks up
  std::string draft_model;        // GGUF of the draft model (speculative = draft)

  // Confidence early exit (model/early_exit.h, engine/early_exit_policy.h): after these
  // layers (counted from 1, below the model's layer count, ascending) a greedy
  // request's generated token stops when its top probability is >= exit_threshold.
  // A threshold of 1 (the default) never exits.
  std::vector<int> exit_layers;
  double exit_threshold = 1.0;

  // Automatic precision (engine/precision_router.h): the served version holds the model
  // at each of these types, cheapest first, made at load by quantizing its file, and
  // routes each request by `precision` (engine/precision_policy.h). Empty: off.
  std::vector<DType> precision_variants;
  PrecisionPolicy precision;

  // Receives the prefix cache's block events (null: none); not a setting of the file.
  std::shared_ptr<KvEventListener> kv_events;
  Status validate() const;
};

}  // namespace llms
