// llmserve quantize IN.gguf OUT.gguf --type T [--keep TYPE:PATTERN[,PATTERN]]... [--policy depth]
#include <cstdio>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "tools/quantizer.h"

namespace llms::cli {
namespace {

struct Options {
  std::string in, out, type;
  std::vector<std::string> keep;
  std::string policy = "default";
  double tolerance = 0.05;
  bool no_protect = false;
  int threads = 0;
  bool json = false;
};

void run(const Options& o) {
  QuantizeOptions q;
  q.type = dtype_or_fail(o.type, "--type");
  for (const auto& k : o.keep) q.keep.push_back(value_or_fail(parse_keep_rule(k)));
  if (o.policy != "default" && o.policy != "depth") fail(invalid_argument("--policy must be default or depth"));
  q.policy = o.policy == "depth" ? QuantPolicy::kDepth : QuantPolicy::kDefault;
  q.tolerance = o.tolerance;
  q.protect_embeddings = !o.no_protect;
  q.threads = o.threads;
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
  cmd->add_option("in", o->in, "Input GGUF")->required();
  cmd->add_option("out", o->out, "Output GGUF")->required();
  cmd->add_option("--type", o->type, "f32, f16, bf16, q8_0, q6_k, q5_k, q5_0, q4_k, q4_0, iq4_nl, iq4_xs, q3_k")->required();
  cmd->add_option("--keep", o->keep, "TYPE:PATTERN[,PATTERN]: pin tensors whose name contains a pattern (repeatable)");
  cmd->add_option("--policy", o->policy, "default, or depth (promote tensors above a depth-scaled error tolerance)")
      ->capture_default_str();
  cmd->add_option("--tolerance", o->tolerance, "Base relative RMS error for --policy depth")->capture_default_str();
  cmd->add_flag("--no-protect", o->no_protect, "Quantize the output head and token embedding like the rest");
  cmd->add_option("-t,--threads", o->threads, "Threads (0 = one per core)");
  cmd->add_flag("--json", o->json, "Print every decision as JSON");
  cmd->callback([o] { run(*o); });
}

}  // namespace llms::cli
