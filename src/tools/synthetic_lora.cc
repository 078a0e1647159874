#include "tools/synthetic_lora.h"

#include <fmt/format.h>

#include "base/hash.h"
#include "base/random.h"

namespace llms {

Result<LoraFile> make_synthetic_lora(const GgufFile& base, const SyntheticLoraSpec& spec) {
  if (spec.rank <= 0) return invalid_argument("the adapter's rank must be positive");
  static const std::vector<std::string> kAll = {"attn_q", "attn_k", "attn_v", "attn_output",
                                                "ffn_gate", "ffn_up", "ffn_down"};
  const std::vector<std::string>& targets = spec.targets.empty() ? kAll : spec.targets;
  LoraFile lora;
  lora.format = "gguf";
  LLMS_ASSIGN_OR_RETURN(lora.arch, base.get_string("general.architecture"));
  LLMS_ASSIGN_OR_RETURN(uint64_t n_layer, base.get_uint(lora.arch + ".block_count"));
  lora.alpha = spec.alpha;
  for (uint64_t l = 0; l < n_layer; ++l) {
    for (const std::string& t : targets) {
      const std::string name = fmt::format("blk.{}.{}.weight", l, t);
      const GgufTensorInfo* w = base.find_tensor(name);
      if (w == nullptr) {
        if (spec.targets.empty()) continue;
        return not_found(fmt::format("the base model has no tensor '{}'", name));
      }
      LoraMatrix m;
      m.target = name;
      m.rank = spec.rank, m.cols = w->ne[0], m.rows = w->ne[1];
      Rng rng(spec.seed ^ hash64(name.data(), name.size()));
      m.a.resize(static_cast<size_t>(m.rank * m.cols));
      m.b.resize(static_cast<size_t>(m.rows * m.rank));
      for (float& v : m.a) v = spec.std_dev * static_cast<float>(rng.normal());
      for (float& v : m.b) v = spec.std_dev * static_cast<float>(rng.normal());
      lora.matrices.push_back(std::move(m));
    }
  }
  if (lora.matrices.empty()) return invalid_argument("the base model has none of the adapter's target matrices");
  return lora;
}

}  // namespace llms
