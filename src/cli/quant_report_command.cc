// llmserve quant-report MODEL.gguf --type T [--text FILE] [--json]
#include <fmt/format.h>

#include <cstdio>

#include <nlohmann/json.hpp>

#include "base/mapped_file.h"
#include "cli/commands.h"
#include "cli/config_flags.h"
#include "io/gguf_file.h"
#include "eval/quant_report.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/load_tokenizer.h"

namespace llms::cli {
namespace {

struct Options {
  std::string model, type, text_file;
  int max_tokens = 256;
  double tolerance = 0.05;
  int threads = 0;
  bool json = false;
};

void run(const Options& o) {
  QuantReportOptions q;
  q.type = dtype_or_fail(o.type, "--type");
  q.max_tokens = o.max_tokens;
  q.tolerance = o.tolerance;
  q.threads = o.threads;
  if (!o.text_file.empty()) {
    const std::string text = value_or_fail(read_file(o.text_file));
    auto tokenizer = value_or_fail(load_tokenizer(o.model));
    q.tokens = tokenizer->encode(text);
  }
  const QuantReport r = value_or_fail(quant_report(o.model, q));
  if (o.json) {
    nlohmann::json j = {{"type", o.type}, {"tolerance", o.tolerance}, {"text_tokens", r.text_tokens},
                        {"tensors", nlohmann::json::array()}};
    for (const auto& t : r.tensors) {
      nlohmann::json e = {{"name", t.name},          {"type", dtype_name(t.type)}, {"fits", t.fits},
                          {"relative_rms", t.relative_rms}, {"max_abs", t.max_abs},    {"snr_db", t.snr_db},
                          {"kurtosis", t.kurtosis},  {"outlier_share", t.outlier_share}, {"flagged", t.flagged}};
      if (t.output_relative_rms >= 0) e["output_relative_rms"] = t.output_relative_rms;
      j["tensors"].push_back(e);
    }
    std::printf("%s\n", j.dump(1).c_str());
    return;
  }
  std::printf("%-28s %-6s %9s %9s %7s %8s %8s %9s  %s\n", "tensor", "type", "rel_rms", "max_abs", "snr_db", "kurtosis",
              "outl_6s", "out_rms", "");
  int flagged = 0;
  for (const auto& t : r.tensors) {
    const std::string out = t.output_relative_rms >= 0 ? fmt::format("{:9.5f}", t.output_relative_rms) : "        -";
    std::printf("%-28s %-6s %9.5f %9.5f %7.2f %8.2f %8.5f %s  %s\n", t.name.c_str(),
                std::string(dtype_name(t.type)).c_str(), t.relative_rms, t.max_abs, t.snr_db, t.kurtosis,
                t.outlier_share, out.c_str(), t.flagged ? "NEEDS HIGHER PRECISION" : "");
    flagged += t.flagged;
  }
  std::printf("%d of %zu tensors above the tolerance %.3f%s\n", flagged, r.tensors.size(), o.tolerance,
              r.text_tokens ? fmt::format(" (outputs measured on {} tokens)", r.text_tokens).c_str() : "");
}

}  // namespace

void add_quant_report_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("quant-report", "Per-tensor quantization error and tail statistics for a type");
  cmd->add_option("model", o->model, "GGUF model")->required();
  cmd->add_option("--type", o->type, "Type to evaluate (q8_0, q6_k, q4_k, q4_0, bf16, f16)")->required();
  cmd->add_option("--text", o->text_file, "Text file: also measure each layer's output error on it");
  cmd->add_option("--max-tokens", o->max_tokens, "Tokens of the text to use")->capture_default_str();
  cmd->add_option("--tolerance", o->tolerance, "Relative RMS error above which a tensor is flagged")->capture_default_str();
  add_threads_flag(cmd, &o->threads);
  cmd->add_flag("--json", o->json, "Print one JSON object");
  cmd->callback([o] { run(*o); });
}

}  // namespace llms::cli
