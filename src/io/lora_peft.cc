// io/lora_file.h: the PEFT form (adapter_config.json and adapter_model.safetensors).
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "io/hf_checkpoint.h"
#include "io/hf_mapping.h"
#include "io/lora_file.h"
#include "io/safetensors.h"
#include "quant/row_convert.h"

namespace llms {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr std::string_view kPeftPrefix = "base_model.model.";
constexpr std::string_view kSuffixA = ".lora_A.weight", kSuffixB = ".lora_B.weight";

// adapter_config.json's settings; what this reader does not implement is an error.
struct PeftConfig {
  int64_t r = 0;
  float alpha = 0.0f;
  bool rslora = false;
  std::set<std::string> targets;  // module names ("q_proj")
};

Result<PeftConfig> read_config(const std::string& dir) {
  LLMS_ASSIGN_OR_RETURN(json c, read_json_file((fs::path(dir) / "adapter_config.json").string()));
  if (!c.is_object()) return invalid_argument("adapter_config.json is not an object");
  PeftConfig p;
  auto flag = [&](const char* key) { return c.contains(key) && c[key].is_boolean() && c[key].get<bool>(); };
  auto nonempty = [&](const char* key) {
    return c.contains(key) && !c[key].is_null() && !(c[key].is_object() && c[key].empty()) &&
           !(c[key].is_array() && c[key].empty());
  };
  if (c.contains("peft_type") && c["peft_type"] != "LORA") {
    return unimplemented(fmt::format("peft_type is {}; only LORA adapters are read", c["peft_type"].dump()));
  }
  if (!c.contains("r") || !c["r"].is_number_integer() || c["r"].get<int64_t>() <= 0) {
    return invalid_argument("adapter_config.json: 'r' must be a positive integer");
  }
  p.r = c["r"].get<int64_t>();
  if (!c.contains("lora_alpha") || !c["lora_alpha"].is_number()) {
    return invalid_argument("adapter_config.json: 'lora_alpha' must be a number");
  }
  p.alpha = c["lora_alpha"].get<float>();
  p.rslora = flag("use_rslora");
  if (flag("use_dora")) return unimplemented("adapter_config.json: use_dora (DoRA) is not implemented");
  if (flag("fan_in_fan_out")) return unimplemented("adapter_config.json: fan_in_fan_out is not implemented");
  if (c.contains("bias") && c["bias"] != "none") {
    return unimplemented(fmt::format("adapter_config.json: bias {} is not implemented (only \"none\")", c["bias"].dump()));
  }
  for (const char* key : {"modules_to_save", "rank_pattern", "alpha_pattern"}) {
    if (nonempty(key)) return unimplemented(fmt::format("adapter_config.json: '{}' is not implemented", key));
  }
  if (!c.contains("target_modules") || !c["target_modules"].is_array()) {
    return invalid_argument("adapter_config.json: 'target_modules' must be a list of module names");
  }
  for (const json& t : c["target_modules"]) {
    if (!t.is_string()) return invalid_argument("adapter_config.json: 'target_modules' must be a list of strings");
    p.targets.insert(t.get<std::string>());
  }
  return p;
}

std::string_view strip(std::string_view s, std::string_view suffix) { return s.substr(0, s.size() - suffix.size()); }

// The GGUF name of the base weight that the directory's module path `module`
// ("model.layers.3.self_attn.q_proj") adapts, and the heads of its rotary rows (0: none).
Result<std::pair<std::string, int>> target_of(std::string_view module, const HfPlan& plan) {
  const std::string prefix = hf_layer_prefix(plan);
  if (module.substr(0, prefix.size()) == prefix) {
    const std::string_view rest = module.substr(prefix.size());
    const size_t dot = rest.find('.');
    const std::string layer(rest.substr(0, dot));
    if (dot != std::string_view::npos && !layer.empty() && layer.find_first_not_of("0123456789") == std::string::npos &&
        std::stoll(layer) < plan.n_layer) {
      const std::string weight = std::string(rest.substr(dot + 1)) + ".weight";
      const std::string_view gguf = find_name(hf_layer_names(plan), weight, false);
      if (!gguf.empty()) {
        int heads = 0;
        if (plan.permute_qk && gguf == "attn_q.weight") heads = plan.n_head;
        if (plan.permute_qk && gguf == "attn_k.weight") heads = plan.n_head_kv;
        return std::pair<std::string, int>{fmt::format("blk.{}.{}", layer, gguf), heads};
      }
    }
  }
  return invalid_argument(fmt::format("no weight of the base ({}) is called '{}'", plan.hf_arch, module));
}

Result<std::vector<float>> floats_of(const SafetensorsTensor& t, int64_t rows, int64_t cols) {
  if (!t.dtype.has_value()) return unimplemented(fmt::format("tensor '{}' is {}, not F32, F16 or BF16", t.name, t.dtype_name));
  if (t.shape.size() != 2 || t.shape[0] != rows || t.shape[1] != cols) {
    return invalid_argument(fmt::format("tensor '{}' is {}, expected [{}, {}]", t.name, t.shape_string(), rows, cols));
  }
  std::vector<float> v(static_cast<size_t>(rows * cols));
  dequantize_row(*t.dtype, t.data, v.data(), rows * cols);
  return v;
}

Result<LoraFile> read_peft(const std::string& dir, const GgufFile& base) {
  LLMS_ASSIGN_OR_RETURN(PeftConfig config, read_config(dir));
  json base_config;
  LLMS_ASSIGN_OR_RETURN(HfPlan plan, hf_plan_of(base, base_config));
  const fs::path weights = fs::path(dir) / "adapter_model.safetensors";
  if (!fs::exists(weights) && fs::exists(fs::path(dir) / "adapter_model.bin")) {
    return unimplemented("adapter_model.bin is a PyTorch pickle (never unpickled here); save the adapter with "
                         "safe_serialization=True to get adapter_model.safetensors");
  }
  LLMS_ASSIGN_OR_RETURN(SafetensorsFile st, SafetensorsFile::open(weights.string()));
  LoraFile lora;
  lora.path = dir;
  lora.format = "peft";
  lora.arch = plan.arch;
  lora.alpha = config.alpha;
  lora.rslora = config.rslora;
  for (const SafetensorsTensor& ta : st.tensors()) {
    std::string_view name = ta.name;
    if (name.substr(0, kPeftPrefix.size()) != kPeftPrefix) {
      return invalid_argument(fmt::format("tensor '{}' does not start with '{}'", ta.name, kPeftPrefix));
    }
    name.remove_prefix(kPeftPrefix.size());
    const bool is_a = name.ends_with(kSuffixA);
    if (!is_a && !name.ends_with(kSuffixB)) {
      return invalid_argument(fmt::format("tensor '{}' is neither a lora_A nor a lora_B weight", ta.name));
    }
    if (!is_a) continue;  // read with its A
    const std::string_view module = strip(name, kSuffixA);
    const std::string module_name(module.substr(module.rfind('.') + 1));
    if (!config.targets.contains(module_name)) {
      return invalid_argument(fmt::format("tensor '{}' adapts '{}', which is not in target_modules", ta.name, module_name));
    }
    LLMS_ASSIGN_OR_RETURN(auto target, target_of(module, plan));
    const std::string b_name = std::string(kPeftPrefix) + std::string(module) + std::string(kSuffixB);
    const SafetensorsTensor* tb = st.find(b_name);
    if (tb == nullptr) return invalid_argument(fmt::format("'{}' has no '{}'", ta.name, b_name));
    if (ta.shape.size() != 2 || tb->shape.size() != 2) {
      return invalid_argument(fmt::format("'{}' and its lora_B must be matrices", ta.name));
    }
    LoraMatrix m;
    m.target = target.first;
    m.rank = config.r, m.cols = ta.shape[1], m.rows = tb->shape[0];
    LLMS_ASSIGN_OR_RETURN(m.a, floats_of(ta, m.rank, m.cols));
    LLMS_ASSIGN_OR_RETURN(m.b, floats_of(*tb, m.rows, m.rank));
    if (target.second > 0) {
      if (m.rows % (2 * target.second) != 0) {
        return invalid_argument(fmt::format("'{}': {} rows do not split into {} rotary heads", b_name, m.rows, target.second));
      }
      std::vector<float> permuted(m.b.size());
      permute_rotary_rows(reinterpret_cast<const uint8_t*>(m.b.data()), reinterpret_cast<uint8_t*>(permuted.data()),
                          m.rows, m.rank * 4, target.second, false);
      m.b = std::move(permuted);
    }
    lora.matrices.push_back(std::move(m));
  }
  if (lora.matrices.empty()) return invalid_argument("the adapter has no lora_A/lora_B tensors");
  // Every B was read with its A: a B without one is an orphan.
  if (st.tensors().size() != 2 * lora.matrices.size()) return invalid_argument("a lora_B weight has no lora_A");
  return lora;
}

}  // namespace

