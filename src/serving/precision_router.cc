#include "serving/precision_router.h"

#include <algorithm>
#include <deque>

#include <fmt/format.h>

#include "base/clock.h"

namespace llms {

// One routed request: the client's handle, what it asked, and the inner request that
// serves it now. Kept alive by the inner handle's notify (cleared when it ends).
struct PrecisionRouter::Routed {
  Routed(double bound, int window) : entropy(bound, window) {}

  std::mutex mu;  // everything below but `outer` and `push_mu`
  RequestParams params;
  std::shared_ptr<RequestHandle> outer;
  std::shared_ptr<RequestHandle> inner;
  int variant = 0;
  int generation = 0;            // of `inner`: events of older ones are dropped
  bool may_move = false;         // auto and unconstrained
  bool client_entropy = false;   // the client asked for entropies itself
  EntropyWatch entropy;
  std::vector<int32_t> emitted;  // tokens forwarded to the client
  int64_t arrival_ns = 0;
  int64_t first_token_ns = 0;
  int64_t first_cached = -1;     // the first inner's prefix-cache hits
  int preemptions = 0;
  bool done = false;
  std::deque<RequestEvent> outbox;  // to push to `outer`, in order

  std::mutex push_mu;  // one pusher at a time, so the outbox's order is kept
};

PrecisionRouter::PrecisionRouter(std::vector<PrecisionVariant> variants, PrecisionPolicy policy, Registry& registry)
    : variants_(std::move(variants)),
      policy_(std::move(policy)),
      fallbacks_(registry.counter_family("llmserve_precision_fallbacks_total",
                                         "Requests moved up one precision variant mid-generation (tiered fallback)",
                                         {"from", "to"})),
      work_(variants_.size()) {
  auto& requests = registry.counter_family("llmserve_precision_requests_total",
                                           "Requests routed to each precision variant first", {"variant"});
  auto& tokens = registry.counter_family("llmserve_precision_tokens_total",
                                         "Generated tokens emitted by each precision variant", {"variant"});
  auto& bytes = registry.counter_family(
      "llmserve_precision_weight_bytes_total",
      "Tokens processed on each precision variant (prompt and generated) times its weight bytes", {"variant"});
  auto& share = registry.gauge_family("llmserve_precision_compute_share",
                                      "Each precision variant's share of llmserve_precision_weight_bytes_total",
                                      {"variant"});
  for (const auto& v : variants_) {
    requests_.push_back(&requests.with({v.name}));
    tokens_.push_back(&tokens.with({v.name}));
    weight_bytes_.push_back(&bytes.with({v.name}));
    share_.push_back(&share.with({v.name}));
  }
}

int PrecisionRouter::find(const std::string& name) const {
  for (size_t i = 0; i < variants_.size(); ++i) {
    if (variants_[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

std::string PrecisionRouter::names() const {
  std::string out;
  for (const auto& v : variants_) out += (out.empty() ? "" : ", ") + v.name;
  return out;
}

PrecisionRouter::Counts PrecisionRouter::counts() const {
  Counts c;
  for (size_t i = 0; i < variants_.size(); ++i) {
    c.requests.push_back(static_cast<int64_t>(requests_[i]->value()));
    c.tokens.push_back(static_cast<int64_t>(tokens_[i]->value()));
  }
  for (const auto& [labels, counter] : fallbacks_.children()) c.fallbacks += static_cast<int64_t>(counter->value());
  return c;
}

void PrecisionRouter::add_work(int v, int64_t tokens) {
  std::lock_guard<std::mutex> lock(mu_);
  const double bytes = static_cast<double>(tokens) * static_cast<double>(variants_[static_cast<size_t>(v)].weight_bytes);
  work_[static_cast<size_t>(v)] += bytes;
  weight_bytes_[static_cast<size_t>(v)]->inc(bytes);
  double total = 0;
  for (double w : work_) total += w;
  for (size_t i = 0; i < work_.size(); ++i) share_[i]->set(total > 0 ? work_[i] / total : 0);
}

Status PrecisionRouter::check(const Route& route) const {
  if (route.precision.empty() || route.precision == "auto" || find(route.precision) >= 0) return ok_status();
  return invalid_argument(fmt::format("precision '{}' is not served here (auto, {})", route.precision, names()));
}

std::optional<CachedCompletion> PrecisionRouter::cached(const RequestParams& params, const Route& route) {
  if (route.precision != variants_.back().name) return std::nullopt;
  return variants_.back().engine->cached(params);
}

void PrecisionRouter::begin_drain() {
  for (const auto& v : variants_) v.engine->begin_drain();
}

void PrecisionRouter::stop() {
  for (const auto& v : variants_) v.engine->stop();
}

Result<std::shared_ptr<RequestHandle>> PrecisionRouter::submit(RequestParams params, const Route& route,
                                                               double* retry_after_s) {
  LLMS_RETURN_IF_ERROR(check(route));
  const int n = static_cast<int>(variants_.size());
  const bool automatic = route.precision.empty() || route.precision == "auto";
  const int v = automatic
                    ? choose_precision_variant(policy_, static_cast<int64_t>(params.prompt.size()), params.max_tokens, n)
                    : find(route.precision);
  auto r = std::make_shared<Routed>(policy_.entropy_bound, policy_.window);
  r->client_entropy = params.report_entropy;
  r->may_move = automatic && !params.grammar && policy_.entropy_bound > 0;
  r->params = std::move(params);
  r->arrival_ns = now_ns();
  r->outer = std::make_shared<RequestHandle>(next_id_.fetch_add(1));
  {
    std::lock_guard<std::mutex> lock(r->mu);
    LLMS_RETURN_IF_ERROR(attach(r, v, retry_after_s));
  }
  requests_[static_cast<size_t>(v)]->inc();
  std::weak_ptr<Routed> weak = r;
  r->outer->set_cancel_hook([weak] {
    if (auto routed = weak.lock()) {
      std::shared_ptr<RequestHandle> inner;
      {
        std::lock_guard<std::mutex> lock(routed->mu);
        inner = routed->inner;
      }
      if (inner) inner->cancel();
    }
  });
  on_inner_events(r, r->generation);  // what the engine pushed before the notify was set
  return r->outer;
}

Status PrecisionRouter::attach(const std::shared_ptr<Routed>& r, int v, double* retry_after_s) {
  RequestParams p = r->params;
  p.prompt.insert(p.prompt.end(), r->emitted.begin(), r->emitted.end());
  p.max_tokens -= static_cast<int>(r->emitted.size());
  p.report_entropy = r->may_move || r->client_entropy;
  Engine& engine = *variants_[static_cast<size_t>(v)].engine;
  // A grammar is joined with one engine's vocabulary: this engine's (its cache keeps one per grammar).
  if (p.grammar) {
    GrammarBudget budget = p.grammar->budget();  // the server's limits, as the first compile had them
    budget.cancel = nullptr;
    LLMS_ASSIGN_OR_RETURN(p.grammar, engine.compile_grammar(p.grammar->grammar_ptr(), budget));
  }
  const int64_t prompt_tokens = static_cast<int64_t>(p.prompt.size());
  auto h = engine.submit(std::move(p), retry_after_s);
  if (!h.ok()) return h.status();
  std::shared_ptr<RequestHandle> old = std::move(r->inner);
  r->inner = std::move(h).value();
  r->variant = v;
  const int generation = ++r->generation;
  r->entropy.reset();
  r->inner->set_notify([this, r, generation] { on_inner_events(r, generation); });
  if (old) {
    old->set_notify(nullptr);  // its last events are not read; this also lets `r` go
    old->cancel();
  }
  add_work(v, prompt_tokens);
  return ok_status();
}

void PrecisionRouter::on_inner_events(const std::shared_ptr<Routed>& r, int generation) {
  {
    std::lock_guard<std::mutex> lock(r->mu);
    if (generation != r->generation || r->done) return;
    const size_t n = variants_.size();
    bool again = true;
    while (again && !r->done) {
      again = false;
      std::vector<RequestEvent> events = r->inner->drain();
      for (RequestEvent& ev : events) {
        const auto v = static_cast<size_t>(r->variant);
        if (auto* tok = std::get_if<TokenEvent>(&ev)) {
          if (r->may_move && v + 1 < n && r->entropy.push(tok->entropy)) {
            add_work(r->variant, 1);  // computed, not emitted: the next variant redoes it
            if (attach(r, r->variant + 1, nullptr).ok()) {
              fallbacks_.with({variants_[v].name, variants_[v + 1].name}).inc();
              again = true;  // read the new inner's events
              break;
            }
            r->may_move = false;  // the next variant refused: stay here
          }
          if (!r->client_entropy) tok->entropy = -1.0f;
          r->emitted.push_back(tok->token);
          if (r->first_token_ns == 0) r->first_token_ns = now_ns();
          add_work(r->variant, 1);
          tokens_[v]->inc();
          r->outbox.push_back(std::move(ev));
        } else {
          FinishEvent fe = std::get<FinishEvent>(std::move(ev));
          const int64_t now = now_ns();
          fe.prompt_tokens = static_cast<int64_t>(r->params.prompt.size());
          fe.completion_tokens = static_cast<int64_t>(r->emitted.size());
          fe.cached_prompt_tokens = std::min(fe.cached_prompt_tokens, fe.prompt_tokens);
          fe.timings.ttft_s = r->first_token_ns ? static_cast<double>(r->first_token_ns - r->arrival_ns) * 1e-9 : 0;
          fe.timings.e2e_s = static_cast<double>(now - r->arrival_ns) * 1e-9;
          r->done = true;
          r->inner->set_notify(nullptr);  // lets `r` go once the client drops its handle
          r->outbox.push_back(std::move(fe));
          break;
        }
      }
    }
  }
  // Push in the outbox's order, one pusher at a time.
  std::lock_guard<std::mutex> pushing(r->push_mu);
  while (true) {
    RequestEvent ev;
    {
      std::lock_guard<std::mutex> lock(r->mu);
      if (r->outbox.empty()) return;
      ev = std::move(r->outbox.front());
      r->outbox.pop_front();
    }
    r->outer->push(std::move(ev));
  }
}

}  // namespace llms
