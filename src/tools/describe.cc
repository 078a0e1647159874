#include "tools/describe.h"

#include <fmt/format.h>

#include <map>

#include "kernels/weight_matrix.h"
#include "model/config.h"

namespace llms {

using nlohmann::json;

namespace {

json tokenizer_summary(const GgufFile& f) {
  json t = json::object();
  auto model = f.get_string("tokenizer.ggml.model");
  if (!model.ok()) return json();
  t["model"] = *model;
  if (const auto* tokens = f.find("tokenizer.ggml.tokens"); tokens && tokens->is_array()) {
    t["vocab_size"] = tokens->as_array().items.size();
  }
  for (const char* key : {"bos", "eos", "unknown", "padding"}) {
    auto id = f.get_int(fmt::format("tokenizer.ggml.{}_token_id", key));
    if (id.ok()) t[std::string(key) + "_id"] = *id;
  }
  if (auto pre = f.get_string("tokenizer.ggml.pre"); pre.ok()) t["pre"] = *pre;
  if (const auto* merges = f.find("tokenizer.ggml.merges"); merges && merges->is_array()) {
    t["merges"] = merges->as_array().items.size();
  }
  t["chat_template"] = f.has("tokenizer.chat_template");
  return t;
}

// How loading treats a tensor, and what it then takes in memory: matrices are packed
// (native types at their own size, the others widened to Q8_0); the token embedding is
// read in place (and packed too when it is also the output head); vectors become
// float copies.
json tensor_entry(const GgufFile& f, const GgufTensorInfo& t) {
  std::vector<int64_t> shape(t.ne.begin(), t.ne.begin() + t.n_dims);
  json e = {{"name", t.name}, {"type", dtype_name(t.dtype)}, {"shape", shape}, {"bytes", t.num_bytes}};
  const bool embedding = t.name == "token_embd.weight";
  const bool tied = embedding && f.find_tensor("output.weight") == nullptr;
  if (t.n_dims == 1) {
    e["kernel"] = "vector";
    e["memory_bytes"] = t.num_elements() * 4;
  } else if (embedding && !tied) {
    e["kernel"] = "in place";
    e["memory_bytes"] = t.num_bytes;  // mapped: resident as rows are used
  } else if (t.n_dims == 2) {
    const MatrixSupport support = matrix_support(t.dtype);
    e["kernel"] = support == MatrixSupport::kNative    ? "native"
                  : support == MatrixSupport::kWidened ? "widened to q8_0"
                                                       : "unsupported";
    e["memory_bytes"] = matrix_memory_bytes(t.dtype, t.ne[1], t.ne[0]);
  } else {
    e["kernel"] = "-";
    e["memory_bytes"] = 0;
  }
  return e;
}

}  // namespace

json describe_model_file(const GgufFile& f) {
  json d;
  d["file"] = f.path();
  d["file_size"] = f.file_size();
  d["gguf_version"] = f.version();
  d["format"] = f.assembled() ? "hf" : "gguf";
  d["alignment"] = f.alignment();
  auto str = [&](const char* key) {
    auto r = f.get_string(key);
    return r.ok() ? *r : std::string();
  };
  d["architecture"] = str("general.architecture");
  d["name"] = str("general.name");
  auto cfg = ModelConfig::from_gguf(f);
  if (cfg.ok()) {
    const ModelConfig& c = *cfg;
    d["hyperparameters"] = {{"n_vocab", c.n_vocab},         {"n_embd", c.n_embd},
                            {"n_layer", c.n_layer},         {"n_head", c.n_head},
                            {"n_head_kv", c.n_head_kv},     {"head_dim", c.head_dim},
                            {"n_ff", c.n_ff},               {"context_length", c.n_ctx_train},
                            {"rope_dim", c.rope_dim},       {"rope_base", c.rope_base},
                            {"rope_style", c.rope_dim == 0 ? "none" : c.rope_style == RopeStyle::kNeox ? "neox" : "normal"},
                            {"positions", c.learned_positions ? "learned" : "rope"},
                            {"norm", c.norm == NormKind::kRms ? "rmsnorm" : "layernorm"},
                            {"norm_eps", c.rms_eps},
                            {"ffn", c.ffn == FfnKind::kSwiGlu ? "swiglu" : c.ffn == FfnKind::kGeGlu ? "geglu" : "gelu"},
                            {"rope_context_orig", c.n_ctx_orig},
                            {"rope_attn_factor", c.rope_attn_factor},
                            {"rope_freq_scale", c.rope_freq_scale},
                            {"sliding_window", c.sliding_window},
                            {"max_positions", c.max_positions()}};
    if (c.moe()) {
      json& h = d["hyperparameters"];
      h["experts"] = c.n_expert;
      h["experts_used"] = c.n_expert_used;
      h["expert_ffn"] = c.n_ff_exp;
      h["shared_expert_ffn"] = c.n_ff_shexp;
      h["expert_weights"] = c.norm_expert_weights ? "softmax over the chosen" : "softmax over all";
    }
    d["synthetic"] = c.synthetic;
  } else {
    d["config_error"] = cfg.status().message();
    auto synthetic = f.get_bool_or(kSyntheticKey, false);
    d["synthetic"] = synthetic.ok() && *synthetic;
  }
  d["tokenizer"] = tokenizer_summary(f);
  json tensors = json::array();
  uint64_t params = 0;
  std::map<std::string, uint64_t> bytes_by_type;
  uint64_t memory = 0, widened = 0, widened_file = 0, widened_memory = 0;
  for (const auto& t : f.tensors()) {
    json e = tensor_entry(f, t);
    memory += e["memory_bytes"].get<uint64_t>();
    if (e["kernel"] == "widened to q8_0") {
      ++widened;
      widened_file += t.num_bytes;
      widened_memory += e["memory_bytes"].get<uint64_t>();
    }
    tensors.push_back(std::move(e));
    params += static_cast<uint64_t>(t.num_elements());
    bytes_by_type[std::string(dtype_name(t.dtype))] += t.num_bytes;
  }
  d["tensors"] = tensors;
  d["memory_bytes"] = memory;
  d["widened"] = {{"tensors", widened}, {"file_bytes", widened_file}, {"memory_bytes", widened_memory}};
  d["parameters"] = params;
  d["bytes_by_type"] = bytes_by_type;
  return d;
}

std::string format_model_description(const json& d) {
  std::string s;
  const std::string form = d.value("format", "gguf") == "hf" ? std::string("Hugging Face directory")
                                                              : fmt::format("GGUF v{}", d["gguf_version"].get<int>());
  s += fmt::format("file:          {} ({:.2f} MiB, {})\n", d["file"].get<std::string>(),
                   d["file_size"].get<double>() / (1 << 20), form);
  s += fmt::format("architecture:  {}\n", d["architecture"].get<std::string>());
  s += fmt::format("name:          {}\n", d["name"].get<std::string>());
  if (d["synthetic"].get<bool>()) {
    s += "WARNING:       synthetic model: the weights are RANDOM (for speed tests only; its text is noise)\n";
  }
  if (d.contains("hyperparameters")) {
    s += "hyperparameters:\n";
    for (const auto& [k, v] : d["hyperparameters"].items()) s += fmt::format("  {:<16} {}\n", k, v.dump());
  } else {
    s += fmt::format("hyperparameters: unavailable ({})\n", d["config_error"].get<std::string>());
  }
  if (!d["tokenizer"].is_null()) {
    s += "tokenizer:\n";
    for (const auto& [k, v] : d["tokenizer"].items()) s += fmt::format("  {:<16} {}\n", k, v.dump());
  } else {
    s += "tokenizer:     none\n";
  }
  const uint64_t params = d["parameters"].get<uint64_t>();
  s += fmt::format("parameters:    {} ({:.3f} M)\n", params, static_cast<double>(params) / 1e6);
  for (const auto& [type, bytes] : d["bytes_by_type"].items()) {
    s += fmt::format("  {:<6} {:.2f} MiB\n", type, bytes.get<double>() / (1 << 20));
  }
  s += fmt::format("memory:        {:.2f} MiB once loaded (embedding rows resident as used)\n",
                   d["memory_bytes"].get<double>() / (1 << 20));
  const json& w = d["widened"];
  if (w["tensors"].get<uint64_t>() > 0) {
    s += fmt::format("widened:       {} tensors have no kernel of their own and are widened to q8_0 at load: "
                     "{:.2f} MiB in the file, {:.2f} MiB in memory\n",
                     w["tensors"].get<uint64_t>(), w["file_bytes"].get<double>() / (1 << 20),
                     w["memory_bytes"].get<double>() / (1 << 20));
  }
  s += fmt::format("tensors ({}):\n", d["tensors"].size());
  s += fmt::format("  {:<32} {:<7} {:<20} {:>12}  {:<16} {:>12}\n", "name", "type", "shape", "bytes", "kernel",
                   "in memory");
  for (const auto& t : d["tensors"]) {
    s += fmt::format("  {:<32} {:<7} {:<20} {:>12}  {:<16} {:>12}\n", t["name"].get<std::string>(),
                     t["type"].get<std::string>(), t["shape"].dump(), t["bytes"].get<uint64_t>(),
                     t["kernel"].get<std::string>(), t["memory_bytes"].get<uint64_t>());
  }
  return s;
}

}  // namespace llms
