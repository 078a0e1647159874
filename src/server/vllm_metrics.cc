#include "server/vllm_metrics.h"

#include <fmt/format.h>

#include <memory>
#include <set>

#include "base/clock.h"
#include "deploy/serving_version.h"
#include "metrics/metrics.h"

namespace llms {
namespace {

const std::vector<MetricAlias>& vllm_aliases() {
  static const std::vector<MetricAlias> aliases = {
      {"llmserve_requests_waiting", "vllm:num_requests_waiting"},
      {"llmserve_requests_running", "vllm:num_requests_running"},
      {"llmserve_kv_cache_usage_ratio", "vllm:kv_cache_usage_perc"},
      {"llmserve_kv_cache_usage_ratio", "vllm:gpu_cache_usage_perc"},  // the name older gateways read
      {"llmserve_time_to_first_token_seconds", "vllm:time_to_first_token_seconds"},
      {"llmserve_inter_token_latency_seconds", "vllm:inter_token_latency_seconds"},
      {"llmserve_inter_token_latency_seconds", "vllm:time_per_output_token_seconds"},
      {"llmserve_e2e_request_latency_seconds", "vllm:e2e_request_latency_seconds"},
      {"llmserve_request_queue_time_seconds", "vllm:request_queue_time_seconds"},
      {"llmserve_prompt_tokens_total", "vllm:prompt_tokens_total"},
      {"llmserve_generation_tokens_total", "vllm:generation_tokens_total"},
      {"llmserve_preemptions_total", "vllm:num_preemptions_total"},
      {"llmserve_prefix_cache_queries_total", "vllm:prefix_cache_queries_total"},
      {"llmserve_prefix_cache_hits_total", "vllm:prefix_cache_hits_total"},
      {"llmserve_spec_decode_drafts_total", "vllm:spec_decode_num_drafts_total"},
      {"llmserve_spec_decode_draft_tokens_total", "vllm:spec_decode_num_draft_tokens_total"},
      {"llmserve_spec_decode_accepted_tokens_total", "vllm:spec_decode_num_accepted_tokens_total"},
  };
  return aliases;
}

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ",") + n;
  return out;
}

// vLLM's lora_requests_info: one series whose labels name the adapters of the running
// and of the waiting requests (every loaded version's), and whose value is the time
// it was written (the gateway's LoRA-affinity picker reads the labels).
std::string lora_requests_info(std::span<const VersionPtr> loaded, size_t max_lora) {
  std::set<std::string> running, waiting;
  for (const VersionPtr& v : loaded) {
    const EngineSnapshot s = v->engine().snapshot();
    running.insert(s.running_adapters.begin(), s.running_adapters.end());
    waiting.insert(s.waiting_adapters.begin(), s.waiting_adapters.end());
  }
  return fmt::format(
      "# HELP vllm:lora_requests_info Running stats on lora requests.\n# TYPE vllm:lora_requests_info gauge\n"
      "vllm:lora_requests_info{{max_lora=\"{}\",running_lora_adapters=\"{}\",waiting_lora_adapters=\"{}\"}} {:.3f}\n",
      max_lora, join({running.begin(), running.end()}), join({waiting.begin(), waiting.end()}),
      static_cast<double>(unix_seconds()));
}

}  // namespace

std::string render_vllm_metrics(std::span<const ModelVersions> models, size_t num_adapters) {
  std::vector<LabeledRegistry> parts;
  std::vector<LabeledRegistry> alias_parts;
  std::vector<VersionPtr> loaded;
  for (const ModelVersions& m : models) {
    for (const VersionPtr& v : m.versions) {
      loaded.push_back(v);
      parts.push_back({&v->registry(), {{"model_name", m.model_name}, {"version", v->name()}}});
      for (LabeledRegistry& part : v->labeled_registries()) {  // with precision variants, theirs too
        part.labels.insert(part.labels.begin(), {"model_name", m.model_name});
        alias_parts.push_back(std::move(part));
      }
    }
  }
  std::string out = Registry::render_aliases(alias_parts, vllm_aliases());
  // cache_config_info: one series per version, value 1, the facts in its labels.
  std::vector<std::unique_ptr<Registry>> info;
  for (size_t i = 0; i < loaded.size(); ++i) {
    const Engine& e = loaded[i]->engine();
    info.push_back(std::make_unique<Registry>());
    info.back()
        ->gauge_family("vllm:cache_config_info", "KV cache: block size (tokens) and number of blocks.",
                       {"block_size", "num_gpu_blocks"})
        .with({std::to_string(e.config().kv.block_size), std::to_string(e.num_kv_blocks())})
        .set(1);
    parts[i].registry = info.back().get();
  }
  out += Registry::render_all(parts);
  if (num_adapters > 0 && !models.empty()) out += lora_requests_info(models.front().versions, num_adapters);
  return out;
}

}  // namespace llms
