// llmserve make-model --preset NAME | --dim ... OUT.gguf
#include <algorithm>
#include <cstdio>

#include "base/log.h"
#include "cli/commands.h"
#include "io/lora_file.h"
#include "tools/synthetic.h"
#include "tools/synthetic_lora.h"

namespace llms::cli {

void add_make_model_command(CLI::App& app) {
  struct Options {
    std::string preset = "tiny";
    std::string out;
    std::string type = "f32";
    std::string arch;
    std::string rope_scaling;
    std::string format = "gguf";
    int layers = 0, dim = 0, heads = 0, kv_heads = 0, ffn = 0, vocab = 0, ctx = 0, window = 0;
    int experts = -1, experts_used = 0, expert_ffn = 0;
    uint64_t seed = 1;
    bool tied = false;
    // Generated LoRA adapters for the model (--lora OUT, repeatable: the i-th seeded
    // --lora-seed + i).
    std::vector<std::string> lora_out;
    std::string lora_format = "gguf", lora_type = "f32";
    SyntheticLoraSpec lora;
  };
  auto opts = std::make_shared<Options>();
  std::string presets;
  for (const auto& n : synthetic_preset_names()) presets += (presets.empty() ? "" : ", ") + n;
  CLI::App* cmd = app.add_subcommand("make-model", "Write a synthetic GGUF model with random weights (for speed tests)");
  cmd->add_option("out", opts->out, "Output GGUF path (a directory with --format hf)")->required();
  cmd->add_option("--format", opts->format, "gguf, or hf: a Hugging Face directory (config.json, safetensors)")
      ->check(CLI::IsMember({"gguf", "hf"}))
      ->capture_default_str();
  cmd->add_option("--preset", opts->preset, "Shape preset: " + presets)->capture_default_str();
  cmd->add_option("--type", opts->type, "Weight type of the matrices (f32, f16, bf16, ...)")->capture_default_str();
  cmd->add_option("--arch", opts->arch, "llama, qwen2 (QKV biases, NeoX RoPE), qwen2moe, phi3, gemma2 or gpt2");
  cmd->add_option("--layers", opts->layers, "Override the number of layers (cut depth)");
  cmd->add_option("--dim", opts->dim, "Override the embedding size");
  cmd->add_option("--heads", opts->heads, "Override the number of attention heads");
  cmd->add_option("--kv-heads", opts->kv_heads, "Override the number of KV heads");
  cmd->add_option("--ffn", opts->ffn, "Override the feed-forward size");
  cmd->add_option("--vocab", opts->vocab, "Override the vocabulary size (>= 259)");
  cmd->add_option("--ctx", opts->ctx, "Override the context length");
  cmd->add_option("--sliding-window", opts->window, "gemma2: the local layers' window (default: the context, at most 4096); phi3: the window (default: the context); llama: Mistral's window (default: none)");
  cmd->add_option("--experts", opts->experts, "Mixture of experts (llama as Mixtral, qwen2moe): the expert count (0: dense)");
  cmd->add_option("--experts-used", opts->experts_used, "Experts per token (default: the preset's, else 2)");
  cmd->add_option("--expert-ffn", opts->expert_ffn, "Each expert's feed-forward size (default: the preset's, else --ffn)");
  cmd->add_option("--rope-scaling", opts->rope_scaling,
                  "llama, qwen2: none, linear (factor 4), yarn (factor 4 over a quarter of the context) or llama3");
  cmd->add_option("--seed", opts->seed, "Random seed")->capture_default_str();
  cmd->add_flag("--tied", opts->tied, "Share the output head with the token embedding (gpt2 presets always do)");
  cmd->add_option("--lora", opts->lora_out,
                  "Also write a random LoRA adapter for the model to this path (repeatable: the i-th (from 0) is "
                  "seeded --lora-seed + i)");
  cmd->add_option("--lora-format", opts->lora_format, "gguf (llama.cpp's adapter) or peft (a PEFT directory)")
      ->check(CLI::IsMember({"gguf", "peft"}))
      ->capture_default_str();
  cmd->add_option("--lora-rank", opts->lora.rank, "The adapter's rank")->capture_default_str();
  cmd->add_option("--lora-alpha", opts->lora.alpha, "The adapter's alpha (scale alpha / rank)")->capture_default_str();
  cmd->add_option("--lora-targets", opts->lora.targets,
                  "Adapted matrices per layer (attn_q attn_k attn_v attn_output ffn_gate ffn_up ffn_down; default: all)");
  cmd->add_option("--lora-std", opts->lora.std_dev, "Standard deviation of the factors' values")->capture_default_str();
  cmd->add_option("--lora-seed", opts->lora.seed, "The adapter's random seed")->capture_default_str();
  cmd->add_option("--lora-type", opts->lora_type, "The factors' type: f32 or f16 (peft: also bf16)")->capture_default_str();
  cmd->callback([opts] {
    SyntheticSpec spec = value_or_fail(synthetic_preset(opts->preset));
    spec.weight_type = dtype_or_fail(opts->type, "--type");
    if (!opts->arch.empty()) spec.arch = opts->arch;
    if (opts->layers) spec.n_layer = opts->layers;
    if (opts->dim) spec.n_embd = opts->dim;
    if (opts->heads) spec.n_head = opts->heads;
    if (opts->kv_heads) spec.n_head_kv = opts->kv_heads;
    if (opts->ffn) spec.n_ff = opts->ffn;
    if (opts->vocab) spec.n_vocab = opts->vocab;
    if (opts->ctx) spec.n_ctx = opts->ctx;
    if (opts->window) spec.sliding_window = opts->window;
    if (!opts->rope_scaling.empty()) spec.rope_scaling = opts->rope_scaling;
    if (opts->experts >= 0) spec.n_expert = opts->experts;
    if (opts->experts_used) spec.n_expert_used = opts->experts_used;
    if (spec.n_expert > 0 && spec.n_expert_used == 0) spec.n_expert_used = std::min(2, spec.n_expert);
    if (spec.n_expert_used > spec.n_expert && opts->experts_used == 0) spec.n_expert_used = spec.n_expert;
    if (opts->expert_ffn) spec.n_ff_exp = opts->expert_ffn;
    spec.seed = opts->seed;
    if (opts->tied) spec.tied_output = true;  // presets may be tied already (gpt2-*)
    log_info("writing synthetic model '{}' (RANDOM weights, for speed tests only): {} layers, dim {}, type {}",
             spec.preset, spec.n_layer, spec.n_embd, dtype_name(spec.weight_type));
    ok_or_fail(opts->format == "hf" ? write_synthetic_hf_model(spec, opts->out) : write_synthetic_model(spec, opts->out));
    std::printf("wrote %s (synthetic %s, random weights)\n", opts->out.c_str(), spec.preset.c_str());
    if (opts->lora_out.empty()) return;
    // The adapter is made from the GGUF form of the model (a directory is written from it too).
    const std::string base_path = opts->out + ".lora-base.tmp";
    ok_or_fail(write_synthetic_model(spec, base_path));
    GgufFile base = value_or_fail(GgufFile::open(base_path));
    const DType type = dtype_or_fail(opts->lora_type, "--lora-type");
    for (size_t i = 0; i < opts->lora_out.size(); ++i) {
      SyntheticLoraSpec spec = opts->lora;
      spec.seed += i;
      const std::string& out = opts->lora_out[i];
      const LoraFile lora = value_or_fail(make_synthetic_lora(base, spec));
      ok_or_fail(opts->lora_format == "peft" ? write_lora_peft(lora, base, type, out) : write_lora_gguf(lora, type, out));
      std::printf("wrote %s (random LoRA adapter, rank %lld, %zu matrices)\n", out.c_str(),
                  static_cast<long long>(spec.rank), lora.matrices.size());
    }
    std::remove(base_path.c_str());
  });
}

}  // namespace llms::cli
