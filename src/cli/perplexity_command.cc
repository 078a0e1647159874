// llmserve perplexity -m MODEL -f TEXT [--ctx N] [--base BASE] [--kv-type T] [--json]
#include <cstdio>

#include <nlohmann/json.hpp>

#include "base/mapped_file.h"
#include "cli/commands.h"
#include "cli/config_flags.h"
#include "model/model.h"
#include "eval/perplexity.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/load_tokenizer.h"

namespace llms::cli {
namespace {

struct Options {
  std::string model, text_file, base;
  int ctx = 128;
  int max_windows = 0;
  std::string kv_type = "f32", base_kv_type = "f32";
  int threads = 0;
  bool json = false;
};

void run(const Options& o) {
  auto model = value_or_fail(Model::load(o.model));
  auto tokenizer = value_or_fail(load_tokenizer(model->file()));
  const std::string text = value_or_fail(read_file(o.text_file));
  const std::vector<int32_t> tokens = tokenizer->encode(text);
  std::unique_ptr<Model> base;
  EvalSide base_side;
  if (!o.base.empty()) {
    base = value_or_fail(Model::load(o.base));
    base_side = {base.get(), dtype_or_fail(o.base_kv_type, "--base-kv-type"), dtype_or_fail(o.base_kv_type, "--base-kv-type")};
  }
  const DType kv = dtype_or_fail(o.kv_type, "--kv-type");
  ThreadPool pool(o.threads);
  const PerplexityResult r =
      value_or_fail(evaluate_perplexity(tokens, {model.get(), kv, kv}, base_side, {o.ctx, o.max_windows}, pool));
  if (o.json) {
    nlohmann::json j = {{"perplexity", r.perplexity}, {"tokens", r.scored_tokens}, {"windows", r.windows},
                        {"ctx", o.ctx}, {"kv_type", o.kv_type}};
    if (base) {
      j["base_perplexity"] = r.base_perplexity;
      j["kl_divergence"] = r.kl_divergence;
      j["top1_agreement"] = r.top1_agreement;
    }
    std::printf("%s\n", j.dump().c_str());
    return;
  }
  std::printf("perplexity:      %.4f over %lld tokens (%d windows of %d)\n", r.perplexity,
              static_cast<long long>(r.scored_tokens), r.windows, o.ctx);
  if (base) {
    std::printf("base perplexity: %.4f\n", r.base_perplexity);
    std::printf("KL divergence:   %.6f nats/token (base || model)\n", r.kl_divergence);
    std::printf("top-1 agreement: %.2f%%\n", 100.0 * r.top1_agreement);
  }
}

}  // namespace

void add_perplexity_command(CLI::App& app) {
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("perplexity", "Perplexity of a model on a text, and divergence from a base model");
  cmd->add_option("-m,--model", o->model, "GGUF model")->required();
  cmd->add_option("-f,--file", o->text_file, "Text file")->required();
  cmd->add_option("--ctx", o->ctx, "Window length in tokens")->capture_default_str();
  cmd->add_option("--max-windows", o->max_windows, "Stop after this many windows (0 = all)");
  cmd->add_option("--base", o->base, "Base model to compare with (KL divergence, top-1 agreement)");
  cmd->add_option("--kv-type", o->kv_type, "KV cache type of the model")->capture_default_str();
  cmd->add_option("--base-kv-type", o->base_kv_type, "KV cache type of the base")->capture_default_str();
  add_threads_flag(cmd, &o->threads);
  cmd->add_flag("--json", o->json, "Print one JSON object");
  cmd->callback([o] { run(*o); });
}

}  // namespace llms::cli
