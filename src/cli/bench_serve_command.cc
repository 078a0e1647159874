// llmserve bench serve --base-url URL [--endpoint ...] [--request-rate R | --sweep-rates ...] ...
// The `bench` group holds client-side benchmarks of running servers; `serve` is the
// open-loop load client of any OpenAI-compatible server (src/benchserve/).
#include <cstdio>

#include "benchserve/bench_serve.h"
#include "cli/commands.h"

namespace llms::cli {
namespace {

struct Flags {
  benchserve::BenchOptions o;
  std::string request_rate = "inf", percentiles = "50,90,99", sweep_rates;
  std::vector<std::string> goodput;
};

benchserve::BenchOptions resolve(const Flags& f, const CLI::App& cmd) {
  benchserve::BenchOptions o = f.o;
  o.request_rate = value_or_fail(benchserve::parse_rate(f.request_rate));
  o.percentiles = value_or_fail(benchserve::parse_percentiles(f.percentiles));
  if (!f.sweep_rates.empty()) o.sweep_rates = value_or_fail(benchserve::parse_rates(f.sweep_rates));
  if (!f.goodput.empty()) o.goodput = value_or_fail(benchserve::parse_goodput(f.goodput));
  o.output_len_set = cmd.count("--output-len") > 0;
  if (!o.sweep_rates.empty() && cmd.count("--request-rate") > 0) {
    fail(invalid_argument("--request-rate and --sweep-rates exclude each other"));
  }
  ok_or_fail(benchserve::validate_options(o));
  return o;
}

void add_serve(CLI::App& bench) {
  auto f = std::make_shared<Flags>();
  benchserve::BenchOptions& o = f->o;
  auto* cmd = bench.add_subcommand("serve", "Open-loop load against an OpenAI-compatible server: TTFT, TPOT, ITL, "
                                            "E2E percentiles, throughput, goodput, cost");
  cmd->add_option("--base-url", o.base_url, "Server, http://HOST:PORT")->capture_default_str();
  cmd->add_option("--endpoint", o.endpoint, "/v1/completions or /v1/chat/completions")->capture_default_str();
  cmd->add_option("--model", o.model, "Model name sent (default: the first of /v1/models)");
  cmd->add_option("--api-key", o.api_key, "Bearer token, when the server wants one");
  cmd->add_option("--num-prompts", o.num_prompts, "Requests per run")->capture_default_str();
  cmd->add_option("--request-rate", f->request_rate, "Requests per second, or inf (all at once)")->capture_default_str();
  cmd->add_option("--burstiness", o.burstiness, "Gamma shape of inter-arrival times (1: Poisson; < 1: burstier)")
      ->capture_default_str();
  cmd->add_option("--max-concurrency", o.max_concurrency, "Most requests in flight (0: no limit)")->capture_default_str();
  cmd->add_option("--seed", o.seed, "Seed of the prompts and the arrival times")->capture_default_str();
  cmd->add_option("--warmup", o.warmup, "Requests sent and not measured before the run")->capture_default_str();
  cmd->add_option("--dataset", o.dataset, "random, shared-prefix, sonnet, or a JSONL file (ShareGPT-like)")
      ->capture_default_str();
  cmd->add_option("--input-len", o.input_len, "Prompt length in words (random, shared-prefix, sonnet)")
      ->capture_default_str();
  cmd->add_option("--output-len", o.output_len, "max_tokens per request (a JSONL file's own lengths unless set)")
      ->capture_default_str();
  cmd->add_option("--range-ratio", o.range_ratio, "Lengths uniform in [len*(1-r), len*(1+r)]")->capture_default_str();
  cmd->add_option("--prefix-len", o.prefix_len, "shared-prefix: words of each shared prefix")->capture_default_str();
  cmd->add_option("--num-prefixes", o.num_prefixes, "shared-prefix: distinct prefixes")->capture_default_str();
  cmd->add_flag("--ignore-eos", o.ignore_eos, "Ask the server to generate exactly max_tokens");
  cmd->add_option("--temperature", o.temperature, "Sampling temperature")->capture_default_str();
  cmd->add_option("--goodput", f->goodput, "SLOs in ms: ttft:MS tpot:MS e2el:MS (any subset)")->expected(1, 3);
  cmd->add_option("--percentiles", f->percentiles, "Percentiles reported, comma-separated")->capture_default_str();
  cmd->add_option("--sweep-rates", f->sweep_rates, "Run at each rate (e.g. 1,2,4,8,inf) and plot an SVG");
  cmd->add_option("--price-per-hour", o.price_per_hour, "Machine price in $/hour: report cost per 1M output tokens "
                                                        "and per 1k requests");
  cmd->add_option("--timeout", o.timeout_s, "Per-request timeout, seconds")->capture_default_str();
  cmd->add_option("--save-result", o.save_result, "Write the result as JSON (vLLM's keys) and FILE.md beside it");
  cmd->add_option("--plot", o.plot, "Sweep SVG (default: beside --save-result)");
  cmd->callback([f, cmd] {
    const benchserve::BenchOptions opts = resolve(*f, *cmd);
    const auto out = value_or_fail(benchserve::bench_serve(opts, stdout));
    for (const auto& path : out.files_written) std::printf("wrote %s\n", path.c_str());
  });
}

}  // namespace

void add_bench_commands(CLI::App& app) {
  auto* bench = app.add_subcommand("bench", "Benchmarks of running servers (bench serve)");
  bench->require_subcommand(1);
  add_serve(*bench);
}

}  // namespace llms::cli
