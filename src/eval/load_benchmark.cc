#include "eval/load_benchmark.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <thread>

#include "base/clock.h"
#include "base/random.h"
#include "engine/engine.h"

namespace llms {

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}

std::vector<RequestParams> make_load_requests(const LoadSpec& spec, int vocab) {
  Rng rng(spec.seed);
  std::vector<RequestParams> out;
  for (int i = 0; i < spec.requests; ++i) {
    RequestParams p;
    const int len = spec.prompt_min + static_cast<int>(rng.below(spec.prompt_max - spec.prompt_min + 1));
    p.prompt.push_back(1);
    for (int t = 1; t < len; ++t) p.prompt.push_back(3 + static_cast<int32_t>(rng.below(vocab - 3)));
    if (spec.output_log_uniform) {
      const double lo = std::log(spec.output_min), hi = std::log(spec.output_max + 1.0);
      p.max_tokens = std::min(spec.output_max, static_cast<int>(std::exp(lo + (hi - lo) * rng.uniform())));
    } else {
      p.max_tokens = spec.output_min + static_cast<int>(rng.below(spec.output_max - spec.output_min + 1));
    }
    p.ignore_eos = true;
    p.sampling.temperature = 0.0f;
    p.timeout_s = 3600;
    out.push_back(std::move(p));
  }
  return out;
}

Result<LoadResult> run_load(const Model& model, const Tokenizer& tokenizer, const EngineConfig& config,
                            const LoadSpec& spec) {
  if (spec.requests < 1 || spec.concurrency < 1 || spec.prompt_min < 2 || spec.prompt_max < spec.prompt_min ||
      spec.output_min < 1 || spec.output_max < spec.output_min) {
    return invalid_argument("load spec: counts must be positive and ranges ordered (prompts of at least 2 tokens)");
  }
  EngineConfig c = config;
  c.max_waiting_requests = std::max(c.max_waiting_requests, spec.concurrency);
  c.result_cache_bytes = 0;  // every request must reach the model
  LLMS_ASSIGN_OR_RETURN(auto engine, Engine::create(model, tokenizer, c));
  const auto requests = make_load_requests(spec, model.config().n_vocab);
  engine->start();

  std::mutex mu;
  std::vector<double> ttft, e2e;
  double itl_sum = 0;
  int64_t itl_n = 0, generated = 0;
  int next = 0, completed = 0;
  Status failure;
  const Stopwatch wall;
  auto client = [&]() {
    for (;;) {
      int i;
      {
        std::lock_guard<std::mutex> lock(mu);
        if (next >= spec.requests || !failure.ok()) return;
        i = next++;
      }
      auto h = engine->submit(requests[static_cast<size_t>(i)]);
      if (!h.ok()) {
        std::lock_guard<std::mutex> lock(mu);
        failure = h.status();
        return;
      }
      RequestEvent ev;
      while ((*h)->next(&ev)) {
        if (const auto* f = std::get_if<FinishEvent>(&ev)) {
          std::lock_guard<std::mutex> lock(mu);
          ttft.push_back(f->timings.ttft_s);
          e2e.push_back(f->timings.e2e_s);
          if (f->completion_tokens > 1) {
            itl_sum += (f->timings.e2e_s - f->timings.ttft_s);
            itl_n += f->completion_tokens - 1;
          }
          generated += f->completion_tokens;
          ++completed;
          break;
        }
      }
    }
  };
  std::vector<std::thread> clients;
  for (int i = 0; i < spec.concurrency; ++i) clients.emplace_back(client);
  for (auto& t : clients) t.join();
  const double seconds = wall.elapsed_s();
  const EngineSnapshot snap = engine->snapshot();
  engine->stop();
  const std::string profile = c.profile ? engine->step_profile().table() : std::string();
  LLMS_RETURN_IF_ERROR(failure);

  LoadResult r;
  r.policy = batching_policy_name(config.batching);
  r.completed = completed;
  r.profile = profile;
  r.generated_tokens = generated;
  r.seconds = seconds;
  r.tokens_per_s = static_cast<double>(generated) / seconds;
  r.ttft_p50_s = percentile(ttft, 0.5);
  r.ttft_p99_s = percentile(ttft, 0.99);
  r.e2e_p50_s = percentile(e2e, 0.5);
  r.e2e_p99_s = percentile(e2e, 0.99);
  r.itl_mean_s = itl_n > 0 ? itl_sum / static_cast<double>(itl_n) : 0;
  r.preemptions = snap.preemptions;
  r.expert_load_imbalance = snap.expert_load_imbalance;
  return r;
}

}  // namespace llms
