// llmserve bench-decode -m MODEL [--prefill 512] [--prefill-rounds 3] [--decode 64] [--threads N] [--json]
#include <cstdio>

#include <nlohmann/json.hpp>

#include "base/log.h"
#include "cli/commands.h"
#include "cli/config_flags.h"
#include "kernels/simd_target.h"
#include "eval/decode_benchmark.h"

namespace llms::cli {

void add_bench_decode_command(CLI::App& app) {
  struct Options {
    std::string model;
    DecodeBenchOptions bench;
    bool json = false;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("bench-decode", "Prefill and decode speed against the machine's bandwidth and peak");
  cmd->add_option("-m,--model", o->model, "GGUF model")->required();
  cmd->add_option("--prefill", o->bench.prefill_tokens, "Prompt tokens")->capture_default_str();
  cmd->add_option("--prefill-rounds", o->bench.prefill_rounds,
                  "Prefill passes timed after the first (the median counts; the first is reported apart)")
      ->capture_default_str();
  cmd->add_option("--decode", o->bench.decode_tokens, "Tokens decoded one at a time")->capture_default_str();
  add_threads_flag(cmd, &o->bench.threads);
  cmd->add_option("--verify", o->bench.verify_tokens,
                  "Also time a pass verifying K proposed tokens (K + 1 positions) against a decode step");
  cmd->add_flag("--json", o->json, "Print one JSON object");
  cmd->callback([o] {
    auto model = value_or_fail(Model::load(o->model));
    const DecodeBenchResult r = value_or_fail(run_decode_benchmark(*model, o->bench));
    if (o->json) {
      nlohmann::json j = {{"type", r.type},
                          {"model_bytes", r.model_bytes},
                          {"bytes_per_token", r.bytes_per_token},
                          {"prefill_tok_s", r.prefill_tok_s},
                          {"prefill_first_tok_s", r.prefill_first_tok_s},
                          {"prefill_rounds", o->bench.prefill_rounds},
                          {"decode_tok_s", r.decode_tok_s},
                          {"bandwidth_gb_s", r.bandwidth_gb_s},
                          {"best_bandwidth_gb_s", r.best_bandwidth_gb_s},
                          {"achieved_gb_s", r.achieved_gb_s},
                          {"pct_bandwidth", r.pct_bandwidth},
                          {"peak_gops", r.peak_gops},
                          {"prefill_gops", r.prefill_gops},
                          {"pct_peak", r.pct_peak},
                          {"pct_peak_first", r.pct_peak_first},
                          {"q8_0_tile_gops", r.q8_0_tile_gops},
                          {"threads", r.threads},
                          {"verify_tokens", o->bench.verify_tokens},
                          {"verify_s", r.verify_s},
                          {"verify_decode_s", r.verify_decode_s},
                          {"verify_cost_ratio", r.verify_cost_ratio},
                          {"simd", simd_target_name()}};
      std::printf("%s\n", j.dump().c_str());
      return;
    }
    std::printf("model %s: %s, %.1f MiB, %.1f MiB read per token, %d threads, %s\n", o->model.c_str(), r.type.c_str(),
                r.model_bytes / 1048576.0, r.bytes_per_token / 1048576.0, r.threads, simd_target_name());
    std::printf("prefill %d tokens: %.1f tok/s, %.1f Gop/s = %.1f%% of the %.1f Gop/s peak (median of %d passes; "
                "the first pass: %.1f tok/s, %.1f%%)\n",
                o->bench.prefill_tokens, r.prefill_tok_s, r.prefill_gops, r.pct_peak, r.peak_gops,
                o->bench.prefill_rounds, r.prefill_first_tok_s, r.pct_peak_first);
    if (r.q8_0_tile_gops > 0) {
      std::printf("Q8_0 tile with its blocks in cache: %.1f Gop/s = %.1f%% of the peak; prefill reached %.1f%% of it\n",
                  r.q8_0_tile_gops, 100.0 * r.q8_0_tile_gops / r.peak_gops, 100.0 * r.prefill_gops / r.q8_0_tile_gops);
    }
    std::printf("decode: %.2f tok/s, %.2f GB/s = %.1f%% of the %.2f GB/s read bandwidth measured between tokens "
                "(best single pass %.2f GB/s)\n",
                r.decode_tok_s, r.achieved_gb_s, r.pct_bandwidth, r.bandwidth_gb_s, r.best_bandwidth_gb_s);
    if (o->bench.verify_tokens > 0) {
      std::printf("verify %d proposed tokens: %.2f ms per pass, %.2f ms per decode step: verify_cost_ratio %.3f\n",
                  o->bench.verify_tokens, 1e3 * r.verify_s, 1e3 * r.verify_decode_s, r.verify_cost_ratio);
    }
  });
}

}  // namespace llms::cli
