// llmserve: one binary, one subcommand per job. See `llmserve --help`.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "cli/commands.h"

namespace llms::cli {

void fail(const Status& status, int exit_code) {
  std::fprintf(stderr, "error: %s\n", status.message().c_str());
  throw CLI::RuntimeError(exit_code);
}

DType dtype_or_fail(const std::string& name, const std::string& flag) {
  const auto t = dtype_from_name(name);
  if (!t) fail(invalid_argument("unknown " + flag + " '" + name + "'"));
  return *t;
}

}  // namespace llms::cli

int main(int argc, char** argv) {
  CLI::App app{"llmserve: LLM inference server and tools"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "llmserve 0.1.0");
  llms::cli::add_generate_command(app);
  llms::cli::add_inspect_command(app);
  llms::cli::add_convert_command(app);
  llms::cli::add_make_model_command(app);
  llms::cli::add_tokenize_commands(app);
  llms::cli::add_chat_template_command(app);
  llms::cli::add_serve_command(app);
  llms::cli::add_perplexity_command(app);
  llms::cli::add_bench_engine_command(app);
  llms::cli::add_quantize_command(app);
  llms::cli::add_prune_command(app);
  llms::cli::add_eval_prune_command(app);
  llms::cli::add_eval_early_exit_command(app);
  llms::cli::add_eval_precision_command(app);
  llms::cli::add_eval_task_command(app);
  llms::cli::add_review_command(app);
  llms::cli::add_imatrix_command(app);
  llms::cli::add_quant_report_command(app);
  llms::cli::add_bench_decode_command(app);
  llms::cli::add_bench_grammar_command(app);
  llms::cli::add_deploy_commands(app);
  llms::cli::add_bench_speculative_command(app);
  llms::cli::add_bench_commands(app);
  CLI11_PARSE(app, argc, argv);
  return 0;
}
