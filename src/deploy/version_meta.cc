#include "deploy/version_meta.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace llms {
namespace {

Result<DType> kv_type(const toml::node& n, const std::string& key, const std::string& origin) {
  const auto s = n.value<std::string>();
  const auto t = s ? dtype_from_name(*s) : std::nullopt;
  if (!t || (*t != DType::kF32 && *t != DType::kF16 && *t != DType::kBF16 && *t != DType::kQ8_0 && *t != DType::kQ4_0)) {
    return invalid_argument(fmt::format("{}: {} must be a KV cache type (f32, f16, bf16, q8_0, q4_0)", origin, key));
  }
  return *t;
}

Result<double> number(const toml::node& n, const std::string& key, const std::string& origin, double lo, double hi) {
  const auto v = n.value<double>();
  if (!v || !(*v >= lo && *v <= hi)) return invalid_argument(fmt::format("{}: {} must be a number in [{}, {}]", origin, key, lo, hi));
  return *v;
}

}  // namespace

Result<VersionMeta> parse_version_meta(const std::string& text, const std::string& origin) {
  toml::table t;
  try {
    t = toml::parse(text, origin);
  } catch (const toml::parse_error& e) {
    return invalid_argument(fmt::format("{}:{}: {}", origin, e.source().begin.line, e.description()));
  }
  VersionMeta m;
  for (const auto& [k, node] : t) {
    const std::string key(k.str());
    if (key == "notes") {
      if (!node.is_string()) return invalid_argument(fmt::format("{}: notes must be a string", origin));
      m.notes = *node.value<std::string>();
    } else if (key == "gate_max_kl") {
      LLMS_ASSIGN_OR_RETURN(m.gate_max_kl, number(node, key, origin, 0, 1e9));
    } else if (key == "gate_min_top1") {
      LLMS_ASSIGN_OR_RETURN(m.gate_min_top1, number(node, key, origin, 0, 1));
    } else if (key == "kv_type") {
      LLMS_ASSIGN_OR_RETURN(m.k_type, kv_type(node, key, origin));
      m.v_type = m.k_type;
    } else if (key == "kv_k_type") {
      LLMS_ASSIGN_OR_RETURN(m.k_type, kv_type(node, key, origin));
    } else if (key == "kv_v_type") {
      LLMS_ASSIGN_OR_RETURN(m.v_type, kv_type(node, key, origin));
    } else {
      return invalid_argument(fmt::format("{}: unknown key '{}' (notes, gate_max_kl, gate_min_top1, kv_type, kv_k_type, "
                                          "kv_v_type)",
                                          origin, key));
    }
  }
  return m;
}

Result<VersionMeta> read_version_meta(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return VersionMeta{};
  std::ifstream in(path);
  if (!in) return not_found(fmt::format("cannot read {}", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_version_meta(ss.str(), path);
}

}  // namespace llms
