// llmserve convert --from llama2c MODEL.bin TOKENIZER.bin OUT.gguf
#include <cstdio>

#include "cli/commands.h"
#include "io/llama2c_import.h"

namespace llms::cli {

void add_convert_command(CLI::App& app) {
  struct Options {
    std::string from;
    std::string model, tokenizer, out;
  };
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("convert", "Convert a checkpoint of another format to GGUF");
  cmd->add_option("--from", opts->from, "Source format")->required()->check(CLI::IsMember({"llama2c"}));
  cmd->add_option("model", opts->model, "llama2.c checkpoint (.bin)")->required()->check(CLI::ExistingFile);
  cmd->add_option("tokenizer", opts->tokenizer, "llama2.c tokenizer (.bin)")->required()->check(CLI::ExistingFile);
  cmd->add_option("out", opts->out, "Output GGUF path")->required();
  cmd->callback([opts] {
    ok_or_fail(convert_llama2c(opts->model, opts->tokenizer, opts->out));
    std::printf("wrote %s\n", opts->out.c_str());
  });
}

}  // namespace llms::cli
