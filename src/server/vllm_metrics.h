// The metrics a gateway reads from vLLM, under vLLM's names (metrics_compat = "vllm"):
// the Gateway API inference extension's model-server protocol (queue, running, KV
// cache use, cache_config_info) and the latency histograms load tools query. Each is
// the llmserve metric of the same meaning rendered a second time, with a model_name
// label beside the version one. docs/metrics.md has the mapping. With LoRA adapters
// (`num_adapters` > 0, the server's count), also vllm:lora_requests_info, as vLLM
// writes it: labels max_lora (the adapters served; all are resident at once),
// running_lora_adapters and waiting_lora_adapters (comma-separated names), value the
// time of writing.
//
// Thread-safety: reads the registries under their locks; call from any thread.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "deploy/version_set.h"

namespace llms {

// The loaded versions of one served model (several models per server: one each).
struct ModelVersions {
  std::string model_name;
  std::vector<VersionPtr> versions;
};

// `models`: the default model first (its versions are the ones adapters run on).
std::string render_vllm_metrics(std::span<const ModelVersions> models, size_t num_adapters = 0);

}  // namespace llms
