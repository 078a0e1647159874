// Subcommands of the `llmserve` binary. Each add_*_command() registers one subcommand
// on the app; its callback parses nothing itself (CLI11 did), calls into the modules,
// and reports failure by throwing CLI::RuntimeError(exit_code) after printing the
// error to stderr. Keep logic out of here: what a command does lives in a module
// where tests reach it.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "base/status.h"
#include "tensor/dtype.h"

namespace llms::cli {

void add_generate_command(CLI::App& app);
void add_inspect_command(CLI::App& app);
void add_convert_command(CLI::App& app);
void add_make_model_command(CLI::App& app);
void add_tokenize_commands(CLI::App& app);
void add_chat_template_command(CLI::App& app);
void add_serve_command(CLI::App& app);
void add_perplexity_command(CLI::App& app);
void add_bench_engine_command(CLI::App& app);
void add_quantize_command(CLI::App& app);
void add_prune_command(CLI::App& app);
void add_eval_prune_command(CLI::App& app);
void add_eval_early_exit_command(CLI::App& app);
void add_eval_precision_command(CLI::App& app);
void add_eval_task_command(CLI::App& app);
void add_review_command(CLI::App& app);
void add_quant_report_command(CLI::App& app);
void add_imatrix_command(CLI::App& app);
void add_bench_decode_command(CLI::App& app);
void add_bench_grammar_command(CLI::App& app);
void add_deploy_commands(CLI::App& app);
void add_bench_speculative_command(CLI::App& app);
void add_bench_commands(CLI::App& app);  // bench serve

// Prints "error: <message>" to stderr and throws CLI::RuntimeError(exit_code).
[[noreturn]] void fail(const Status& status, int exit_code = 1);
// Returns the value or fails with its status.
template <typename T>
T value_or_fail(Result<T> r) {
  if (!r.ok()) fail(r.status());
  return std::move(r).value();
}
inline void ok_or_fail(const Status& s) {
  if (!s.ok()) fail(s);
}
// The type named `name`, or fails with "unknown <flag> '<name>'".
DType dtype_or_fail(const std::string& name, const std::string& flag);

}  // namespace llms::cli
