#include "benchserve/bench_result.h"

#include <algorithm>
#include <map>

namespace llms::benchserve {

int count_good(const std::vector<RequestOutcome>& outcomes, const GoodputSlo& slo) {
  int good = 0;
  for (const auto& r : outcomes) {
    if (!r.ok) continue;
    if (slo.ttft_ms && r.ttft_s * 1e3 > *slo.ttft_ms) continue;
    if (slo.tpot_ms && r.tpot_s() * 1e3 > *slo.tpot_ms) continue;
    if (slo.e2el_ms && r.e2e_s * 1e3 > *slo.e2el_ms) continue;
    ++good;
  }
  return good;
}

std::vector<double> reported_percentiles(const std::vector<double>& requested) {
  std::vector<double> p = requested;
  if (std::find(p.begin(), p.end(), 99.0) == p.end()) p.push_back(99.0);
  std::sort(p.begin(), p.end());
  p.erase(std::unique(p.begin(), p.end()), p.end());
  return p;
}

namespace {

std::vector<std::pair<std::string, int>> group_errors(const std::vector<RequestOutcome>& outcomes) {
  std::map<std::string, int> counts;
  for (const auto& r : outcomes) {
    if (!r.ok) ++counts[r.error];
  }
  std::vector<std::pair<std::string, int>> out(counts.begin(), counts.end());
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return out;
}

void add_cost(BenchResult& r, double price_per_hour) {
  if (price_per_hour <= 0) return;
  r.cost_usd = price_per_hour * r.duration_s / 3600.0;
  if (r.total_output_tokens > 0) {
    r.cost_per_million_output_tokens = *r.cost_usd / static_cast<double>(r.total_output_tokens) * 1e6;
  }
  if (r.completed > 0) r.cost_per_thousand_requests = *r.cost_usd / r.completed * 1e3;
}

}  // namespace

BenchResult compute_result(const RunOutput& run, const BenchOptions& o) {
  BenchResult r;
  r.request_rate = run.rate;
  r.num_prompts = static_cast<int>(run.outcomes.size());
  r.duration_s = run.duration_s;
  r.peak_concurrency = run.peak_concurrency;
  std::vector<double> ttft, tpot, itl, e2el, ttft_s, server_prompt;
  for (const auto& q : run.outcomes) {
    if (!q.ok) {
      ++r.failed;
      continue;
    }
    ++r.completed;
    r.total_output_tokens += q.output_tokens;
    if (q.prompt_tokens >= 0) {
      r.total_input_tokens += q.prompt_tokens;
    } else {
      r.input_tokens_reported = false;
    }
    r.input_lens.push_back(q.prompt_tokens);
    r.output_lens.push_back(q.output_tokens);
    r.ttfts_s.push_back(q.ttft_s);
    if (q.got_text) {
      ttft.push_back(q.ttft_s * 1e3);
      ttft_s.push_back(q.ttft_s);
    }
    if (q.output_tokens > 1) tpot.push_back(q.tpot_s() * 1e3);
    for (double g : q.itl_s) itl.push_back(g * 1e3);
    e2el.push_back(q.e2e_s * 1e3);
    if (q.server_prompt_ms >= 0) server_prompt.push_back(q.server_prompt_ms);
  }
  const auto pcts = reported_percentiles(o.percentiles);
  r.ttft_ms = summarize(std::move(ttft), pcts);
  r.tpot_ms = summarize(std::move(tpot), pcts);
  r.itl_ms = summarize(std::move(itl), pcts);
  r.e2el_ms = summarize(std::move(e2el), pcts);
  r.server_prompt_ms = summarize(std::move(server_prompt), pcts);
  if (r.duration_s > 0) {
    r.request_throughput = r.completed / r.duration_s;
    r.output_throughput = static_cast<double>(r.total_output_tokens) / r.duration_s;
    r.total_token_throughput = static_cast<double>(r.total_input_tokens + r.total_output_tokens) / r.duration_s;
  }
  if (o.goodput.any()) {
    r.good_requests = count_good(run.outcomes, o.goodput);
    r.request_goodput = r.duration_s > 0 ? r.good_requests / r.duration_s : 0.0;
  }
  r.errors = group_errors(run.outcomes);
  if (!run.metrics_after.empty()) r.server = server_delta(run.metrics_before, run.metrics_after);
  if (!r.server.ttft_buckets.empty()) {
    r.client_ttft_p50_in_server_buckets_s = histogram_quantile(cumulative_counts(ttft_s, r.server.ttft_buckets), 0.5);
  }
  add_cost(r, o.price_per_hour);
  return r;
}

}  // namespace llms::benchserve
