#include "eval/precision_eval.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include <fmt/format.h>

#include "base/clock.h"
#include "base/thread_pool.h"
#include "engine/engine.h"
#include "serving/precision_router.h"
#include "eval/perplexity.h"

namespace llms {
namespace {

struct WorkItem {
  int prompt = 0;                 // tokens of `tokens` that are prompt
  std::vector<int32_t> tokens;    // prompt + continuation
};

// Which variant scores each continuation position, and the weight bytes the mode read.
struct Plan {
  std::vector<int> variant;  // per continuation position
  double bytes = 0;
  int first = 0;
  int fallback_at = -1;
  int fallbacks = 0;
};

Plan fixed_plan(int v, const WorkItem& w, int gen, std::span<const int64_t> bpt) {
  Plan p;
  p.variant.assign(static_cast<size_t>(gen), v);
  p.first = v;
  p.bytes = static_cast<double>(w.prompt + gen) * static_cast<double>(bpt[static_cast<size_t>(v)]);
  return p;
}

// The router's decisions, replayed on the recorded distributions (`entropy[v][k]`:
// variant v's entropy at continuation position k).
Plan auto_plan(const PrecisionPolicy& policy, const WorkItem& w, int gen, std::span<const int64_t> bpt,
               const std::vector<std::vector<double>>& entropy) {
  const int n = static_cast<int>(bpt.size());
  Plan p;
  int v = choose_precision_variant(policy, w.prompt, gen, n);
  p.first = v;
  p.bytes = static_cast<double>(w.prompt) * static_cast<double>(bpt[static_cast<size_t>(v)]);
  EntropyWatch watch(policy.entropy_bound, policy.window);
  for (int k = 0; k < gen; ++k) {
    while (watch.push(entropy[static_cast<size_t>(v)][static_cast<size_t>(k)]) && v + 1 < n) {
      p.bytes += static_cast<double>(bpt[static_cast<size_t>(v)]);  // computed, not emitted
      ++v;
      watch.reset();
      p.bytes += static_cast<double>(w.prompt + k) * static_cast<double>(bpt[static_cast<size_t>(v)]);  // recomputed
      if (p.fallback_at < 0) p.fallback_at = k;
      ++p.fallbacks;
    }
    p.variant.push_back(v);
    p.bytes += static_cast<double>(bpt[static_cast<size_t>(v)]);
  }
  return p;
}

double entropy_of(const float* lp, int n_vocab) {
  double h = 0;
  for (int i = 0; i < n_vocab; ++i) h -= std::exp(static_cast<double>(lp[i])) * static_cast<double>(lp[i]);
  return h;
}

int argmax(const float* lp, int n_vocab) { return static_cast<int>(std::max_element(lp, lp + n_vocab) - lp); }

struct Sums {
  double kl = 0, nll = 0, top1 = 0;
  int64_t n = 0;
  void add(const Sums& o) { kl += o.kl, nll += o.nll, top1 += o.top1, n += o.n; }
};

// Scores `plan` on one request: variant `plan.variant[k]` serves continuation k.
Sums score(const Plan& plan, const std::vector<ReferenceLogprobs>& lps, const WorkItem& w, int gen) {
  const int n_vocab = lps.front().n_vocab;
  const size_t best = lps.size() - 1;
  Sums s;
  for (int k = 0; k < gen; ++k) {
    const size_t row = static_cast<size_t>(w.prompt - 1 + k);
    const float* b = lps[best].logprobs.data() + row * static_cast<size_t>(n_vocab);
    const float* q = lps[static_cast<size_t>(plan.variant[static_cast<size_t>(k)])].logprobs.data() +
                     row * static_cast<size_t>(n_vocab);
    double kl = 0;
    for (int i = 0; i < n_vocab; ++i) kl += std::exp(static_cast<double>(b[i])) * (static_cast<double>(b[i]) - q[i]);
    s.kl += kl;
    s.top1 += argmax(q, n_vocab) == argmax(b, n_vocab) ? 1 : 0;
    s.nll -= static_cast<double>(q[w.tokens[row + 1]]);
    ++s.n;
  }
  return s;
}

// Serves every request through `router` (greedy, `gen` tokens, EOS ignored), all at
// once; generated tokens per second, or an error.
Result<double> serve_once(PrecisionRouter& router, const std::string& precision, const std::vector<WorkItem>& work,
                          int gen) {
  Stopwatch clock;
  std::vector<std::shared_ptr<RequestHandle>> handles;
  for (const WorkItem& w : work) {
    RequestParams p;
    p.prompt.assign(w.tokens.begin(), w.tokens.begin() + w.prompt);
    p.max_tokens = gen;
    p.ignore_eos = true;
    p.sampling.temperature = 0;
    LLMS_ASSIGN_OR_RETURN(auto h, router.submit(std::move(p), {precision}));
    handles.push_back(std::move(h));
  }
  int64_t tokens = 0;
  for (auto& h : handles) {
    RequestEvent ev;
    while (h->next(&ev)) {
      if (const auto* fe = std::get_if<FinishEvent>(&ev)) {
        if (fe->reason != FinishReason::kLength) {
          return internal_error(fmt::format("a request ended {}: {}", finish_reason_name(fe->reason), fe->message));
        }
        tokens += fe->completion_tokens;
        break;
      }
    }
  }
  return static_cast<double>(tokens) / clock.elapsed_s();
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

Result<PrecisionEvalResult> evaluate_precision(std::span<const PrecisionEvalVariant> variants,
                                               const Tokenizer& tokenizer, std::span<const int32_t> text,
                                               const PrecisionEvalOptions& o) {
  const int n = static_cast<int>(variants.size());
  if (n < 2) return invalid_argument("--variants: at least two variants, cheapest first");
  if (o.requests < 2) return invalid_argument("--requests: at least 2 (short and long prompts alternate)");
  if (o.short_prompt < 1 || o.long_prompt < o.short_prompt) {
    return invalid_argument("--short-prompt and --long-prompt: 1 <= short <= long");
  }
  if (o.gen < 1) return invalid_argument("--gen: at least 1");
  if (o.rounds < 0) return invalid_argument("--rounds: at least 0");
  if (o.entropy_bounds.empty()) return invalid_argument("--precision-entropy: at least one bound");
  for (double b : o.entropy_bounds) {
    PrecisionPolicy p = o.policy;
    p.entropy_bound = b;
    LLMS_RETURN_IF_ERROR(p.validate(n));
  }
  const int n_vocab = variants[0].model->config().n_vocab;
  for (const auto& v : variants) {
    if (v.model->config().n_vocab != n_vocab) return invalid_argument("the variants' vocabularies differ");
    if (v.model->config().n_ctx_train < o.long_prompt + o.gen) {
      return invalid_argument(fmt::format("--long-prompt + --gen ({}) exceeds the model's context ({})",
                                          o.long_prompt + o.gen, v.model->config().n_ctx_train));
    }
  }
  const int64_t span = o.long_prompt + o.gen;
  if (static_cast<int64_t>(text.size()) < span + o.requests) {
    return invalid_argument(fmt::format("the text has {} tokens; the workload needs at least {}", text.size(),
                                        span + o.requests));
  }
  const int64_t stride = (static_cast<int64_t>(text.size()) - span) / (o.requests - 1);
  std::vector<WorkItem> work;
  for (int i = 0; i < o.requests; ++i) {
    WorkItem w;
    w.prompt = i % 2 == 0 ? o.short_prompt : o.long_prompt;
    const auto at = text.begin() + std::min<int64_t>(i * stride, static_cast<int64_t>(text.size()) - span);
    w.tokens.assign(at, at + w.prompt + o.gen);
    work.push_back(std::move(w));
  }

  PrecisionEvalResult r;
  std::vector<int64_t> bpt;
  for (const auto& v : variants) {
    r.variants.push_back(v.name);
    const WeightsMemory m = v.model->weights_memory();
    r.weight_bytes.push_back(m.owned_bytes + m.mapped_bytes);
    bpt.push_back(v.model->weights().bytes_per_token());
  }
  r.bytes_per_token = bpt;

  // Rows: cheapest, best, then auto per bound.
  std::vector<PrecisionPolicy> policies;
  r.rows.resize(2 + o.entropy_bounds.size());
  r.rows[0].mode = fmt::format("always cheapest ({})", variants[0].name);
  r.rows[1].mode = fmt::format("always best ({})", variants[static_cast<size_t>(n - 1)].name);
  for (size_t b = 0; b < o.entropy_bounds.size(); ++b) {
    PrecisionPolicy p = o.policy;
    p.entropy_bound = o.entropy_bounds[b];
    policies.push_back(p);
    r.rows[2 + b].mode = fmt::format("auto (entropy {:g}, window {})", p.entropy_bound, p.window);
    r.rows[2 + b].entropy_bound = p.entropy_bound;
  }
  for (auto& row : r.rows) row.first_variant.assign(static_cast<size_t>(n), 0);

  ThreadPool pool(o.threads);
  std::vector<Sums> totals(r.rows.size());
  std::vector<double> bytes(r.rows.size());
  for (const WorkItem& w : work) {
    std::vector<ReferenceLogprobs> lps;
    PerplexityOptions po;
    po.ctx = static_cast<int>(w.tokens.size());
    po.max_windows = 1;
    for (const auto& v : variants) {
      LLMS_ASSIGN_OR_RETURN(auto lp, record_logprobs(w.tokens, EvalSide{v.model}, po, pool));
      lps.push_back(std::move(lp));
    }
    std::vector<std::vector<double>> entropy(static_cast<size_t>(n));
    for (int v = 0; v < n; ++v) {
      for (int k = 0; k < o.gen; ++k) {
        const size_t row = static_cast<size_t>(w.prompt - 1 + k);
        entropy[static_cast<size_t>(v)].push_back(
            entropy_of(lps[static_cast<size_t>(v)].logprobs.data() + row * static_cast<size_t>(n_vocab), n_vocab));
      }
    }
    std::vector<Plan> plans{fixed_plan(0, w, o.gen, bpt), fixed_plan(n - 1, w, o.gen, bpt)};
    for (const auto& p : policies) plans.push_back(auto_plan(p, w, o.gen, bpt, entropy));
    const Sums best = score(plans[1], lps, w, o.gen);
    for (size_t m = 0; m < plans.size(); ++m) {
      const Sums s = score(plans[m], lps, w, o.gen);
      totals[m].add(s);
      bytes[m] += plans[m].bytes;
      PrecisionModeRow& row = r.rows[m];
      ++row.first_variant[static_cast<size_t>(plans[m].first)];
      row.fallbacks += plans[m].fallbacks;
      PrecisionRequestRow q;
      q.prompt_tokens = w.prompt;
      q.first_variant = plans[m].first;
      q.last_variant = plans[m].variant.back();
      q.fallback_at = plans[m].fallback_at;
      q.kl = s.kl / static_cast<double>(s.n);
      q.top1 = s.top1 / static_cast<double>(s.n);
      q.ppl = std::exp(s.nll / static_cast<double>(s.n));
      q.ppl_ratio = q.ppl / std::exp(best.nll / static_cast<double>(best.n));
      row.requests.push_back(q);
    }
  }
  r.scored_positions = totals[1].n;
  const double best_ppl = std::exp(totals[1].nll / static_cast<double>(totals[1].n));
  const double generated = static_cast<double>(o.requests) * o.gen;
  for (size_t m = 0; m < r.rows.size(); ++m) {
    PrecisionModeRow& row = r.rows[m];
    const double cnt = static_cast<double>(totals[m].n);
    row.kl = totals[m].kl / cnt;
    row.top1 = totals[m].top1 / cnt;
    row.ppl = std::exp(totals[m].nll / cnt);
    row.ppl_ratio = row.ppl / best_ppl;
    row.bytes_per_token = bytes[m] / generated;
    row.cost_ratio = bytes[m] / bytes[1];
  }

  if (o.rounds > 0) {
    EngineConfig ec;
    ec.threads = o.threads;
    ec.result_cache_bytes = 0;
    ec.kv.prefix_cache = false;  // every round recomputes its prompts, as the first did
    std::vector<std::unique_ptr<Engine>> engines;
    std::vector<PrecisionVariant> routed;
    for (const auto& v : variants) {
      LLMS_ASSIGN_OR_RETURN(auto e, Engine::create(*v.model, tokenizer, ec));
      e->start();
      routed.push_back({v.name, e.get(), static_cast<uint64_t>(v.model->weights().bytes_per_token())});
      engines.push_back(std::move(e));
    }
    std::vector<std::unique_ptr<Registry>> registries;
    std::vector<std::unique_ptr<PrecisionRouter>> routers;  // per row
    for (size_t m = 0; m < r.rows.size(); ++m) {
      registries.push_back(std::make_unique<Registry>());
      const PrecisionPolicy& p = m < 2 ? o.policy : policies[m - 2];  // the first two rows are pinned
      routers.push_back(std::make_unique<PrecisionRouter>(routed, p, *registries.back()));
    }
    std::vector<std::vector<double>> speeds(r.rows.size());
    for (int round = 0; round < o.rounds; ++round) {
      for (size_t m = 0; m < r.rows.size(); ++m) {
        const std::string pin = m == 0 ? variants[0].name : m == 1 ? variants[static_cast<size_t>(n - 1)].name : "auto";
        auto tok_s = serve_once(*routers[m], pin, work, o.gen);
        if (!tok_s.ok()) {
          for (auto& e : engines) e->stop();
          return tok_s.status();
        }
        speeds[m].push_back(*tok_s);
      }
    }
    for (auto& e : engines) e->stop();  // before the routers their callbacks use
    for (size_t m = 0; m < r.rows.size(); ++m) r.rows[m].tok_s = median(speeds[m]);
  }
  return r;
}

}  // namespace llms
