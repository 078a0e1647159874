// The metrics a gateway reads from vLLM, under vLLM's names (metrics_compat = "vllm"):
// the Gateway API inference extension's model-server protocol (queue, running, KV
// cache use, cache_config_info) and the latency histograms load tools query. Each is
// the llmserve metric of the same meaning rendered a second time, with a model_name
// label beside the version one. docs/metrics.md has the mapping.
//
// Thread-safety: reads the registries under their locks; call from any thread.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "deploy/version_set.h"

namespace llms {

std::string render_vllm_metrics(std::span<const VersionPtr> loaded, const std::string& model_name);

}  // namespace llms
