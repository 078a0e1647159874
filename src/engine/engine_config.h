// EngineConfig: every setting of one engine, in parts — batching, the KV cache,
// admission and memory, SLOs and auto-tuning, speculative decoding, early exit — and
// the few that belong to no part. Plain values with defaults; each part has its own
// validate() (naming the config key at fault), EngineConfig::validate() calls them and
// checks the rules that cross parts. Validated once, at Engine::create.
//
// Settings of several engines (precision variants) live above the engine
// (PrecisionConfig, serving/precision_policy.h); runtime objects (the KV event
// listener) are handed to the engine itself, not put in its config.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "engine/admission.h"
#include "engine/autotune.h"
#include "model/early_exit.h"
#include "model/tensor_shard.h"
#include "tensor/dtype.h"

namespace llms {

// Latency targets; 0 means none (slo.h says how they are used).
struct SloTarget {
  double ttft_ms = 0;  // time to first token
  double itl_ms = 0;   // each inter-token interval, at SloConfig::percentile
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

// Which requests run together, and in which order they are taken. The auto-tuners move
// the first four limits of the engine's per-step copy (engine_observers.h).
struct BatchingConfig {
  BatchingPolicy policy = BatchingPolicy::kContinuous;
  int max_batch_tokens = 512;    // tokens per forward pass (decodes + prefill chunks)
  int max_running = 64;          // sequences in the running set
  int max_batch_size = 8;        // dynamic: requests per batch
  double max_delay_ms = 20;      // dynamic: the oldest waits at most this long for a full batch

  double long_job_factor = 8.0;  // cost above this x the recent median: long-job lane
  double long_job_share = 0.25;  // most of a step's budget the long-job lane may take
  double aging_s = 5.0;          // waiting this long raises effective priority by one
  int interactive_boost = 10;    // priority advantage of the interactive lane

  Status validate() const;
};

struct KvConfig {
  int block_size = 16;           // tokens per block (kMinKvBlockSize..kMaxKvBlockSize: 8..128)
  int64_t cache_bytes = 0;       // 0: what max_running full contexts need, at most 10% of the memory limit
  // F16, as the peers: half of F32's bytes, and keys and values have ranges F16 holds
  // (docs/engine.md has the costs of each type).
  DType k_type = DType::kF16;
  DType v_type = DType::kF16;
  // Commit the cache's memory at start, as llama.cpp does, rather than as blocks are
  // first written: no step pays a page's first touch, and all of it is resident at once.
  bool commit_at_start = false;
  bool prefix_cache = true;
  // A waiting request whose prompt shares whole KV blocks with a running sequence's
  // prompt that is still being computed waits until those blocks are computed, then
  // takes them from the prefix cache, instead of computing the same prefix beside it;
  // and among waiting requests of equal effective priority, the one with the longest
  // cached prefix goes first. false: first come, first served.
  bool prefix_clustering = true;

  // Prefix caching and clustering both on: the scheduler orders by cached prefix.
  bool clusters() const { return prefix_cache && prefix_clustering; }
  Status validate() const;
};

struct SloConfig {
  SloTarget interactive;         // targets of interactive-lane requests without their own
  SloTarget batch;               // targets of batch-lane requests without their own
  double percentile = 0.99;      // an ITL target holds for this share of a request's intervals
  // Holds max_batch_tokens and max_running where the interactive ITL target is met
  // (autotune.h); the configured values are the upper bounds.
  AutotuneMode autotune = AutotuneMode::kOff;
  int autotune_min_batch_tokens = 32;
  // Refuses a waiting request as soon as its TTFT target is forecast to be missed
  // (engine/slo_shedding.h), so that past capacity the requests kept meet theirs.
  bool shed = false;

  Status validate() const;
};

struct SpeculativeConfig {
  SpeculativeMode mode = SpeculativeMode::kOff;
  int tokens = 4;                // most tokens proposed per sequence and step (K)
  int ngram_max = 4;             // longest suffix the ngram proposer looks up
  std::string draft_model;       // GGUF of the draft model (mode = draft)

  Status validate() const;
};

class Communicator;

struct EngineConfig {
  BatchingConfig batching;
  KvConfig kv;
  AdmissionConfig admission;     // queue bounds, watermarks, the memory limit (admission.h)
  SloConfig slo;
  SpeculativeConfig speculative;
  // Confidence early exit (model/early_exit.h, engine/early_exit_policy.h): after these
  // layers a greedy request's generated token stops when its top probability is at
  // least the threshold. A threshold of 1 (the default) never exits.
  EarlyExitConfig early_exit;

  int context_length = 0;        // 0: the model's training context
  int64_t result_cache_bytes = 64 << 20;  // completed deterministic outputs; 0 disables
  double default_timeout_s = 600;         // per request, queueing + generation
  // Run one pass over a dummy batch of max_batch_tokens tokens (logits for max_running
  // rows) when the engine is created, as vLLM's profiling run does, so that the first
  // requests do not pay the activation buffers' growth and first touch (a 512-token
  // step of a 110M model took 100 ms longer the first time). Its outputs are dropped.
  bool warmup_pass = true;
  int threads = 0;               // kernel threads; 0 = one per core
  bool profile = false;          // time each step's parts (Engine::step_profile())
  int stats_window = 1024;       // steps and requests the dashboard's window keeps (stats_window.h)
  // Tensor and/or pipeline parallelism: the group this process is rank 0 of
  // (dist/communicator.h; not owned, it outlives every engine), which the served model
  // is split over as `parallel` says; null: one process. Set by `serve
  // --tensor-parallel` and `--pipeline-parallel`, not keys of the config file.
  Communicator* ranks = nullptr;
  Parallelism parallel;

  // Each part's validate(), then the rules across parts.
  Status validate() const;
};

}  // namespace llms
