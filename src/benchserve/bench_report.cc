#include "benchserve/bench_report.h"

#include <fmt/format.h>

#include <cmath>

namespace llms::benchserve {

namespace {

using Json = nlohmann::json;

Json opt(const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); }

void add_distribution(Json& j, const std::string& name, const Distribution& d) {
  j["mean_" + name + "_ms"] = d.mean;
  j["median_" + name + "_ms"] = d.median;
  j["std_" + name + "_ms"] = d.std;
  for (const auto& [p, v] : d.percentiles) j[percentile_key(p) + "_" + name + "_ms"] = v;
}

Json server_json(const ServerDelta& s) {
  if (s.flavor.empty()) return nullptr;
  return {{"flavor", s.flavor},
          {"requests_finished", opt(s.requests_finished)},
          {"prompt_tokens", opt(s.prompt_tokens)},
          {"generation_tokens", opt(s.generation_tokens)},
          {"prefix_cache_hit_rate", opt(s.prefix_cache_hit_rate)},
          {"preemptions", opt(s.preemptions)},
          {"queue_time_mean_ms", s.queue_time_mean_s ? Json(*s.queue_time_mean_s * 1e3) : Json(nullptr)},
          {"ttft_mean_ms", s.ttft_mean_s ? Json(*s.ttft_mean_s * 1e3) : Json(nullptr)},
          {"ttft_p50_ms", s.ttft_p50_s ? Json(*s.ttft_p50_s * 1e3) : Json(nullptr)},
          {"ttft_p99_ms", s.ttft_p99_s ? Json(*s.ttft_p99_s * 1e3) : Json(nullptr)}};
}

Json options_json(const BenchOptions& o, const RunContext& ctx) {
  return {{"date", ctx.date},
          {"backend", "openai"},
          {"base_url", o.base_url},
          {"endpoint", o.endpoint},
          {"model_id", ctx.model},
          {"dataset", o.dataset},
          {"num_prompts", o.num_prompts},
          {"burstiness", o.burstiness},
          {"max_concurrency", o.max_concurrency > 0 ? Json(o.max_concurrency) : Json(nullptr)},
          {"seed", o.seed},
          {"warmup", o.warmup},
          {"ignore_eos", o.ignore_eos},
          {"goodput_slo_ms",
           {{"ttft", opt(o.goodput.ttft_ms)}, {"tpot", opt(o.goodput.tpot_ms)}, {"e2el", opt(o.goodput.e2el_ms)}}},
          {"price_per_hour", o.price_per_hour > 0 ? Json(o.price_per_hour) : Json(nullptr)}};
}

std::string ms_or_dash(const std::optional<double>& s) { return s ? fmt::format("{:.2f}", *s * 1e3) : "-"; }

}  // namespace

std::string percentile_key(double p) {
  return std::floor(p) == p ? fmt::format("p{}", static_cast<int>(p)) : fmt::format("p{:g}", p);
}

