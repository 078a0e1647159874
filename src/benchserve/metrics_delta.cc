#include "benchserve/metrics_delta.h"

#include <cmath>
#include <cstdlib>
#include <sstream>

namespace llms::benchserve {

namespace {

// The names one server family uses for what server_delta reports; "" = none.
struct MetricNames {
  const char* flavor;
  const char* finished;
  const char* prompt_tokens;
  const char* generation_tokens;
  const char* prefix_hits;
  const char* prefix_queries;
  const char* preemptions;
  const char* queue_time;  // histogram base name
  const char* ttft;        // histogram base name
};

constexpr MetricNames kFamilies[] = {
    {"llmserve", "llmserve_requests_finished_total", "llmserve_prompt_tokens_total",
     "llmserve_generation_tokens_total", "llmserve_prefix_cache_hits_total", "llmserve_prefix_cache_queries_total",
     "llmserve_preemptions_total", "llmserve_request_queue_time_seconds", "llmserve_time_to_first_token_seconds"},
    {"vllm", "vllm:request_success_total", "vllm:prompt_tokens_total", "vllm:generation_tokens_total",
     "vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total", "vllm:num_preemptions_total",
     "vllm:request_queue_time_seconds", "vllm:time_to_first_token_seconds"},
    {"llama.cpp", "", "llamacpp:prompt_tokens_total", "llamacpp:tokens_predicted_total", "", "", "", "", ""},
};

double parse_number(const std::string& s) {
  if (s == "+Inf" || s == "Inf") return INFINITY;
  if (s == "-Inf") return -INFINITY;
  return std::strtod(s.c_str(), nullptr);
}

// The value of label `key` in `labels` (the text between braces), "" when absent.
std::string label_value(const std::string& labels, const std::string& key) {
  const std::string needle = key + "=\"";
  size_t pos = 0;
  while ((pos = labels.find(needle, pos)) != std::string::npos) {
    if (pos == 0 || labels[pos - 1] == ',' || labels[pos - 1] == ' ') {
      const size_t start = pos + needle.size();
      return labels.substr(start, labels.find('"', start) - start);
    }
    pos += needle.size();
  }
  return "";
}

std::optional<double> delta(const MetricsSnapshot& b, const MetricsSnapshot& a, const char* name) {
  if (!*name || !a.has(name)) return std::nullopt;
  return a.value(name) - b.value(name);
}

std::map<double, double> bucket_delta(const MetricsSnapshot& b, const MetricsSnapshot& a, const std::string& name) {
  std::map<double, double> out;
  const auto ia = a.buckets.find(name + "_bucket");
  if (ia == a.buckets.end()) return out;
  const auto ib = b.buckets.find(name + "_bucket");
  for (const auto& [le, count] : ia->second) {
    double before = 0;
    if (ib != b.buckets.end()) {
      const auto it = ib->second.find(le);
      if (it != ib->second.end()) before = it->second;
    }
    out[le] = count - before;
  }
  return out;
}

std::optional<double> mean_delta(const MetricsSnapshot& b, const MetricsSnapshot& a, const std::string& name) {
  const auto sum = delta(b, a, (name + "_sum").c_str());
  const auto count = delta(b, a, (name + "_count").c_str());
  if (!sum || !count || *count <= 0) return std::nullopt;
  return *sum / *count;
}

}  // namespace

double MetricsSnapshot::value(const std::string& name) const {
  const auto it = values.find(name);
  return it == values.end() ? 0.0 : it->second;
}

MetricsSnapshot parse_prometheus(const std::string& text) {
  MetricsSnapshot s;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t name_end = line.find_first_of("{ ");
    if (name_end == std::string::npos) continue;
    const std::string name = line.substr(0, name_end);
    std::string labels;
    size_t rest = name_end;
    if (line[name_end] == '{') {
      const size_t close = line.find('}', name_end);
      if (close == std::string::npos) continue;
      labels = line.substr(name_end + 1, close - name_end - 1);
      rest = close + 1;
    }
    std::istringstream values(line.substr(rest));
    std::string value_text;
    if (!(values >> value_text)) continue;
    const double v = parse_number(value_text);
    if (std::isnan(v)) continue;
    s.values[name] += v;
    const std::string le = label_value(labels, "le");
    if (!le.empty()) s.buckets[name][parse_number(le)] += v;
  }
  return s;
}

std::optional<double> histogram_quantile(const std::map<double, double>& cumulative, double q) {
  if (cumulative.empty()) return std::nullopt;
  const double total = cumulative.rbegin()->second;
  if (total <= 0) return std::nullopt;
  const double rank = q * total;
  double lower = 0, below = 0;
  for (const auto& [le, count] : cumulative) {
    if (count >= rank) {
      if (std::isinf(le)) return lower;  // past the last finite bound: its value
      const double in_bucket = count - below;
      return in_bucket > 0 ? lower + (le - lower) * (rank - below) / in_bucket : le;
    }
    lower = le;
    below = count;
  }
  return lower;
}

std::map<double, double> cumulative_counts(const std::vector<double>& samples, const std::map<double, double>& like) {
  std::map<double, double> out;
  for (const auto& [le, unused] : like) {
    double n = 0;
    for (double v : samples) n += v <= le ? 1 : 0;
    out[le] = n;
  }
  return out;
}

ServerDelta server_delta(const MetricsSnapshot& before, const MetricsSnapshot& after) {
  ServerDelta d;
  for (const auto& f : kFamilies) {
    if (!after.has(f.generation_tokens)) continue;
    d.flavor = f.flavor;
    d.requests_finished = delta(before, after, f.finished);
    d.prompt_tokens = delta(before, after, f.prompt_tokens);
    d.generation_tokens = delta(before, after, f.generation_tokens);
    const auto hits = delta(before, after, f.prefix_hits), queries = delta(before, after, f.prefix_queries);
    if (hits && queries && *queries > 0) d.prefix_cache_hit_rate = *hits / *queries;
    d.preemptions = delta(before, after, f.preemptions);
    if (*f.queue_time) d.queue_time_mean_s = mean_delta(before, after, f.queue_time);
    if (*f.ttft) {
      d.ttft_mean_s = mean_delta(before, after, f.ttft);
      d.ttft_buckets = bucket_delta(before, after, f.ttft);
      d.ttft_p50_s = histogram_quantile(d.ttft_buckets, 0.5);
      d.ttft_p99_s = histogram_quantile(d.ttft_buckets, 0.99);
    }
    break;
  }
  return d;
}

}  // namespace llms::benchserve
