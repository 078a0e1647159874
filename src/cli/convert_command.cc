// llmserve convert --from llama2c MODEL.bin TOKENIZER.bin OUT.gguf
// llmserve convert --from hf DIR OUT.gguf [--vocab-from FILE.gguf]
#include <cstdio>

#include "cli/commands.h"
#include "io/gguf_file.h"
#include "io/gguf_writer.h"
#include "io/hf_model.h"
#include "io/llama2c_import.h"
#include "tools/model_vocabulary.h"

namespace llms::cli {
namespace {

// The Hugging Face directory `dir` as one GGUF file, in llama.cpp's names and layouts,
// with the directory's tokenizer (or the tokenizer.* keys of `vocab_from`).
void convert_hf(const std::string& dir, const std::string& out, const std::string& vocab_from) {
  const GgufFile model = value_or_fail(open_hf_model(dir));
  GgufWriter w = gguf_writer_for(model);
  ok_or_fail(add_vocabulary(model, vocab_from, w));
  ok_or_fail(w.write(out));
}

}  // namespace

void add_convert_command(CLI::App& app) {
  struct Options {
    std::string from;
    std::vector<std::string> files;
    std::string vocab_from;
  };
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("convert", "Convert a checkpoint of another format to GGUF");
  cmd->add_option("--from", opts->from, "Source format: llama2c, or hf (a Hugging Face model directory)")
      ->required()
      ->check(CLI::IsMember({"llama2c", "hf"}));
  cmd->add_option("files", opts->files,
                  "llama2c: MODEL.bin TOKENIZER.bin OUT.gguf; hf: DIR OUT.gguf")
      ->required();
  cmd->add_option("--vocab-from", opts->vocab_from,
                  "hf: the tokenizer.* keys of this GGUF file (of the same vocabulary) instead of the directory's tokenizer files")
      ->check(CLI::ExistingFile);
  cmd->callback([opts] {
    const auto& f = opts->files;
    if (opts->from == "llama2c") {
      if (f.size() != 3) fail(invalid_argument("convert --from llama2c takes MODEL.bin TOKENIZER.bin OUT.gguf"));
      ok_or_fail(convert_llama2c(f[0], f[1], f[2]));
    } else {
      if (f.size() != 2) fail(invalid_argument("convert --from hf takes DIR OUT.gguf"));
      convert_hf(f[0], f[1], opts->vocab_from);
    }
    std::printf("wrote %s\n", f.back().c_str());
  });
}

}  // namespace llms::cli