Json result_json(const BenchResult& r, const BenchOptions& o, const RunContext& ctx) {
  Json j = options_json(o, ctx);
  j["request_rate"] = std::isinf(r.request_rate) ? Json("inf") : Json(r.request_rate);
  j["duration"] = r.duration_s;
  j["completed"] = r.completed;
  j["failed"] = r.failed;
  j["total_input_tokens"] = r.input_tokens_reported ? Json(r.total_input_tokens) : Json(nullptr);
  j["total_output_tokens"] = r.total_output_tokens;
  j["request_throughput"] = r.request_throughput;
  j["request_goodput"] = opt(r.request_goodput);
  j["good_requests"] = o.goodput.any() ? Json(r.good_requests) : Json(nullptr);
  j["output_throughput"] = r.output_throughput;
  j["total_token_throughput"] = r.total_token_throughput;
  j["peak_concurrency"] = r.peak_concurrency;
  add_distribution(j, "ttft", r.ttft_ms);
  add_distribution(j, "tpot", r.tpot_ms);
  add_distribution(j, "itl", r.itl_ms);
  add_distribution(j, "e2el", r.e2el_ms);
  j["input_lens"] = r.input_lens;
  j["output_lens"] = r.output_lens;
  j["ttfts"] = r.ttfts_s;
  Json errors = Json::array();
  for (const auto& [msg, n] : r.errors) errors.push_back({{"error", msg}, {"count", n}});
  j["errors"] = errors;
  j["server_metrics"] = server_json(r.server);
  if (r.server_prompt_ms.count > 0) {
    j["mean_server_prompt_ms"] = r.server_prompt_ms.mean;
    j["median_server_prompt_ms"] = r.server_prompt_ms.median;
  }
  if (r.client_ttft_p50_in_server_buckets_s && j["server_metrics"].is_object()) {
    j["server_metrics"]["client_ttft_p50_in_server_buckets_ms"] = *r.client_ttft_p50_in_server_buckets_s * 1e3;
  }
  j["cost"] = o.price_per_hour > 0 ? Json{{"usd", opt(r.cost_usd)},
                                          {"per_million_output_tokens", opt(r.cost_per_million_output_tokens)},
                                          {"per_thousand_requests", opt(r.cost_per_thousand_requests)}}
                                   : Json(nullptr);
  return j;
}

Json sweep_json(const std::vector<BenchResult>& runs, const BenchOptions& o, const RunContext& ctx) {
  Json j = options_json(o, ctx);
  j["runs"] = Json::array();
  for (const auto& r : runs) j["runs"].push_back(result_json(r, o, ctx));
  return j;
}

std::string result_text(const BenchResult& r, const BenchOptions& o) {
  std::string s = fmt::format("============ Serving benchmark: {} req/s ============\n", rate_label(r.request_rate));
  const auto line = [&](const std::string& k, const std::string& v) { s += fmt::format("{:<40} {}\n", k, v); };
  line("Successful requests:", fmt::format("{}", r.completed));
  line("Failed requests:", fmt::format("{}", r.failed));
  line("Peak concurrent requests:", fmt::format("{}", r.peak_concurrency));
  line("Benchmark duration (s):", fmt::format("{:.2f}", r.duration_s));
  line("Total input tokens:", r.input_tokens_reported ? fmt::format("{}", r.total_input_tokens) : "not reported");
  line("Total generated tokens:", fmt::format("{}", r.total_output_tokens));
  line("Request throughput (req/s):", fmt::format("{:.2f}", r.request_throughput));
  if (r.request_goodput) line("Request goodput (req/s):", fmt::format("{:.2f}", *r.request_goodput));
  line("Output token throughput (tok/s):", fmt::format("{:.2f}", r.output_throughput));
  line("Total token throughput (tok/s):", fmt::format("{:.2f}", r.total_token_throughput));
  const auto dist = [&](const char* title, const char* name, const Distribution& d) {
    s += fmt::format("{:-^52}\n", std::string(" ") + title + " ");
    line(fmt::format("Mean {} (ms):", name), fmt::format("{:.2f}", d.mean));
    line(fmt::format("Median {} (ms):", name), fmt::format("{:.2f}", d.median));
    for (double p : o.percentiles) line(fmt::format("P{:g} {} (ms):", p, name), fmt::format("{:.2f}", d.at(p)));
  };
  dist("Time to First Token", "TTFT", r.ttft_ms);
  dist("Time per Output Token (excl. 1st token)", "TPOT", r.tpot_ms);
  dist("Inter-token Latency", "ITL", r.itl_ms);
  dist("End-to-end Latency", "E2EL", r.e2el_ms);
  if (!r.server.flavor.empty()) {
    const ServerDelta& v = r.server;
    s += fmt::format("{:-^52}\n", " Server /metrics (" + v.flavor + ") ");
    if (v.generation_tokens) line("Generated tokens (server):", fmt::format("{:.0f}", *v.generation_tokens));
    if (v.prefix_cache_hit_rate) line("Prefix cache hit rate:", fmt::format("{:.1f}%", *v.prefix_cache_hit_rate * 100));
    if (v.preemptions) line("Preemptions:", fmt::format("{:.0f}", *v.preemptions));
    if (v.queue_time_mean_s) line("Mean queue time (ms):", ms_or_dash(v.queue_time_mean_s));
    if (v.ttft_mean_s) line("Mean TTFT, server (ms):", ms_or_dash(v.ttft_mean_s));
    if (v.ttft_p50_s) line("P50 TTFT, server histogram (ms):", ms_or_dash(v.ttft_p50_s));
    if (r.client_ttft_p50_in_server_buckets_s) {
      line("P50 TTFT, client in those buckets (ms):", ms_or_dash(r.client_ttft_p50_in_server_buckets_s));
    }
  }
  if (r.server_prompt_ms.count > 0) {
    s += fmt::format("{:-^52}\n", " Server's per-request timings ");
    line("Mean prefill, server (ms):", fmt::format("{:.2f}", r.server_prompt_ms.mean));
    line("Median prefill, server (ms):", fmt::format("{:.2f}", r.server_prompt_ms.median));
  }
  if (r.cost_usd) {
    s += fmt::format("{:-^52}\n", fmt::format(" Cost at ${:g}/hour ", o.price_per_hour));
    line("Cost of the run ($):", fmt::format("{:.6f}", *r.cost_usd));
    if (r.cost_per_million_output_tokens)
      line("Per million output tokens ($):", fmt::format("{:.4f}", *r.cost_per_million_output_tokens));
    if (r.cost_per_thousand_requests)
      line("Per thousand requests ($):", fmt::format("{:.4f}", *r.cost_per_thousand_requests));
  }
  for (const auto& [msg, n] : r.errors) s += fmt::format("error ({}x): {}\n", n, msg);
  s += std::string(52, '=') + "\n";
  return s;
}