Result<LoraFile> read_lora_peft(const std::string& dir, const GgufFile& base) {
  auto lora = read_peft(dir, base);
  if (!lora.ok()) return lora.status().with_context(dir);
  return lora;
}

Status write_lora_peft(const LoraFile& lora, const GgufFile& base, DType type, const std::string& dir) {
  if (safetensors_dtype_name(type).empty()) return invalid_argument("PEFT adapters are written as F32, F16 or BF16");
  json base_config;
  LLMS_ASSIGN_OR_RETURN(HfPlan plan, hf_plan_of(base, base_config));
  std::vector<SafetensorsOutput> out;
  std::set<std::string> modules;
  int64_t rank = 0;
  for (const LoraMatrix& m : lora.matrices) {
    const size_t dot = m.target.find('.', 4);
    const std::string layer = m.target.substr(4, dot - 4), suffix = m.target.substr(dot + 1);
    const std::string hf(find_name(hf_layer_names(plan), suffix, true));
    if (m.target.rfind("blk.", 0) != 0 || hf.empty()) return unimplemented("no PEFT name for " + m.target);
    if (rank != 0 && m.rank != rank) return unimplemented("a PEFT directory here has one rank for every matrix");
    rank = m.rank;
    const std::string module = fmt::format("{}{}{}.{}", kPeftPrefix, hf_layer_prefix(plan), layer, strip(hf, ".weight"));
    modules.insert(std::string(strip(hf, ".weight").substr(strip(hf, ".weight").rfind('.') + 1)));
    const int heads = !plan.permute_qk ? 0 : suffix == "attn_q.weight" ? plan.n_head : suffix == "attn_k.weight" ? plan.n_head_kv : 0;
    out.push_back({module + std::string(kSuffixA), type, {m.rank, m.cols}, [&m, type](std::span<uint8_t> o) {
                     quantize_row(type, m.a.data(), o.data(), static_cast<int64_t>(m.a.size()));
                   }});
    out.push_back({module + std::string(kSuffixB), type, {m.rows, m.rank}, [&m, type, heads](std::span<uint8_t> o) {
                     std::vector<float> b = m.b;
                     if (heads > 0) {
                       permute_rotary_rows(reinterpret_cast<const uint8_t*>(m.b.data()),
                                           reinterpret_cast<uint8_t*>(b.data()), m.rows, m.rank * 4, heads, true);
                     }
                     quantize_row(type, b.data(), o.data(), static_cast<int64_t>(b.size()));
                   }});
  }
  const json config = {{"peft_type", "LORA"},          {"task_type", "CAUSAL_LM"},   {"r", rank},
                       {"lora_alpha", lora.alpha},     {"use_rslora", lora.rslora}, {"target_modules", modules},
                       {"bias", "none"},               {"fan_in_fan_out", false},    {"lora_dropout", 0.0},
                       {"base_model_name_or_path", ""}};
  std::error_code ec;
  fs::create_directories(dir, ec);
  std::ofstream cfg(fs::path(dir) / "adapter_config.json");
  cfg << config.dump(2) << "\n";
  if (!cfg) return internal_error("cannot write " + (fs::path(dir) / "adapter_config.json").string());
  return write_safetensors((fs::path(dir) / "adapter_model.safetensors").string(), std::move(out));
}

}  // namespace llms
