#include "engine/early_exit_policy.h"

namespace llms {

EarlyExitConfig early_exit_config(const EngineConfig& config) {
  EarlyExitConfig e;
  e.layers = config.exit_layers;
  e.threshold = config.exit_threshold;
  return e;
}

bool early_exit_applies(const EngineConfig& config, const RequestParams& p) {
  const SamplingParams& s = p.sampling;
  return early_exit_config(config).enabled() && p.early_exit && s.greedy() && !p.grammar &&
         s.repetition_penalty == 1.0f && s.presence_penalty == 0.0f && s.frequency_penalty == 0.0f &&
         s.logit_bias.empty();
}

Hash128 early_exit_identity(const Hash128& model_identity, const EngineConfig& config) {
  HashBuilder h;
  h.add("early_exit").add_pod(model_identity).add_pod(config.exit_threshold);
  h.add_span(std::span<const int>(config.exit_layers));
  return h.finish128();
}

}  // namespace llms
