// llmserve bench-engine -m MODEL [--batching continuous,dynamic,none] [--requests N] ...
#include <algorithm>
#include <cstdio>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/log.h"
#include "benchserve/bench_options.h"
#include "cli/commands.h"
#include "cli/config_flags.h"
#include "eval/load_benchmark.h"
#include "benchprobes/machine_limits.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/load_tokenizer.h"

namespace llms::cli {
namespace {

struct Options {
  std::string model;
  std::vector<std::string> policies = {"continuous", "dynamic", "none"};
  LoadSpec load;
  std::unique_ptr<ConfigFlags> engine;  // the engine's settings, as serve spells them
  std::string output_dist = "uniform";
  bool json = false;
  bool profile = false;
  std::vector<std::string> goodput;  // as bench serve: ttft:MS tpot:MS
};

// The step's compute limit: the matrix products' multiply-adds per token against the
// peak rate of the kernels' instruction (int8 dot for quantized weights, float FMA
// otherwise), measured now on a pool of the engine's size.
struct ComputeLimit {
  double macs_per_token = 0;
  double head_macs = 0;  // the output head's share of macs_per_token
  double peak_macs_per_s = 0;
  // Q8_0 weights: the Q8_0 tile's block step with its blocks in cache
  // (PeakKind::kQ8_0Tile), the ceiling of the products; 0 for other weights.
  double q8_0_tile_macs_per_s = 0;
  double tokens_per_s() const { return peak_macs_per_s / macs_per_token; }
  // The products' multiply-adds of a run: every token the steps computed through the
  // layers, and the output head for each generated token.
  double run_macs(int64_t computed_tokens, int64_t generated_tokens) const {
    return static_cast<double>(computed_tokens) * (macs_per_token - head_macs) +
           static_cast<double>(generated_tokens) * head_macs;
  }
};

ComputeLimit measure_compute_limit(const Model& model, int threads) {
  ThreadPool pool(threads);
  const DType t = model.weights().layers.empty() ? DType::kF32 : model.weights().layers[0].wq.kernel_dtype();
  const bool is_float = t == DType::kF32 || t == DType::kF16 || t == DType::kBF16;
  ComputeLimit c;
  c.macs_per_token = static_cast<double>(model.weights().macs_per_token());
  const WeightMatrix& head = model.weights().output;
  c.head_macs = static_cast<double>(head.rows() * head.cols());
  // A float FMA lane is one multiply-add (the probe counts two operations).
  c.peak_macs_per_s = is_float ? peak_ops_per_s(pool, PeakKind::kFma, 20'000'000) / 2
                               : peak_ops_per_s(pool, PeakKind::kInt8Dot, 20'000'000);
  if (t == DType::kQ8_0) c.q8_0_tile_macs_per_s = peak_ops_per_s(pool, PeakKind::kQ8_0Tile, 20'000'000);
  return c;
}

void run(const Options& o) {
  auto model = value_or_fail(Model::load(o.model));
  if (model->config().synthetic) log_info("{}: synthetic model (random weights): speed only", o.model);
  auto tokenizer = value_or_fail(load_tokenizer(model->file()));
  ServeConfig flags;
  o.engine->apply(flags);
  LoadSpec load = o.load;
  load.output_log_uniform = o.output_dist == "log-uniform";
  const benchserve::GoodputSlo slo =
      o.goodput.empty() ? benchserve::GoodputSlo{} : value_or_fail(benchserve::parse_goodput(o.goodput));
  if (slo.e2el_ms) fail(invalid_argument("--goodput: bench-engine judges ttft and tpot only"));
  load.goodput_ttft_s = slo.ttft_ms.value_or(0) / 1000.0;
  load.goodput_tpot_s = slo.tpot_ms.value_or(0) / 1000.0;
  nlohmann::json all = nlohmann::json::array();
  if (!o.json) {
    std::printf("%-11s %9s %10s %10s %10s %10s %10s %8s\n", "policy", "requests", "tok/s", "ttft_p50", "ttft_p99",
                "e2e_p99", "itl_mean", "preempt");
  }
  for (const auto& name : o.policies) {
    EngineConfig c = flags.engine;
    c.batching.policy = value_or_fail(parse_batching_policy(name));
    c.profile = o.profile;
    ok_or_fail(c.validate());
    // With --profile, the compute limit is measured right before and after the run
    // (the larger counts: the machine is shared).
    ComputeLimit limit;
    if (o.profile) limit = measure_compute_limit(*model, c.threads);
    const LoadResult r = value_or_fail(run_load(*model, *tokenizer, c, load));
    if (o.profile) {
      const ComputeLimit after = measure_compute_limit(*model, c.threads);
      limit.peak_macs_per_s = std::max(limit.peak_macs_per_s, after.peak_macs_per_s);
      limit.q8_0_tile_macs_per_s = std::max(limit.q8_0_tile_macs_per_s, after.q8_0_tile_macs_per_s);
    }
    // With --profile: the products' rate over the whole run, prompts included, as a
    // share of the peak.
    const double run_share = o.profile && r.seconds > 0 ? limit.run_macs(r.profiled_tokens, r.generated_tokens) /
                                                              r.seconds / limit.peak_macs_per_s
                                                        : 0;
    if (o.json) {
      all.push_back({{"policy", r.policy}, {"completed", r.completed}, {"generated_tokens", r.generated_tokens},
                     {"seconds", r.seconds}, {"tokens_per_s", r.tokens_per_s}, {"ttft_p50_s", r.ttft_p50_s},
                     {"ttft_p99_s", r.ttft_p99_s}, {"e2e_p50_s", r.e2e_p50_s}, {"e2e_p99_s", r.e2e_p99_s},
                     {"itl_mean_s", r.itl_mean_s}, {"preemptions", r.preemptions}, {"failed", r.failed},
                     {"tpot_p99_s", r.tpot_p99_s}, {"request_rate", load.request_rate}});
      if (!r.first_error.empty()) all.back()["first_error"] = r.first_error;
      if (slo.any()) {
        all.back()["request_goodput"] = r.request_goodput;
        all.back()["goodput_tokens_per_s"] = r.goodput_tok_s;
      }
      if (r.slo_requests > 0) all.back()["slo_goodput_tokens_per_s"] = r.slo_goodput_tok_s;
      if (r.expert_load_imbalance > 0) all.back()["expert_load_imbalance"] = r.expert_load_imbalance;
      if (o.profile) {
        all.back()["profile"] = r.profile;
        all.back()["compute_limit_tokens_per_s"] = limit.tokens_per_s();
        all.back()["share_of_compute_limit"] = r.tokens_per_s / limit.tokens_per_s();
        all.back()["products_share_of_peak"] = run_share;
        if (limit.q8_0_tile_macs_per_s > 0) {
          all.back()["q8_0_tile_share_of_peak"] = limit.q8_0_tile_macs_per_s / limit.peak_macs_per_s;
        }
      }
    } else {
      std::printf("%-11s %9d %10.1f %9.3fs %9.3fs %9.3fs %9.4fs %8lld\n", r.policy.c_str(), r.completed,
                  r.tokens_per_s, r.ttft_p50_s, r.ttft_p99_s, r.e2e_p99_s, r.itl_mean_s,
                  static_cast<long long>(r.preemptions));
      if (r.failed > 0) std::printf("failed: %d requests (first: %s)\n", r.failed, r.first_error.c_str());
      if (slo.any()) {
        std::printf("goodput: %.1f tok/s, %.2f req/s met TTFT <= %s and TPOT <= %s\n", r.goodput_tok_s,
                    r.request_goodput, slo.ttft_ms ? fmt::format("{} ms", *slo.ttft_ms).c_str() : "any",
                    slo.tpot_ms ? fmt::format("{} ms", *slo.tpot_ms).c_str() : "any");
      }
      if (r.slo_requests > 0) {
        std::printf("SLO goodput: %.1f tok/s of requests that met the engine's targets (TTFT, ITL at p%g)\n",
                    r.slo_goodput_tok_s, 100.0 * c.slo.percentile);
      }
      if (r.expert_load_imbalance > 0) {
        std::printf("experts: load imbalance %.2f (max / mean tokens per expert, all layers)\n", r.expert_load_imbalance);
      }
      if (o.profile) {
        std::printf("compute limit: %.0f tok/s (%.1f M multiply-adds per token, peak %.1f G/s); this run: %.1f%% of it\n",
                    limit.tokens_per_s(), limit.macs_per_token * 1e-6, limit.peak_macs_per_s * 1e-9,
                    100.0 * r.tokens_per_s / limit.tokens_per_s());
        std::printf("products over the run, every computed token (%lld, prompts too): %.1f%% of the peak\n",
                    static_cast<long long>(r.profiled_tokens), 100.0 * run_share);
        if (limit.q8_0_tile_macs_per_s > 0) {
          std::printf("Q8_0 tile with its blocks in cache: %.1f G/s, %.1f%% of the peak\n",
                      limit.q8_0_tile_macs_per_s * 1e-9, 100.0 * limit.q8_0_tile_macs_per_s / limit.peak_macs_per_s);
        }
        std::printf("step profile (%s): share of step time by part\n%s\n", r.policy.c_str(), r.profile.c_str());
      }
      std::fflush(stdout);
    }
  }
  if (o.json) std::printf("%s\n", all.dump().c_str());
}

}  // namespace

void add_bench_engine_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("bench-engine", "Compare batching policies under concurrent load, in-process");
  cmd->add_option("-m,--model", o->model, "GGUF model")->required();
  cmd->add_option("--batching", o->policies, "Policies to run, in order")->delimiter(',')->capture_default_str();
  cmd->add_option("--requests", o->load.requests, "Requests in all")->capture_default_str();
  cmd->add_option("--concurrency", o->load.concurrency, "Clients at once")->capture_default_str();
  cmd->add_option("--prompt-min", o->load.prompt_min, "Shortest prompt (tokens)")->capture_default_str();
  cmd->add_option("--prompt-max", o->load.prompt_max, "Longest prompt (tokens)")->capture_default_str();
  cmd->add_option("--output-min", o->load.output_min, "Fewest generated tokens")->capture_default_str();
  cmd->add_option("--output-max", o->load.output_max, "Most generated tokens")->capture_default_str();
  cmd->add_option("--output-dist", o->output_dist, "Output lengths: uniform or log-uniform over [min, max]")
      ->check(CLI::IsMember({"uniform", "log-uniform"}))
      ->capture_default_str();
  cmd->add_option("--seed", o->load.seed, "Seed of the request mix")->capture_default_str();
  cmd->add_option("--temperature", o->load.temperature, "Every request's sampling temperature (0: greedy)")
      ->check(CLI::Range(0.0f, 100.0f))
      ->capture_default_str();
  cmd->add_option("--top-p", o->load.top_p, "Every request's top-p")->check(CLI::Range(0.0f, 1.0f))->capture_default_str();
  cmd->add_option("--top-k", o->load.top_k, "Every request's top-k (0: off)")->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--min-p", o->load.min_p, "Every request's min-p")->check(CLI::Range(0.0f, 1.0f))->capture_default_str();
  cmd->add_option("--warmup", o->load.warmup,
                  "Rounds of the same load (other prompts) before the timed one, on the same engine (their KV "
                  "blocks stay cached: the timed round still writes new ones first; see --kv-commit-at-start)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--request-rate", o->load.request_rate,
                  "Open loop: requests per second of a Poisson arrival process (0: closed loop, --concurrency "
                  "clients)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--goodput", o->goodput, "Count requests within these bounds, as bench serve: ttft:MS tpot:MS")
      ->expected(1, 2);
  o->engine = std::make_unique<ConfigFlags>(
      cmd, std::vector<std::string>{"max_batch_tokens", "max_running", "max_batch_size", "max_delay_ms", "threads",
                                    "kv_k_type", "kv_v_type", "kv_block_size", "kv_commit_at_start", "warmup_pass",
                                    "autotune", "autotune_min_batch_tokens", "slo_ttft_ms", "slo_itl_ms",
                                    "slo_percentile", "slo_shed"});
  cmd->add_flag("--json", o->json, "Print a JSON array");
  cmd->add_flag("--profile", o->profile,
                "Break each step's time into parts (products, attention, element-wise ops, logits, sampling, "
                "detokenization, scheduling, the pool's wait), by step size");
  cmd->callback([o] { run(*o); });
}

}  // namespace llms::cli
