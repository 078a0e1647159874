// llmserve tokenize -m FILE [--no-bos] [--special] (TEXT | --file F)
// llmserve detokenize -m FILE [--special] IDS...
//
// Both work on vocabulary-only GGUF files as well as on full models (only the
// tokenizer metadata is read), and on Hugging Face model directories, including one
// that holds only the tokenizer files.
#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "tokenizer/load_tokenizer.h"

namespace llms::cli {

namespace {

std::unique_ptr<Tokenizer> load_tokenizer_or_fail(const std::string& path) {
  return value_or_fail(load_tokenizer(path));
}

Result<std::string> read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found(fmt::format("cannot open '{}'", path));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return data_loss(fmt::format("error reading '{}'", path));
  return ss.str();
}

void write_stdout(const std::string& s) { std::fwrite(s.data(), 1, s.size(), stdout); }

void add_tokenize(CLI::App& app) {
  struct Options {
    std::string model;
    std::string text;
    std::string file;
    bool no_bos = false;
    bool special = false;
  };
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("tokenize", "Print the token ids of a text, separated by spaces");
  cmd->add_option("-m,--model", opts->model, "GGUF file (a vocabulary-only file is enough) or Hugging Face directory")->required();
  CLI::Option* text = cmd->add_option("text", opts->text, "Text to tokenize");
  CLI::Option* file = cmd->add_option("--file", opts->file, "Read the text from this file (bytes as they are)");
  text->excludes(file);
  cmd->add_flag("--no-bos", opts->no_bos, "Do not add the BOS (or EOS) token the vocabulary asks for");
  cmd->add_flag("--special", opts->special, "Recognise control tokens such as <|im_start|> in the text");
  cmd->callback([opts, text, file] {
    if (text->count() == 0 && file->count() == 0) {
      fail(invalid_argument("give the text to tokenize as an argument or with --file"));
    }
    const std::string input = file->count() > 0 ? value_or_fail(read_text_file(opts->file)) : opts->text;
    const auto tok = load_tokenizer_or_fail(opts->model);
    EncodeOptions eo;
    eo.add_bos = !opts->no_bos;
    eo.parse_special = opts->special;
    const std::vector<int32_t> ids = tok->encode(input, eo);
    write_stdout(fmt::format("{}\n", fmt::join(ids, " ")));
  });
}

void add_detokenize(CLI::App& app) {
  struct Options {
    std::string model;
    std::vector<int64_t> ids;
    bool special = false;
  };
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("detokenize", "Print the text of token ids");
  cmd->add_option("-m,--model", opts->model, "GGUF file (a vocabulary-only file is enough) or Hugging Face directory")->required();
  cmd->add_option("ids", opts->ids, "Token ids")->required();
  cmd->add_flag("--special", opts->special, "Show control tokens such as <s> as their text");
  cmd->callback([opts] {
    const auto tok = load_tokenizer_or_fail(opts->model);
    std::vector<int32_t> ids;
    ids.reserve(opts->ids.size());
    for (const int64_t id : opts->ids) {
      if (id < 0 || id >= tok->vocab_size()) {
        fail(out_of_range(fmt::format("token id {} is outside the vocabulary (0..{})", id, tok->vocab_size() - 1)));
      }
      ids.push_back(static_cast<int32_t>(id));
    }
    DecodeOptions d;
    d.render_special = opts->special;
    write_stdout(tok->decode(ids, d) + "\n");
  });
}

}  // namespace

void add_tokenize_commands(CLI::App& app) {
  add_tokenize(app);
  add_detokenize(app);
}

}  // namespace llms::cli
