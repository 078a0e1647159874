#include "tools/batch_generator.h"

#include <algorithm>
#include <limits>

#include "base/clock.h"
#include "engine/engine.h"

namespace llms {

BatchGenerator::BatchGenerator(const Model& model, const Tokenizer& tokenizer, EngineConfig config)
    : model_(model), tokenizer_(tokenizer), config_(std::move(config)) {}

Result<std::vector<GenerationOutput>> BatchGenerator::run(std::span<const RequestParams> requests,
                                                          const TextCallback& on_text, GeneratorStats* stats) {
  EngineConfig config = config_;
  // Every prompt is submitted at once: the queue must hold them all, and memory
  // watermarks only make sense for a server.
  config.admission.max_waiting_requests =
      std::max<int>(config.admission.max_waiting_requests, static_cast<int>(requests.size()));
  config.admission.max_waiting_tokens = std::numeric_limits<int64_t>::max() / 2;
  config.admission.kv_high = config.admission.kv_low = 1.0;
  config.admission.rss_high = config.admission.rss_low = 1.0;
  config.result_cache_bytes = 0;
  if (config.kv.cache_bytes == 0) {
    // The engine sizes the cache for max_running sequences of the context: make that
    // the longest request, and no more sequences than there are requests.
    int64_t longest = 1;
    for (const auto& r : requests) longest = std::max<int64_t>(longest, static_cast<int64_t>(r.prompt.size()) + r.max_tokens);
    const int ctx = config.context_length > 0 ? config.context_length : model_.config().n_ctx_train;
    config.context_length = static_cast<int>(std::min<int64_t>(ctx, longest));
    config.batching.max_running =
        static_cast<int>(std::min<int64_t>(config.batching.max_running, static_cast<int64_t>(requests.size())));
  }
  LLMS_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, Engine::create(model_, tokenizer_, config));

  std::vector<std::shared_ptr<RequestHandle>> handles;
  for (RequestParams p : requests) {
    if (p.timeout_s == 0) p.timeout_s = 1e9;
    LLMS_ASSIGN_OR_RETURN(auto h, engine->submit(std::move(p)));
    handles.push_back(std::move(h));
  }
  std::vector<GenerationOutput> outputs(requests.size());
  std::vector<bool> done(requests.size(), false);
  size_t remaining = requests.size();
  const Stopwatch total;
  double first_token_s = 0;
  auto deliver = [&]() {
    for (size_t i = 0; i < handles.size(); ++i) {
      if (done[i]) continue;
      for (auto& e : handles[i]->drain()) {
        GenerationOutput& out = outputs[i];
        std::string_view text;
        if (auto* t = std::get_if<TokenEvent>(&e)) {
          if (first_token_s == 0 && i == 0) first_token_s = total.elapsed_s();
          out.tokens.push_back(t->token);
          if (requests[i].top_logprobs >= 0) {
            out.logprobs.push_back(t->logprob);
            out.top_logprobs.push_back(t->top);
          }
          text = t->text;
          out.text += t->text;
        } else {
          const auto& f = std::get<FinishEvent>(e);
          if (f.reason == FinishReason::kError) return internal_error("generation failed: " + f.message);
          out.finish = f.reason;
          out.prompt_tokens = f.prompt_tokens;
          out.completion_tokens = f.completion_tokens;
          out.cached_prompt_tokens = f.cached_prompt_tokens;
          out.text += f.text;
          text = f.text;
          done[i] = true;
          --remaining;
        }
        if (on_text && !text.empty()) on_text(i, text);
      }
    }
    return ok_status();
  };
  while (remaining > 0) {
    engine->step();
    LLMS_RETURN_IF_ERROR(deliver());
  }
  if (stats) {
    const EngineSnapshot snap = engine->snapshot();
    GeneratorStats st;
    for (const auto& o : outputs) {
      st.prompt_tokens += o.prompt_tokens;
      st.generated_tokens += o.completion_tokens;
    }
    st.prefill_tokens_computed = snap.prefill_tokens_computed;
    st.prefix_cache_hit_tokens = snap.prefix.hit_tokens;
    st.steps = snap.steps;
    st.spec_draft_tokens = snap.spec_draft_tokens;
    st.spec_accepted_tokens = snap.spec_accepted_tokens;
    st.preemptions = snap.preemptions;
    st.first_token_s = first_token_s;
    st.total_s = total.elapsed_s();
    st.kv_blocks_total = snap.kv_blocks_total;
    st.kv_waste_pct = snap.kv_waste_pct;
    st.kv_shared_pct = snap.kv_shared_pct;
    *stats = st;
  }
  return outputs;
}

}  // namespace llms
