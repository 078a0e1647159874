// llmserve imatrix -m MODEL -f TEXT -o FILE [--ctx N] [--chunks N]
#include <cstdio>
#include <filesystem>

#include "base/mapped_file.h"
#include "cli/commands.h"
#include "cli/config_flags.h"
#include "eval/imatrix.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/load_tokenizer.h"

namespace llms::cli {
namespace {

struct Options {
  std::string model, text, out;
  int ctx = 128;
  int chunks = 0;
  int threads = 0;
};

void run(const Options& o) {
  auto model = value_or_fail(Model::load(o.model));
  auto tokenizer = value_or_fail(load_tokenizer(model->file()));
  const std::vector<int32_t> tokens = tokenizer->encode(value_or_fail(read_file(o.text)));
  ThreadPool pool(o.threads);
  ImportanceTable table = value_or_fail(collect_importance(*model, tokens, {o.ctx, o.chunks}, pool));
  table.datasets.push_back(std::filesystem::path(o.text).filename().string());
  ok_or_fail(write_importance(table, o.out));
  std::printf("wrote %s: %zu weight tensors, %lld windows of %d tokens\n", o.out.c_str(), table.tensors.size(),
              static_cast<long long>(table.chunks), o.ctx);
}

}  // namespace

void add_imatrix_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("imatrix", "Measure each linear layer's input-channel importance on a text");
  cmd->add_option("-m,--model", o->model, "GGUF model (the unquantized one)")->required();
  cmd->add_option("-f,--file", o->text, "Calibration text")->required();
  cmd->add_option("-o,--output", o->out, "Importance file to write (GGUF)")->required();
  cmd->add_option("--ctx", o->ctx, "Window length in tokens")->capture_default_str();
  cmd->add_option("--chunks", o->chunks, "At most this many windows (0 = the whole text)")->capture_default_str();
  add_threads_flag(cmd, &o->threads);
  cmd->callback([o] { run(*o); });
}

}  // namespace llms::cli
