#include "server/stats_json.h"

#include <algorithm>
#include <cmath>

namespace llms {
namespace {

template <typename T, typename F>
Json column(const std::vector<T>& rows, F field) {
  Json out = Json::array();
  for (const T& r : rows) out.push_back(field(r));
  return out;
}

Json percentiles(const std::vector<RequestSample>& rs, double RequestSample::*field, bool skip_zero) {
  std::vector<double> v;
  for (const RequestSample& r : rs) {
    if (!skip_zero || r.*field > 0) v.push_back(r.*field);
  }
  return Json{{"p50", window_percentile(v, 50)}, {"p90", window_percentile(v, 90)}, {"p99", window_percentile(v, 99)},
              {"count", v.size()}};
}

}  // namespace

double window_percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double rank = std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (values[hi] - values[lo]) * (rank - static_cast<double>(lo));
}

Json step_columns(const std::vector<StepSample>& s) {
  using S = StepSample;
  return Json{
      {"t_ms", column(s, [](const S& r) { return r.unix_ms; })},
      {"duration_s", column(s, [](const S& r) { return r.duration_s; })},
      {"batch_tokens", column(s, [](const S& r) { return r.batch_tokens; })},
      {"prefill_tokens", column(s, [](const S& r) { return r.prefill_tokens; })},
      {"token_budget", column(s, [](const S& r) { return r.token_budget; })},
      {"batch_size", column(s, [](const S& r) { return r.batch_size; })},
      {"running", column(s, [](const S& r) { return r.running; })},
      {"waiting", column(s, [](const S& r) { return r.waiting; })},
      {"kv_blocks_used", column(s, [](const S& r) { return r.kv_blocks_used; })},
      {"kv_blocks_total", column(s, [](const S& r) { return r.kv_blocks_total; })},
      {"rss_bytes", column(s, [](const S& r) { return r.rss_bytes; })},
  };
}

Json request_columns(const std::vector<RequestSample>& s) {
  using R = RequestSample;
  return Json{
      {"t_ms", column(s, [](const R& r) { return r.unix_ms; })},
      {"queue_s", column(s, [](const R& r) { return r.queue_s; })},
      {"ttft_s", column(s, [](const R& r) { return r.ttft_s; })},
      {"itl_s", column(s, [](const R& r) { return r.itl_s; })},
      {"e2e_s", column(s, [](const R& r) { return r.e2e_s; })},
      {"compute_s", column(s, [](const R& r) { return r.compute_s; })},
      {"prompt_tokens", column(s, [](const R& r) { return r.prompt_tokens; })},
      {"cached_prompt_tokens", column(s, [](const R& r) { return r.cached_prompt_tokens; })},
      {"completion_tokens", column(s, [](const R& r) { return r.completion_tokens; })},
      {"priority", column(s, [](const R& r) { return r.priority; })},
      {"finish_reason", column(s, [](const R& r) { return finish_reason_name(r.reason); })},
  };
}

Json window_summary(const StatsWindowSnapshot& w) {
  int64_t decode_tokens = 0;
  for (const StepSample& s : w.steps) decode_tokens += s.batch_tokens - s.prefill_tokens;
  double tokens_per_s = 0;
  if (w.steps.size() >= 2) {
    const double span_s = static_cast<double>(w.steps.back().unix_ms - w.steps.front().unix_ms) * 1e-3;
    if (span_s > 0) tokens_per_s = static_cast<double>(decode_tokens) / span_s;
  }
  Json reasons = Json::object();
  for (const RequestSample& r : w.requests) {
    const char* name = finish_reason_name(r.reason);
    reasons[name] = reasons.value(name, 0) + 1;
  }
  return Json{{"ttft_s", percentiles(w.requests, &RequestSample::ttft_s, true)},
              {"itl_s", percentiles(w.requests, &RequestSample::itl_s, true)},
              {"e2e_s", percentiles(w.requests, &RequestSample::e2e_s, false)},
              {"generation_tokens_per_s", tokens_per_s},
              {"finish_reasons", reasons}};
}

Json versions_json(const VersionSetState& state, const std::vector<VersionPtr>& loaded, const FeedbackBook& feedback) {
  Json out = Json::array();
  for (const VersionPtr& v : loaded) {
    std::string role = "loaded";
    double share = 0;
    if (v->name() == state.candidate) {
      role = "candidate";
      share = state.canary_share;
    } else if (v->name() == state.current) {
      role = "current";
      share = state.candidate.empty() ? 1.0 : 1.0 - state.canary_share;
    } else if (v->name() == state.previous) {
      role = "previous";
    }
    const EngineSnapshot s = v->engine().snapshot();
    const VersionFeedback f = feedback.stats(v->name());
    out.push_back(Json{{"name", v->name()},
                       {"role", role},
                       {"share", share},
                       {"completed", s.completed},
                       {"failed", s.failed},
                       {"abnormal", s.abnormal},
                       {"quality_kl", v->quality_kl().value()},
                       {"quality_perplexity", v->quality_perplexity().value()},
                       {"ratings", f.count()},
                       {"rating_mean", f.mean()},
                       {"negative_share", f.negative_share()}});
  }
  return out;
}

Json engine_json(const EngineSnapshot& s, int64_t rss_bytes) {
  return Json{{"running", s.running},
              {"waiting", s.waiting},
              {"kv_blocks_total", s.kv_blocks_total},
              {"kv_blocks_used", s.kv_blocks_used},
              {"kv_blocks_cached", s.kv_blocks_cached},
              {"kv_usage", s.admission.kv_usage},
              {"rss_bytes", rss_bytes},
              {"rss_usage", s.admission.rss_usage},
              {"overloaded", s.admission.overloaded},
              {"steps", s.steps},
              {"preemptions", s.preemptions}};
}

}  // namespace llms