std::string markdown_summary(const std::vector<BenchResult>& runs, const BenchOptions& o, const RunContext& ctx) {
  std::string s = fmt::format("# Serving benchmark\n\n- date: {}\n- server: {} ({}), model `{}`\n", ctx.date,
                              o.base_url, o.endpoint, ctx.model);
  s += fmt::format("- dataset: {}, {} prompts, input {} words, output {} tokens, range ratio {:g}{}\n", o.dataset,
                   o.num_prompts, o.input_len, o.output_len, o.range_ratio, o.ignore_eos ? ", ignore_eos" : "");
  s += fmt::format("- burstiness {:g}, max concurrency {}, seed {}\n\n", o.burstiness,
                   o.max_concurrency > 0 ? std::to_string(o.max_concurrency) : "unlimited", o.seed);
  s += "| rate (req/s) | completed | failed | req/s | out tok/s | goodput (req/s) | TTFT p50 (ms) | TTFT p99 (ms) "
       "| TPOT p50 (ms) | ITL p50 (ms) | E2E p50 (ms) | E2E p99 (ms) | peak conc. |\n";
  s += "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& r : runs) {
    s += fmt::format("| {} | {} | {} | {:.2f} | {:.1f} | {} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {} |\n",
                     rate_label(r.request_rate), r.completed, r.failed, r.request_throughput, r.output_throughput,
                     r.request_goodput ? fmt::format("{:.2f}", *r.request_goodput) : "-", r.ttft_ms.median,
                     r.ttft_ms.at(99), r.tpot_ms.median, r.itl_ms.median, r.e2el_ms.median, r.e2el_ms.at(99),
                     r.peak_concurrency);
  }
  if (o.price_per_hour > 0) {
    s += fmt::format("\nCost at ${:g}/hour:\n\n| rate | $ per million output tokens | $ per thousand requests |\n|---|---|---|\n",
                     o.price_per_hour);
    for (const auto& r : runs) {
      s += fmt::format("| {} | {} | {} |\n", rate_label(r.request_rate),
                       r.cost_per_million_output_tokens ? fmt::format("{:.4f}", *r.cost_per_million_output_tokens) : "-",
                       r.cost_per_thousand_requests ? fmt::format("{:.4f}", *r.cost_per_thousand_requests) : "-");
    }
  }
  return s;
}

}  // namespace llms::benchserve
