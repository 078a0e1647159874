#include "engine/engine_metrics.h"

namespace llms {

namespace {
std::vector<double> ratio_buckets() { return {0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0}; }
}  // namespace

EngineMetrics::EngineMetrics(Registry& r)
    : finished(r.counter_family("llmserve_requests_finished_total", "Requests ended, by finish reason.", {"reason"})),
      rejected(r.counter_family("llmserve_requests_rejected_total",
                                "Requests refused at admission, or from the queue (slo), by reason.",
                                {"reason"})),
      abnormal_outputs(r.counter_family("llmserve_abnormal_outputs_total",
                                        "Finished outputs that look broken, by kind: empty, repetition, invalid_utf8, "
                                        "cross_perplexity (the deploy module's quality monitor).",
                                        {"kind"})),
      prompt_tokens(r.counter("llmserve_prompt_tokens_total", "Prompt tokens of finished requests.")),
      generation_tokens(r.counter("llmserve_generation_tokens_total", "Tokens generated.")),
      prefill_tokens_computed(r.counter("llmserve_prefill_tokens_computed_total",
                                        "Prompt tokens run through the model (prefix-cache hits excluded).")),
      preemptions(r.counter("llmserve_preemptions_total", "Sequences preempted for lack of KV blocks.")),
      timeouts(r.counter("llmserve_timeouts_total", "Requests ended by their deadline.")),
      prefix_queries(r.counter("llmserve_prefix_cache_queries_total", "Prompt tokens looked up in the prefix cache.")),
      prefix_hits(r.counter("llmserve_prefix_cache_hits_total", "Prompt tokens served by the prefix cache.")),
      prefix_evictions(r.counter("llmserve_prefix_cache_evictions_total",
                                 "Cached KV blocks reclaimed for new data (least recently used first).")),
      steps(r.counter("llmserve_engine_steps_total", "Forward passes run.")),
      spec_drafts(r.counter("llmserve_spec_decode_drafts_total", "Speculative decoding: proposals verified.")),
      spec_draft_tokens(r.counter("llmserve_spec_decode_draft_tokens_total",
                                  "Speculative decoding: proposed tokens the target model verified.")),
      spec_draft_by_position(r.counter_family("llmserve_spec_decode_draft_tokens_per_pos_total",
                                              "Speculative decoding: proposed tokens by position in the proposal.",
                                              {"position"})),
      spec_accepted_tokens(r.counter("llmserve_spec_decode_accepted_tokens_total",
                                     "Speculative decoding: proposed tokens accepted.")),
      spec_accepted_by_position(r.counter_family("llmserve_spec_decode_accepted_tokens_per_pos_total",
                                                 "Speculative decoding: accepted tokens by position in the proposal.",
                                                 {"position"})),
      result_cache_hits(r.counter("llmserve_result_cache_hits_total", "Requests answered from the result cache.")),
      result_cache_misses(r.counter("llmserve_result_cache_misses_total",
                                    "Deterministic requests not found in the result cache.")),
      result_cache_seconds_saved(r.counter("llmserve_result_cache_seconds_saved_total",
                                           "Original end-to-end time of the requests answered from the cache.")),
      running(r.gauge("llmserve_requests_running", "Requests in the running set.")),
      waiting(r.gauge("llmserve_requests_waiting", "Requests waiting to run.")),
      kv_blocks(r.gauge_family("llmserve_kv_blocks", "KV cache blocks by state.", {"state"})),
      kv_usage(r.gauge("llmserve_kv_cache_usage_ratio", "Share of KV blocks owned by sequences.")),
      rss_bytes(r.gauge("llmserve_process_resident_memory_bytes",
                        "Memory the process owns (anonymous resident memory, not clean file pages); the memory "
                        "watermark reads it.")),
      memory_bytes(r.gauge_family("llmserve_memory_bytes",
                                  "Memory by part: weights (packed, resident once), weights_mapped (read in place "
                                  "from the file: the token embedding), file_mapped_resident (the model file's pages mapped at start, "
                                  "after loading), kv_reserved (address space of the KV cache, "
                                  "committed as blocks are first used).",
                                  {"part"})),
      watermark(r.gauge("llmserve_memory_watermark_refusing", "1 while above a memory watermark.")),
      long_jobs(r.counter("llmserve_long_jobs_total",
                          "Requests put in the long-job lane (cost above long_job_factor x the recent median).")),
      long_jobs_waiting(r.gauge("llmserve_long_jobs_waiting", "Long-job lane requests waiting to run.")),
      long_job_queue_time(r.histogram("llmserve_long_job_queue_time_seconds",
                                      "Arrival to first scheduling, long-job lane requests.", latency_buckets())),
      long_job_e2e(r.histogram("llmserve_long_job_e2e_latency_seconds", "Arrival to finish, long-job lane requests.",
                               latency_buckets())),
      memory_releases(r.counter("llmserve_memory_releases_total",
                                "Times memory was given back above the high watermark (prefix cache evicted, free KV "
                                "pages returned, result cache emptied, malloc trimmed).")),
      memory_released_bytes(r.counter("llmserve_memory_released_bytes_total",
                                      "Process memory those releases gave back (the fall of its resident memory).")),
      ttft(r.histogram("llmserve_time_to_first_token_seconds", "Arrival to first token.", latency_buckets())),
      itl(r.histogram("llmserve_inter_token_latency_seconds", "Time between tokens of a request.", latency_buckets())),
      e2e(r.histogram("llmserve_e2e_request_latency_seconds", "Arrival to finish.", latency_buckets())),
      queue_time(r.histogram("llmserve_request_queue_time_seconds", "Arrival to first scheduling.", latency_buckets())),
      compute_time(r.histogram("llmserve_request_compute_time_seconds", "Time in steps that ran the request.",
                               latency_buckets())),
      step_time(r.histogram("llmserve_step_seconds", "Duration of one engine step.", latency_buckets())),
      batch_size(r.histogram("llmserve_batch_size", "Sequences per step.", count_buckets(1024))),
      batch_tokens(r.histogram("llmserve_batch_tokens", "Tokens per step.", count_buckets(16384))),
      batch_efficiency(r.histogram("llmserve_batch_efficiency_ratio", "Tokens per step over the step's token budget.",
                                   ratio_buckets())),
      prefill_share(r.histogram("llmserve_step_prefill_share_ratio", "Prefill tokens over all tokens, per step.",
                                ratio_buckets())),
      step_part_time(r.counter_family("llmserve_step_part_seconds_total",
                                      "Step time by part (matmul, attention, ...; pool_wait lies within them); "
                                      "only when the server profiles its steps.",
                                      {"part"})),
      prefix_clustered(r.counter("llmserve_prefix_clustered_requests_total",
                                 "Requests admitted only after a running request had computed the prompt prefix they "
                                 "share, so that they took it from the prefix cache (prefix_clustering).")),
      slo_requests(r.counter_family("llmserve_slo_requests_total",
                                    "Finished requests with a latency target, by target (ttft, itl) and result "
                                    "(met, missed).",
                                    {"slo", "result"})),
      slo_goodput_tokens(r.counter("llmserve_slo_goodput_tokens_total",
                                   "Generated tokens of requests that met every latency target they had.")),
      autotune_batch_tokens(r.gauge("llmserve_autotune_batch_tokens",
                                    "The auto-tuner's step token budget (applied with autotune = on, proposed with "
                                    "observe).")),
      autotune_max_running(r.gauge("llmserve_autotune_max_running", "The auto-tuner's running-sequence cap.")),
      autotune_predicted_step(r.gauge("llmserve_autotune_predicted_step_seconds",
                                      "The step time the auto-tuner's fitted model predicts at its budget.")),
      autotune_max_batch_size(r.gauge("llmserve_autotune_max_batch_size",
                                      "Dynamic batching: the batch tuner's batch size (applied or proposed).")),
      autotune_max_delay(r.gauge("llmserve_autotune_max_delay_seconds",
                                 "Dynamic batching: the batch tuner's wait for a full batch.")),
      autotune_arrival_rate(r.gauge("llmserve_autotune_arrival_rate",
                                    "Dynamic batching: the arrival rate the batch tuner measured (requests/s).")),
      autotune_decisions(r.counter_family("llmserve_autotune_decisions_total",
                                          "Changes of the auto-tuner's settings, applied or only observed.",
                                          {"mode"})),
      early_exit_tokens(r.counter_family("llmserve_early_exit_tokens_total",
                                         "Tokens generated by requests on early exit, by the layer whose output "
                                         "head emitted them (full: every layer ran).",
                                         {"layer"})) {}

}  // namespace llms
