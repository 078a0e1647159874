// The server's own view of a run: its Prometheus /metrics read before and after, and
// the differences a benchmark reports (tokens counted, prefix-cache hit rate,
// preemptions, queue time, its time-to-first-token histogram). llmserve's llmserve_*
// names and vLLM's vllm:* names are known; llama-server's llamacpp:* counters give
// token counts only. Anything absent stays unset.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace llms::benchserve {

// Sample values summed over label sets: "name" → sum; a histogram's buckets as
// "name_bucket" → (upper bound → cumulative count) summed the same way.
struct MetricsSnapshot {
  std::map<std::string, double> values;
  std::map<std::string, std::map<double, double>> buckets;
  bool empty() const { return values.empty(); }
  double value(const std::string& name) const;  // 0 when absent
  bool has(const std::string& name) const { return values.count(name) > 0; }
};

MetricsSnapshot parse_prometheus(const std::string& text);

// Prometheus' histogram_quantile: the q-quantile (0..1) of cumulative bucket counts
// (upper bound → count), interpolated linearly inside its bucket; nullopt without counts.
std::optional<double> histogram_quantile(const std::map<double, double>& cumulative, double q);

struct ServerDelta {
  std::string flavor;  // "llmserve", "vllm", "llama.cpp"; "" when /metrics had none of them
  std::optional<double> requests_finished, prompt_tokens, generation_tokens;
  std::optional<double> prefix_cache_hit_rate;  // hits / queries in the run
  std::optional<double> preemptions;
  std::optional<double> queue_time_mean_s;
  std::optional<double> ttft_mean_s, ttft_p50_s, ttft_p99_s;  // the server's TTFT histogram
  std::map<double, double> ttft_buckets;  // its cumulative counts in the run (upper bound → count)
};

// Samples (seconds) counted into the upper bounds of `like`, cumulatively, so that a
// client's samples can be read through the same interpolation as the server's.
std::map<double, double> cumulative_counts(const std::vector<double>& samples, const std::map<double, double>& like);

ServerDelta server_delta(const MetricsSnapshot& before, const MetricsSnapshot& after);

}  // namespace llms::benchserve
