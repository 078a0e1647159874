// The engine's metrics, registered under llmserve_* names (docs/metrics.md maps them
// to vLLM's). Updated by the engine thread; rendered by the server.
#pragma once

#include "metrics/metrics.h"

namespace llms {

struct EngineMetrics {
  explicit EngineMetrics(Registry& r);

  Family<Counter>& finished;        // by reason
  Family<Counter>& rejected;        // by reason: queue_full, memory, draining, invalid
  Family<Counter>& abnormal_outputs;  // by kind (output_check.h)
  Counter& prompt_tokens;
  Counter& generation_tokens;
  // Of requests run with a LoRA adapter, by adapter name: finished requests, their
  // prompt tokens and generated tokens.
  Family<Counter>& lora_requests;
  Family<Counter>& lora_prompt_tokens;
  Family<Counter>& lora_generation_tokens;
  Counter& prefill_tokens_computed;
  Counter& preemptions;
  Counter& timeouts;
  Counter& prefix_queries;          // prompt tokens looked up
  Counter& prefix_hits;             // prompt tokens found
  Counter& prefix_evictions;        // cached blocks reclaimed
  Counter& steps;
  Counter& spec_drafts;             // proposals verified
  Counter& spec_draft_tokens;       // proposed tokens verified
  Family<Counter>& spec_draft_by_position;     // proposed tokens by position (0 = first)
  Counter& spec_accepted_tokens;    // of them, accepted
  Family<Counter>& spec_accepted_by_position;  // by position in the proposal (0 = first)
  Counter& result_cache_hits;
  Counter& result_cache_misses;
  Counter& result_cache_seconds_saved;
  Gauge& running;
  Gauge& waiting;
  Family<Gauge>& kv_blocks;         // by state: used, free, cached
  Gauge& kv_usage;
  Gauge& rss_bytes;                 // memory the process owns (anonymous), which the watermark reads
  Family<Gauge>& memory_bytes;      // by part: weights (resident), weights_mapped, kv_reserved
  Gauge& watermark;                 // 1 while refusing new requests
  Counter& long_jobs;               // requests put in the long-job lane
  Gauge& long_jobs_waiting;         // of them, waiting now
  Histogram& long_job_queue_time;   // arrival to first scheduling, long-job lane
  Histogram& long_job_e2e;          // arrival to finish, long-job lane
  Counter& memory_releases;         // MemoryRelief runs (breaker open)
  Counter& memory_released_bytes;   // process memory they gave back
  Histogram& ttft;
  Histogram& itl;
  Histogram& e2e;
  Histogram& queue_time;
  Histogram& compute_time;
  Histogram& step_time;
  Histogram& batch_size;            // sequences per step
  Histogram& batch_tokens;          // tokens per step
  Histogram& batch_efficiency;      // tokens / budget
  Histogram& prefill_share;         // prefill tokens / tokens, per step
  Family<Counter>& step_part_time;  // by part (StepProfile); only with EngineConfig::profile
  Counter& prefix_clustered;        // admitted after a running request computed their shared prefix
  Family<Counter>& slo_requests;    // by slo (ttft, itl) and result (met, missed); requests with a target
  Counter& slo_goodput_tokens;      // generated tokens of requests that met every target they had
  Gauge& autotune_batch_tokens;     // the auto-tuner's budget (applied or, observing, proposed)
  Gauge& autotune_max_running;      // its running cap
  Gauge& autotune_predicted_step;   // the step time it predicts there (seconds)
  Gauge& autotune_max_batch_size;   // dynamic batching: the batch tuner's batch size
  Gauge& autotune_max_delay;        // its delay (seconds)
  Gauge& autotune_arrival_rate;     // the arrival rate it measured (requests per second)
  Family<Counter>& autotune_decisions;  // changes, by applied/observed
  Family<Counter>& early_exit_tokens;   // early-exit requests' tokens, by layer exited at ("full": none)
};

}  // namespace llms
