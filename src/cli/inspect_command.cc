// llmserve inspect FILE.gguf [--json]
#include <cstdio>

#include "cli/commands.h"
#include "io/hf_model.h"
#include "io/gguf_file.h"
#include "tools/describe.h"

namespace llms::cli {

void add_inspect_command(CLI::App& app) {
  struct Options {
    std::string path;
    bool json = false;
  };
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("inspect", "Show a GGUF model's architecture, tokenizer and tensors");
  cmd->add_option("file", opts->path, "GGUF file or Hugging Face model directory")->required();
  cmd->add_flag("--json", opts->json, "Print one JSON object");
  cmd->callback([opts] {
    GgufFile file = value_or_fail(open_model_file(opts->path));
    const auto d = describe_model_file(file);
    const std::string out = opts->json ? d.dump(2) + "\n" : format_model_description(d);
    std::fwrite(out.data(), 1, out.size(), stdout);
  });
}

}  // namespace llms::cli
