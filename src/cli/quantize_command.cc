// llmserve quantize IN.gguf|DIR OUT.gguf --type T [--keep TYPE:PATTERN[,PATTERN]]... [--policy depth]
//                  [--lora ADAPTER [--lora-scale S]]
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <optional>

#include <nlohmann/json.hpp>

#include "base/mapped_file.h"
#include "base/thread_pool.h"
#include "cli/commands.h"
#include "cli/config_flags.h"
#include "eval/perplexity.h"
#include "eval/quant_planner.h"
#include "io/gguf_file.h"
#include "io/hf_model.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"
#include "tools/lora_merge.h"
#include "tools/quantizer.h"
#include "tokenizer/load_tokenizer.h"

namespace llms::cli {
namespace {

struct Options {
  std::string in, out, type;
  std::vector<std::string> keep;
  std::string vocab_from;
  std::string policy = "auto";
  double tolerance = 0.05;
  bool no_protect = false;
  int threads = 0;
  bool json = false;
  std::string imatrix, calib, eval;
  double target_bpw = 0, max_kl = 0;
  uint64_t target_size = 0;
  int ctx = 128;
  std::string lora;
  float lora_scale = 1.0f;
};

std::vector<int32_t> tokens_of(const std::string& model_path, const std::string& text_path) {
  auto tokenizer = value_or_fail(load_tokenizer(model_path));
  return tokenizer->encode(value_or_fail(read_file(text_path)));
}

// The texts a plan is measured on.
PlanRequest texts_of(const Options& o) {
  if (o.calib.empty()) fail(invalid_argument("--target-bpw, --target-size, --max-kl and --policy measured need --calib TEXT"));
  PlanRequest r;
  r.calib = tokens_of(o.in, o.calib);
  if (!o.eval.empty()) r.eval = tokens_of(o.in, o.eval);
  r.ctx = o.ctx;
  return r;
}

void print_plan(const Options& o, const PlanResult& p, nlohmann::json extra) {
  const uint64_t file_bytes = std::filesystem::file_size(o.out);
  const double bpw = 8.0 * static_cast<double>(p.bytes) / static_cast<double>(p.elements);
  if (o.json) {
    nlohmann::json j = {{"bytes", p.bytes}, {"file_bytes", file_bytes}, {"bpw", bpw}, {"predicted_kl", p.predicted_kl},
                        {"measured_kl", p.measured_kl}, {"top1_agreement", p.top1_agreement},
                        {"perplexity", p.perplexity}, {"base_perplexity", p.base_perplexity}, {"met", p.met},
                        {"sensitivity_runs", p.sensitivity_runs}, {"attempts", p.attempts}, {"tensors", nlohmann::json::array()}};
    for (const auto& t : p.tensors) {
      j["tensors"].push_back({{"name", t.name}, {"type", dtype_name(t.type)}, {"bytes", t.bytes}, {"predicted_kl", t.predicted_kl}});
    }
    j.update(extra);
    std::printf("%s\n", j.dump(1).c_str());
    return;
  }
  std::printf("plan (%d sensitivity runs on the calibration text):\n", p.sensitivity_runs);
  for (const auto& t : p.tensors) {
    std::printf("  %-32s %-7s %9llu bytes  cost %.6f\n", t.name.c_str(), std::string(dtype_name(t.type)).c_str(),
                static_cast<unsigned long long>(t.bytes), t.predicted_kl);
  }
  std::printf("wrote %s: %llu bytes (%llu of tensors, %.3f bits per weight)\n", o.out.c_str(),
              static_cast<unsigned long long>(file_bytes), static_cast<unsigned long long>(p.bytes), bpw);
  std::printf("KL divergence: predicted %.6f, measured %.6f nats/token on the %s text; top-1 agreement %.2f%%; "
              "perplexity %.4f (source %.4f)\n",
              p.predicted_kl, p.measured_kl, o.eval.empty() ? "calibration" : "evaluation", 100 * p.top1_agreement,
              p.perplexity, p.base_perplexity);
  if (o.max_kl > 0) {
    std::printf(p.met ? "--max-kl %.6f met after %d plan(s)\n" : "--max-kl %.6f NOT met after %d plan(s): no plan predicted within it measures within it\n",
                o.max_kl, p.attempts);
  }
}

// --target-bpw / --target-size / --max-kl: the planner chooses every matrix's type.
void run_planned(const Options& o, QuantizeOptions q) {
  if ((o.target_bpw > 0) + (o.target_size > 0) + (o.max_kl > 0) != 1) {
    fail(invalid_argument("give one of --target-bpw, --target-size and --max-kl"));
  }
  PlanRequest r = texts_of(o);
  r.max_kl = o.max_kl;
  if (!o.type.empty()) r.where_fits = q.type;
  {
    const GgufFile in = value_or_fail(open_model_file(o.in));
    uint64_t elements = 0, data = 0;
    for (const auto& t : in.tensors()) elements += static_cast<uint64_t>(t.num_elements()), data += t.num_bytes;
    if (o.target_bpw > 0) r.target_bytes = static_cast<uint64_t>(o.target_bpw * static_cast<double>(elements) / 8.0);
    // A file size: less the source's header and metadata (plus 1 KiB for the keys
    // quantize adds), which the tensors do not change.
    const uint64_t file = in.file_size();
    if (o.target_size > 0) {
      const uint64_t overhead = file - data + 1024;
      if (o.target_size <= overhead) fail(invalid_argument(fmt::format("--target-size is below the file's {} bytes of metadata", overhead)));
      r.target_bytes = o.target_size - overhead;
    }
  }
  print_plan(o, value_or_fail(plan_and_quantize(o.in, o.out, q, r)), nlohmann::json::object());
}

// --policy measured: the protection the rule gives (output head and token embedding
// one type up) costs some bytes; the planner spends the same bytes where the
// calibration text says they lower the KL divergence most. Every matrix that fits
// --type takes it or a larger type; the rule's file is measured beside the plan's.
void run_measured(const Options& o, const QuantizeOptions& q) {
  PlanRequest r = texts_of(o);
  r.floor = q.type;
  const std::string rule_path = o.out + ".rule.tmp.gguf";
  QuantizeOptions rule = q;
  rule.policy = QuantPolicy::kDefault;
  rule.protect_embeddings = true;
  const QuantizeReport by_rule = value_or_fail(quantize_model(o.in, rule_path, rule));
  r.target_bytes = by_rule.bytes_out;
  auto plan = plan_and_quantize(o.in, o.out, q, r);
  if (!plan.ok()) std::filesystem::remove(rule_path);
  const PlanResult p = value_or_fail(std::move(plan));
  PerplexityResult rule_quality;
  {
    auto rule_model = Model::load(rule_path);
    auto source = Model::load(o.in);
    std::filesystem::remove(rule_path);
    const std::unique_ptr<Model> rm = value_or_fail(std::move(rule_model)), sm = value_or_fail(std::move(source));
    ThreadPool pool(q.threads);
    rule_quality = value_or_fail(evaluate_perplexity(r.eval.empty() ? r.calib : r.eval, {rm.get(), DType::kF32, DType::kF32},
                                                     {sm.get(), DType::kF32, DType::kF32}, {r.ctx, 0}, pool));
  }
  print_plan(o, p,
             {{"rule", {{"bytes", by_rule.bytes_out}, {"measured_kl", rule_quality.kl_divergence},
                        {"top1_agreement", rule_quality.top1_agreement}, {"perplexity", rule_quality.perplexity}}}});
  if (!o.json) {
    std::printf("the rule's file (--policy rule) at the same size: %llu bytes of tensors, KL %.6f, top-1 agreement %.2f%%, "
                "perplexity %.4f\n",
                static_cast<unsigned long long>(by_rule.bytes_out), rule_quality.kl_divergence,
                100 * rule_quality.top1_agreement, rule_quality.perplexity);
  }
}

void run(const Options& o) {
  QuantizeOptions q;
  std::optional<ImportanceTable> importance;
  if (!o.imatrix.empty()) {
    importance = value_or_fail(read_importance(o.imatrix));
    q.importance = &*importance;
  }
  q.threads = o.threads;
  q.vocab_from = o.vocab_from;
  std::optional<LoraMerge> lora;
  if (!o.lora.empty()) {
    if (o.target_bpw > 0 || o.target_size > 0 || o.max_kl > 0 || o.policy == "measured" ||
        (o.policy == "auto" && !o.calib.empty())) {
      fail(invalid_argument("--lora merges with --type and --policy rule or depth; the planner measures the base "
                            "without the adapter"));
    }
    const GgufFile base = value_or_fail(open_model_file(o.in));
    lora = value_or_fail(LoraMerge::prepare(o.lora, base, o.lora_scale));
    q.lora = &*lora;
  } else if (o.lora_scale != 1.0f) {
    fail(invalid_argument("--lora-scale needs --lora"));
  }
  if (o.target_bpw > 0 || o.target_size > 0 || o.max_kl > 0) {
    if (!o.type.empty()) q.type = dtype_or_fail(o.type, "--type");
    run_planned(o, q);
    return;
  }
  if (o.type.empty()) fail(invalid_argument("--type is required (or a planner target: --target-bpw, --target-size, --max-kl)"));
  q.type = dtype_or_fail(o.type, "--type");
  for (const auto& k : o.keep) q.keep.push_back(value_or_fail(parse_keep_rule(k)));
  std::string policy = o.policy == "default" ? "rule" : o.policy;  // "default": the rule's earlier name
  if (policy == "auto") policy = o.calib.empty() ? "rule" : "measured";
  if (policy != "rule" && policy != "depth" && policy != "measured") {
    fail(invalid_argument("--policy must be auto, rule, measured or depth"));
  }
  if (policy == "measured") {
    if (!o.keep.empty()) fail(invalid_argument("--keep and --policy measured both choose types: give one of them"));
    if (o.no_protect) fail(invalid_argument("--no-protect and --policy measured both choose the protection: give one of them"));
    run_measured(o, q);
    return;
  }
  q.policy = policy == "depth" ? QuantPolicy::kDepth : QuantPolicy::kDefault;
  q.tolerance = o.tolerance;
  q.protect_embeddings = !o.no_protect;
  const QuantizeReport r = value_or_fail(quantize_model(o.in, o.out, q));
  if (o.json) {
    nlohmann::json j = {{"bytes_in", r.bytes_in}, {"bytes_out", r.bytes_out}, {"tensors", nlohmann::json::array()}};
    for (const auto& d : r.tensors) {
      j["tensors"].push_back({{"name", d.name}, {"from", dtype_name(d.from)}, {"to", dtype_name(d.to)},
                              {"relative_rms", d.relative_rms}, {"bytes", d.bytes}, {"reason", d.reason}});
    }
    std::printf("%s\n", j.dump(1).c_str());
    return;
  }
  for (const auto& d : r.tensors) {
    if (d.reason.empty() || d.to == DType::kF32) continue;
    std::printf("  %-32s %-5s %s\n", d.name.c_str(), std::string(dtype_name(d.to)).c_str(), d.reason.c_str());
  }
  std::printf("wrote %s: %.2f MiB -> %.2f MiB (%.1f%%)\n", o.out.c_str(), r.bytes_in / 1048576.0,
              r.bytes_out / 1048576.0, 100.0 * static_cast<double>(r.bytes_out) / static_cast<double>(r.bytes_in));
}

}  // namespace

void add_quantize_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("quantize", "Rewrite a GGUF model's weights in a smaller type");
  cmd->add_option("in", o->in, "Input GGUF, or a Hugging Face model directory")->required();
  cmd->add_option("out", o->out, "Output GGUF")->required();
  cmd->add_option("--type", o->type, "f32, f16, bf16, q8_0, q6_k, q5_k, q5_0, q4_k, q4_0, iq4_nl, iq4_xs, q3_k");
  cmd->add_option("--imatrix", o->imatrix, "Importance file from `llmserve imatrix` or llama-imatrix (GGUF or .dat): importance-weighted rounding");
  cmd->add_option("--target-bpw", o->target_bpw, "Plan every matrix's type for this many bits per weight (needs --calib)");
  cmd->add_option("--target-size", o->target_size, "Plan every matrix's type for a file of this many bytes (needs --calib)");
  cmd->add_option("--max-kl", o->max_kl, "Plan the smallest file whose KL divergence (nats/token) stays within this (needs --calib)");
  cmd->add_option("--calib", o->calib, "Text the planner measures each tensor's sensitivity on");
  cmd->add_option("--eval", o->eval, "Held-out text the planned file is measured on (default: --calib)");
  cmd->add_option("--ctx", o->ctx, "Window length in tokens for the planner's measurements")->capture_default_str();
  cmd->add_option("--keep", o->keep, "TYPE:PATTERN[,PATTERN]: pin tensors whose name contains a pattern (repeatable)");
  cmd->add_option("--policy", o->policy,
                  "auto (measured with --calib, else rule), rule (output head and token embedding one type up), "
                  "measured (the planner spends the rule's bytes where --calib says they matter), or depth "
                  "(promote tensors above a depth-scaled error tolerance)")
      ->capture_default_str();
  cmd->add_option("--tolerance", o->tolerance, "Base relative RMS error for --policy depth")->capture_default_str();
  cmd->add_flag("--no-protect", o->no_protect, "Quantize the output head and token embedding like the rest");
  add_threads_flag(cmd, &o->threads);
  cmd->add_flag("--json", o->json, "Print every decision as JSON");
  cmd->add_option("--vocab-from", o->vocab_from,
                  "A directory input: the vocabulary of this GGUF file instead of the directory's tokenizer files");
  cmd->add_option("--lora", o->lora,
                  "Merge this LoRA adapter (a GGUF adapter or a PEFT directory) into the weights: W + s B A, s the "
                  "adapter's alpha / rank times --lora-scale");
  cmd->add_option("--lora-scale", o->lora_scale, "Multiplies the merged adapter's own scale")->capture_default_str();
  cmd->callback([o] { run(*o); });
}

}  // namespace llms::cli
