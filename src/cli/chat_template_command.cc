// llmserve chat-template (--template FILE | -m MODEL) --request FILE.json
//
// Prints the prompt a chat request renders to: the request's "messages" and "tools"
// (OpenAI shape, parsed as the server parses them) through the model's chat template
// or a Jinja file, with "add_generation_prompt" (default true) and the BOS/EOS texts
// of the model (or "bos_token"/"eos_token" in the request). What the model will see,
// without starting a server.
#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "cli/commands.h"
#include "chat/chat_template.h"
#include "server/openai_request.h"
#include "tokenizer/load_tokenizer.h"

namespace llms::cli {
namespace {

std::string read_file_or_fail(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(not_found(fmt::format("cannot open '{}'", path)));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

void add_chat_template_command(CLI::App& app) {
  struct Options {
    std::string model;
    std::string template_file;
    std::string request;
  };
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("chat-template", "Print the prompt a chat request renders to");
  CLI::Option* model = cmd->add_option("-m,--model", opts->model, "GGUF file or Hugging Face directory whose chat template and BOS/EOS to use");
  CLI::Option* file = cmd->add_option("--template", opts->template_file, "Jinja template file (or a family name)");
  model->excludes(file);
  cmd->add_option("--request", opts->request, "JSON file with messages, tools, add_generation_prompt")->required();
  cmd->callback([opts, model, file] {
    if (model->count() == 0 && file->count() == 0) fail(invalid_argument("give -m MODEL or --template FILE"));
    const auto body = Json::parse(read_file_or_fail(opts->request), nullptr, false);
    if (body.is_discarded() || !body.is_object()) fail(invalid_argument(opts->request + ": not a JSON object"));
    std::vector<ChatMessage> messages;
    if (auto e = parse_messages(body, &messages)) fail(invalid_argument(e->message));
    const Json tools = body.contains("tools") ? body.at("tools") : Json();
    const bool gen = body.value("add_generation_prompt", true);
    ChatTemplateTokens tokens;
    std::string source;
    if (model->count() > 0) {
      auto tok = value_or_fail(load_tokenizer(opts->model));
      source = tok->chat_template();
      tokens.bos = tok->token_text(tok->bos_id());
      tokens.eos = tok->token_text(tok->eos_id());
    } else {
      source = is_family_name(opts->template_file) ? opts->template_file : read_file_or_fail(opts->template_file);
    }
    tokens.bos = body.value("bos_token", tokens.bos);
    tokens.eos = body.value("eos_token", tokens.eos);
    const std::string prompt = value_or_fail(apply_chat_template(source, messages, gen, tokens, tools));
    std::fwrite(prompt.data(), 1, prompt.size(), stdout);
  });
}

}  // namespace llms::cli
