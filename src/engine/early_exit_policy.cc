#include "engine/early_exit_policy.h"

namespace llms {

bool early_exit_applies(const EngineConfig& config, const RequestParams& p) {
  const SamplingParams& s = p.sampling;
  return config.early_exit.enabled() && p.early_exit && !p.adapter && s.greedy() && !p.grammar &&
         s.repetition_penalty == 1.0f && s.presence_penalty == 0.0f && s.frequency_penalty == 0.0f &&
         s.logit_bias.empty();
}

Hash128 early_exit_identity(const Hash128& model_identity, const EngineConfig& config) {
  HashBuilder h;
  h.add("early_exit").add_pod(model_identity).add_pod(config.early_exit.threshold);
  h.add_span(std::span<const int>(config.early_exit.layers));
  return h.finish128();
}

}  // namespace llms
